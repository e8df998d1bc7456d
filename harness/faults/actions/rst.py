"""``rst``: abort the connection (SO_LINGER 0), so the peer sees ECONNRESET."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from harness.faults.base import Action, Site, register


@register
@dataclass(frozen=True)
class Rst(Action):
    """Abort the connection with SO_LINGER 0, so the peer sees ECONNRESET."""

    name: ClassVar[str] = "rst"

    async def fire(self, site: Site) -> None:
        site.conn.reset("rst")
