"""``slow``: delay every following event or byte by ``delay_s`` (not terminal)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from harness.faults.base import Action, Site, check_choice, check_duration, register


@register
@dataclass(frozen=True)
class Slow(Action):
    """Delay every following event (``per="event"``) or byte (``per="byte"``) by
    ``delay_s``. Not terminal: the response completes, just late."""

    name: ClassVar[str] = "slow"
    phases: ClassVar[tuple[str, ...]] = ("headers", "event", "bytes")
    terminal: ClassVar[bool] = False
    delay_s: float = 0.1
    per: str = "event"

    def __post_init__(self) -> None:
        check_duration("delay_s", self.delay_s, optional=False)
        check_choice("per", self.per, ("event", "byte"))

    def paced_s(self, units: int, body_bytes: int) -> float:
        return self.delay_s * (body_bytes if self.per == "byte" else units)

    async def fire(self, site: Site) -> None:
        if self.per == "byte":
            site.slow_bytes(self.delay_s)
        else:
            site.slow_events(self.delay_s)
