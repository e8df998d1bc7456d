"""``duplicate_event``: send one event twice."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from harness.faults.base import ContentEdit, Site, register
from harness.faults.units import Unit, index_of


@register
@dataclass(frozen=True)
class DuplicateEvent(ContentEdit):
    """Send counted unit N twice in a row (the copy is not counted), as a retrying
    proxy that replays a chunk does."""

    name: ClassVar[str] = "duplicate_event"

    def edit_units(self, units: list[Unit], n: int, plan: Any) -> list[Unit]:
        i = index_of(units, n)
        if i >= len(units):
            return list(units)
        return units[: i + 1] + [(units[i][0], False)] + units[i + 1 :]

    async def fire(self, site: Site) -> None:
        return None
