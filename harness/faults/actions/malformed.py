"""``malformed``: one data line of broken JSON before counted unit N (not terminal)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from harness.faults.base import EventEdit, FaultSpecError, Site, register


@register
@dataclass(frozen=True)
class Malformed(EventEdit):
    """Send one ``data:`` line of broken JSON before counted unit N, then continue the
    stream. The inserted unit is not counted."""

    name: ClassVar[str] = "malformed"
    corrupting: ClassVar[bool] = True
    payload: str = '{"id": "chatcmpl-broken", "choices": [{"delta": {"content": "x"'

    def __post_init__(self) -> None:
        if not isinstance(self.payload, str) or "\n" in self.payload:
            raise FaultSpecError("payload", self.payload, "one line of text")

    def edit_units(
        self, units: list[tuple[bytes, bool]], n: int, plan: Any
    ) -> list[tuple[bytes, bool]]:
        units = list(units)
        units.insert(min(n, len(units)), (plan.malformed(self.payload), False))
        return units

    async def fire(self, site: Site) -> None:
        return None  # the insert is the whole fault; the writer records it as it goes
