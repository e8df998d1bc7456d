"""``drop_event``: leave one event out of the stream."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from harness.faults.base import ContentEdit, FaultSpecError, Site, register
from harness.faults.units import Unit, event_name, index_of


@register
@dataclass(frozen=True)
class DropEvent(ContentEdit):
    """Leave out counted unit N, or with ``type`` the first event at or after it of that
    type (``[DONE]``, ``response.completed``, ``message_stop``, ``message_delta``...;
    ``terminal``: the API's terminal event). The body ends normally otherwise."""

    name: ClassVar[str] = "drop_event"
    type: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.type, str):
            raise FaultSpecError("type", self.type, "an event type, terminal, or omitted")

    def edit_units(self, units: list[Unit], n: int, plan: Any) -> list[Unit]:
        start = index_of(units, n)
        for i in range(start, len(units)):
            if self._wanted(units, i, plan):
                return units[:i] + units[i + 1 :]
        return list(units)

    def _wanted(self, units: list[Unit], i: int, plan: Any) -> bool:
        if not self.type:
            return units[i][1]
        if self.type == "terminal":
            return i < len(plan.kinds) and plan.kinds[i] == "terminal"
        return event_name(units[i][0]) == self.type

    async def fire(self, site: Site) -> None:
        return None
