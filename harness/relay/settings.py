"""How a relay behaves: :class:`RelaySettings`, validated eagerly, from a scenario table.

Not here: what each mode does (``harness.relay.modes``) or the relay itself.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.faults import FaultSpecError
from harness.relay.modes import MODES

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT_S",
    "DEFAULT_IDLE_CUT_S",
    "DEFAULT_MAX_SAMPLES",
    "DEFAULT_READY_TIMEOUT_S",
    "DEFAULT_SAMPLE_INTERVAL_S",
    "RelaySettings",
    "relay_settings_from_dict",
]

DEFAULT_IDLE_CUT_S = 5.0
DEFAULT_SAMPLE_INTERVAL_S = 0.25
DEFAULT_MAX_SAMPLES = 400
DEFAULT_CONNECT_TIMEOUT_S = 5.0
DEFAULT_READY_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class RelaySettings:
    """How a relay behaves. Frozen, validated eagerly; durations in seconds."""

    mode: str = "pass"
    idle_cut_s: float = DEFAULT_IDLE_CUT_S
    idle_cut_rst: bool = False
    sample_interval_s: float = DEFAULT_SAMPLE_INTERVAL_S
    max_samples: int = DEFAULT_MAX_SAMPLES
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise FaultSpecError("relay.mode", self.mode, ", ".join(MODES))
        for name in ("idle_cut_s", "sample_interval_s", "connect_timeout_s"):
            value = getattr(self, name)
            ok = isinstance(value, int | float) and not isinstance(value, bool)
            if not (ok and math.isfinite(value) and value > 0):
                raise FaultSpecError(f"relay.{name}", value, "a finite number of seconds > 0")
        if not isinstance(self.idle_cut_rst, bool):
            raise FaultSpecError("relay.idle_cut_rst", self.idle_cut_rst, "true, false")
        if (
            not isinstance(self.max_samples, int)
            or isinstance(self.max_samples, bool)
            or self.max_samples < 1
        ):
            raise FaultSpecError("relay.max_samples", self.max_samples, "a whole number >= 1")

    def scaled(self, k: float) -> RelaySettings:
        """Scenario durations scaled by ``time_scale`` (sampling is not a scenario time)."""
        return dataclasses.replace(self, idle_cut_s=self.idle_cut_s * k)


def relay_settings_from_dict(
    data: Mapping[str, Any] | None, *, where: str = "relay"
) -> RelaySettings:
    """Build :class:`RelaySettings` from a scenario table (``{mode = "swallow_close"}``);
    errors name ``where.field`` and the allowed values."""
    if data is None:
        return RelaySettings()
    if not isinstance(data, Mapping):
        raise FaultSpecError(where, data, "a table with mode and its settings")
    allowed = [f.name for f in dataclasses.fields(RelaySettings)]
    for key in data:
        if key not in allowed:
            raise FaultSpecError(f"{where}.{key}", data[key], ", ".join(allowed))
    try:
        return RelaySettings(**dict(data))
    except FaultSpecError as exc:
        raise FaultSpecError(
            f"{where}.{exc.field.removeprefix('relay.')}", exc.value, exc.allowed
        ) from None
