"""``drop_field``: remove one field from an event, the stream otherwise intact."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from harness.faults.base import ContentEdit, FaultSpecError, Site, register
from harness.faults.units import Unit, drop_key, index_of, load, rewrite


@register
@dataclass(frozen=True)
class DropField(ContentEdit):
    """Remove ``field`` (``finish_reason``, ``usage``, ``stop_reason``, ``id``, ...) from
    the first event at or after counted unit N where it has a value (searched
    depth-first; a null is not a value).
    Not terminal: every event is still sent."""

    name: ClassVar[str] = "drop_field"
    field: str = "finish_reason"

    def __post_init__(self) -> None:
        if not isinstance(self.field, str) or not self.field:
            raise FaultSpecError("field", self.field, "a JSON field name")

    def edit_units(self, units: list[Unit], n: int, plan: Any) -> list[Unit]:
        units = list(units)
        for i in range(index_of(units, n), len(units)):
            data, counted = units[i]
            doc = load(data)
            if doc is not None and drop_key(doc, self.field):
                units[i] = (rewrite(data, doc), counted)
                break
        return units

    async def fire(self, site: Site) -> None:
        return None  # the edit is the whole fault
