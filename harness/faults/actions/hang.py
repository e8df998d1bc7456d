"""``hang``: hold the socket open and silent; ``duration_s`` (None: until the peer goes)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from harness.faults.base import Action, Site, check_duration, register


@register
@dataclass(frozen=True)
class Hang(Action):
    """Hold the socket open and silent for ``duration_s`` (None: until the peer closes),
    reading and discarding whatever the peer sends; then close with FIN."""

    name: ClassVar[str] = "hang"
    duration_s: float | None = None

    def __post_init__(self) -> None:
        check_duration("duration_s", self.duration_s, optional=True)

    def silent_peer(self) -> bool:
        return self.duration_s is None  # held until the peer goes: silent as a dead peer

    async def fire(self, site: Site) -> None:
        deadline = None if self.duration_s is None else site.now() + self.duration_s
        gone = await site.conn.wait_gone(deadline)
        site.conn.close("peer gone" if gone else "hang ended")
