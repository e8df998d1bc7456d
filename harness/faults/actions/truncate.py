"""``truncate``: end the body cleanly here, without the terminal marker."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from harness.faults.base import Action, Site, register


@register
@dataclass(frozen=True)
class Truncate(Action):
    """End the body cleanly here, without finish_reason / ``[DONE]`` /
    ``response.completed``: a chunked body gets its ``0`` chunk, a Content-Length body
    declares only what is sent, a close-delimited one ends with FIN."""

    name: ClassVar[str] = "truncate"
    phases: ClassVar[tuple[str, ...]] = ("headers", "event", "bytes")
    ends_body_cleanly: ClassVar[bool] = True

    async def fire(self, site: Site) -> None:
        await site.end_body()
