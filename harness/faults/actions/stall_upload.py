"""``stall_upload``: stop reading the request body after ``after_bytes``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from harness.faults.base import Action, Site, check_count, check_duration, register


@register
@dataclass(frozen=True)
class StallUpload(Action):
    """Stop reading the request body after ``after_bytes`` for ``duration_s`` (None:
    forever), so the client blocks in send, not recv; then answer normally."""

    name: ClassVar[str] = "stall_upload"
    phases: ClassVar[tuple[str, ...]] = ("accept",)
    after_bytes: int = 0
    duration_s: float | None = None

    def __post_init__(self) -> None:
        check_count("after_bytes", self.after_bytes)
        check_duration("duration_s", self.duration_s, optional=True)

    async def before_body(self, site: Site) -> bool:
        site.record("fault", action=self.name, phase="accept", after_bytes=self.after_bytes)
        return False

    def upload_stall(self) -> tuple[int, float | None]:
        return self.after_bytes, self.duration_s

    async def after_body(self, site: Site) -> bool:
        return False  # the stall was the fault; the request is answered normally
