"""``swap_events``: send two adjacent events in the wrong order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from harness.faults.base import ContentEdit, Site, register
from harness.faults.units import Unit, index_of


@register
@dataclass(frozen=True)
class SwapEvents(ContentEdit):
    """Send counted unit N+1 before counted unit N (both still counted)."""

    name: ClassVar[str] = "swap_events"
    edit_lookahead: ClassVar[int | None] = 1

    def edit_units(self, units: list[Unit], n: int, plan: Any) -> list[Unit]:
        i, j = index_of(units, n), index_of(units, n + 1)
        if j >= len(units):
            return list(units)
        units = list(units)
        units[i], units[j] = units[j], units[i]
        return units

    async def fire(self, site: Site) -> None:
        return None
