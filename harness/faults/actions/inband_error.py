"""``inband_error``: an error event inside a 200 stream, then the body ends."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from harness.faults.base import Action, FaultSpecError, Site, check_choice, register
from harness.faults.units import Unit, index_of

KINDS = ("overloaded", "rate_limit", "server_error")


@register
@dataclass(frozen=True)
class InbandError(Action):
    """After N counted units, send the API's in-band error and end the body cleanly:
    Anthropic ``event: error`` (``overloaded_error``, ``rate_limit_error``,
    ``api_error``), Responses ``response.failed``, and on chat the ``{"error": {...}}``
    data chunk OpenAI-compatible aggregators send. ``kind`` picks the error."""

    name: ClassVar[str] = "inband_error"
    phases: ClassVar[tuple[str, ...]] = ("event",)
    fires_at_end: ClassVar[bool] = True
    kind: str = "overloaded"
    message: str = "injected in-band error"

    def __post_init__(self) -> None:
        check_choice("kind", self.kind, KINDS)
        if not isinstance(self.message, str) or "\n" in self.message:
            raise FaultSpecError("message", self.message, "one line of text")

    def edit_units(self, units: list[Unit], n: int, plan: Any) -> list[Unit]:
        if not plan.stream:
            return list(units)
        return units[: index_of(units, n)] + [(plan.error_event(self.kind, self.message), False)]

    async def fire(self, site: Site) -> None:
        await site.end_body()
