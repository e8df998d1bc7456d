"""``close_idle``: close a kept-alive connection after ``after_s`` idle."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from harness.faults.base import Action, FaultSpecError, Site, check_duration, register


@register
@dataclass(frozen=True)
class CloseIdle(Action):
    """Close a kept-alive connection (FIN, or RST with ``rst = true``) when no request
    arrives on it within ``after_s``."""

    name: ClassVar[str] = "close_idle"
    phases: ClassVar[tuple[str, ...]] = ("idle",)
    after_s: float = 0.0
    rst: bool = False

    def __post_init__(self) -> None:
        check_duration("after_s", self.after_s, optional=False)
        if not isinstance(self.rst, bool):
            raise FaultSpecError("rst", self.rst, "true, false")

    async def at_idle(self, site: Site) -> bool:
        conn = site.conn
        if await conn.wait_input(site.now() + self.after_s) and not conn.gone:
            return True
        if conn.gone:
            return False
        site.record("fault", action=self.name, phase="idle")
        if self.rst:
            conn.reset("close_idle")
        else:
            conn.half_close()
            conn.close("close_idle")
        return False
