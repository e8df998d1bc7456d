"""``comment``: provider "processing" comment lines inside the stream (not terminal)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from harness.faults.base import EventEdit, FaultSpecError, Site, check_count, register
from harness.faults.units import Unit, index_of


@register
@dataclass(frozen=True)
class Comment(EventEdit):
    """Insert ``count`` SSE comment lines ``: text`` before counted unit N (OpenRouter
    sends ``: OPENROUTER PROCESSING`` while a model warms up). Never counted."""

    name: ClassVar[str] = "comment"
    text: str = "OPENROUTER PROCESSING"
    count: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.text, str) or "\n" in self.text or "\r" in self.text:
            raise FaultSpecError("text", self.text, "one line of text")
        check_count("count", self.count, low=1)
        if self.count > 10_000:
            raise FaultSpecError("count", self.count, "a whole number 1..10000")

    def edit_units(self, units: list[Unit], n: int, plan: Any) -> list[Unit]:
        if not plan.stream:
            return list(units)
        i = index_of(units, n)
        return units[:i] + [(plan.comment(self.text), False)] * self.count + units[i:]

    async def fire(self, site: Site) -> None:
        return None
