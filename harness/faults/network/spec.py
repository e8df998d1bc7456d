"""One validated ``[network]`` table: which backend sits between target and server.

Built by ``harness.network_spec.network_from_dict`` (the parser, beside the scenario
model); played by ``harness.netem.backends.network_backend``. Data only.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from harness.faults.base import FaultSpecError
from harness.faults.network.kernel import KernelSettings
from harness.faults.network.toxics import Toxic
from harness.faults.network.trigger import Trigger

__all__ = ["NETWORK_BACKENDS", "NetworkSpec"]

NETWORK_BACKENDS = ("server", "relay", "toxiproxy", "kernel")


@dataclass(frozen=True)
class NetworkSpec:
    """The validated ``[network]`` table. ``backend="server"``: no network fault."""

    backend: str = "server"
    #: ``harness.relay.RelaySettings`` (the relay validates its own settings)
    relay: Any = None
    relay_at: Trigger = Trigger()
    toxics: tuple[Toxic, ...] = ()
    kernel: KernelSettings | None = None

    def __post_init__(self) -> None:
        if self.backend not in NETWORK_BACKENDS:
            raise FaultSpecError("network.backend", self.backend, ", ".join(NETWORK_BACKENDS))

    def scaled(self, k: float) -> NetworkSpec:
        return dataclasses.replace(
            self,
            relay=self.relay.scaled(k) if self.relay else None,
            toxics=tuple(t.scaled(k) for t in self.toxics),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"backend": self.backend}
        if self.relay is not None:
            out["relay"] = dataclasses.asdict(self.relay)
            out["at"] = str(self.relay_at)
        if self.toxics:
            out["toxics"] = [t.to_dict() for t in self.toxics]
        if self.kernel is not None:
            out["kernel"] = {"cut_at": str(self.kernel.cut_at), "shape": self.kernel.shape}
        return out
