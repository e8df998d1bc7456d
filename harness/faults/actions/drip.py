"""``drip``: keep-alive units every ``interval_s``, never content."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from harness.faults.base import Action, FaultSpecError, Site, check_duration, register


@register
@dataclass(frozen=True)
class Drip(Action):
    """Send a keep-alive unit every ``interval_s`` (an SSE ``: comment``; an ``event:
    ping`` on the messages API; a JSON-legal space in a non-streamed body) and never any
    content; after ``duration_s`` close with FIN (None: forever)."""

    name: ClassVar[str] = "drip"
    phases: ClassVar[tuple[str, ...]] = ("headers", "event", "bytes")
    interval_s: float = 1.0
    duration_s: float | None = None
    comment: str = "keepalive"

    def __post_init__(self) -> None:
        check_duration("interval_s", self.interval_s, optional=False, positive=True)
        check_duration("duration_s", self.duration_s, optional=True)
        if not isinstance(self.comment, str) or "\n" in self.comment or "\r" in self.comment:
            raise FaultSpecError("comment", self.comment, "one line of text")

    async def fire(self, site: Site) -> None:
        unit = site.keepalive_unit(self.comment)
        conn = site.conn
        start = site.now()
        end = None if self.duration_s is None else start + self.duration_s
        for i in range(1, 1 << 62):  # bounded by duration_s or by the peer leaving
            due = start + i * self.interval_s
            if end is not None and due > end:
                if await conn.sleep_until(end):
                    conn.close("drip ended")
                return
            if not await conn.sleep_until(due):
                return
            await site.write_keepalive(unit, due)
