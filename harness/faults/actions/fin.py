"""``fin``: close the connection (FIN) wherever the response is."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from harness.faults.base import Action, Site, register


@register
@dataclass(frozen=True)
class Fin(Action):
    """Close the connection with a FIN (buffered bytes first), wherever the response is."""

    name: ClassVar[str] = "fin"

    async def fire(self, site: Site) -> None:
        site.conn.half_close()
        site.conn.close("fin")
