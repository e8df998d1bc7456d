"""``cut_tool_call``: end the body inside a tool call's arguments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from harness.faults.base import Action, Site, check_choice, register
from harness.faults.units import Unit, index_of
from harness.json_text import OPEN, JsonScan

ENDS = ("truncate", "fin", "rst")


@register
@dataclass(frozen=True)
class CutToolCall(Action):
    """End the body inside the first tool-call argument fragment at or after counted
    unit N: ``at = "string"`` (the arguments so far end inside a JSON string value),
    ``"json"`` (between JSON tokens) or ``"utf8"`` (the wire bytes stop inside a
    multi-byte character of the fragment's event). ``end`` is how the body ends:
    ``truncate`` (cleanly: the dangerous shape), ``fin`` or ``rst``. A reply without
    tool calls (a request that offers none, or an agent's call after a tool result:
    the model answers in text) has no call to cut: the fault does not fire there."""

    name: ClassVar[str] = "cut_tool_call"
    phases: ClassVar[tuple[str, ...]] = ("event",)
    fires_at_end: ClassVar[bool] = True
    edit_lookahead: ClassVar[int | None] = None  # needs the plan's tool-call fragments
    at: str = "string"
    end: str = "truncate"

    def __post_init__(self) -> None:
        check_choice("at", self.at, ("string", "json", "utf8"))
        check_choice("end", self.end, ENDS)

    def applies(self, plan: Any) -> bool:
        return int(getattr(plan, "tool_calls", 0) or 0) > 0

    def edit_units(self, units: list[Unit], n: int, plan: Any) -> list[Unit]:
        start = index_of(units, n)
        kinds = plan.kinds
        args = [i for i in range(start, len(units)) if i < len(kinds) and kinds[i] == "tool_args"]
        for i in args:
            cut = self._cut(units, i, plan)
            if cut is not None:
                return units[:i] + [cut]
        return units[:start]

    def _cut(self, units: list[Unit], i: int, plan: Any) -> Unit | None:
        call, fragment, _head, _tail = plan.fragments[i]
        if self.at == "utf8":
            data = units[i][0]
            lead = next((p for p, b in enumerate(data) if b >= 0xC0), None)
            return None if lead is None else (data[: lead + 1], False)
        before = "".join(
            f for j, (c, f, _h, _t) in sorted(plan.fragments.items()) if j < i and c == call
        )
        spots = [p for p in range(1, len(fragment)) if _fits(before + fragment[:p], self.at)]
        if not spots:
            return None
        return plan.with_fragment(i, fragment[: spots[len(spots) // 2]]), True

    async def fire(self, site: Site) -> None:
        if self.end == "truncate":
            await site.end_body()
        elif self.end == "fin":
            site.conn.half_close()
            site.conn.close(self.name)
        else:
            site.conn.reset(self.name)


def _fits(prefix: str, at: str) -> bool:
    """Does JSON text ``prefix`` end inside a string value (``string``) or between
    tokens of an unfinished document (``json``)?"""
    scan, is_value, last = JsonScan(), False, ""
    for ch in prefix:
        if scan.step(ch) == OPEN:
            is_value = last == ":"
        if not ch.isspace():
            last = ch
    if at == "string":
        return scan.in_string and is_value and not scan.escaped and prefix[-1] != '"'
    return not scan.in_string and prefix.rstrip()[-1:] in (",", ":", "{")
