"""``half_close``: shut down the write side; keep reading until the peer closes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from harness.faults.base import Action, Site, register


@register
@dataclass(frozen=True)
class HalfClose(Action):
    """Shut down the write side (FIN) but keep reading until the peer closes."""

    name: ClassVar[str] = "half_close"

    async def fire(self, site: Site) -> None:
        site.conn.half_close()
        await site.conn.wait_gone(None)
        site.conn.close("peer gone")
