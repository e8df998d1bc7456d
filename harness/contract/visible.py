"""Can a client see a content edit? ``honest_reply`` asks only for what it can.

A payload fault (``duplicate_event``, ``drop_event``, ``swap_events``, ``drop_field``)
changes what a well-formed stream says. This module plays each edit rule's own
``edit_units`` over the reply the server plans and reads both streams back with the
API's own fold (text, reasoning aside, and each tool call's arguments):

- the edit changes nothing the answer carries (a ``finish_reason`` dropped, a text delta
  duplicated where ``response.completed`` restates the answer): a client must return the
  whole answer; judged as usual;
- the edit leaves a stream the fold refuses, or arguments that are not a JSON object:
  a client can see it; judged as usual;
- the edit leaves another answer that reads as whole (a chat or Messages text delta
  duplicated, dropped or swapped; a fragment inside a JSON string value duplicated):
  no client can tell it from what the model meant, so ``honest_reply`` does not fail a
  changed text, nor a shorter one unless the script also cuts some stream
  (:attr:`Contract.edit_excuses`).

A body edited whole (no stream) shows its broken structure: judged as usual.

Pure: the reply plan, the action's ``edit_units`` and the API's fold, no sockets.

Not here: the check (``harness.contract.checks.honest_reply``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, NoReturn

from harness.apis import api_for
from harness.replies import arguments_object
from harness.scenario_pace import reply_plan
from harness.sse import Event, SSEDecoder

if TYPE_CHECKING:
    from harness.scenario import Scenario

__all__ = ["edit_excuses"]


class _Unreadable(Exception):
    """The edited stream is not one a reader can take as whole: the edit shows."""


def edit_excuses(scenario: Scenario) -> tuple[str, ...]:
    """The dishonest outcomes an edit no client can see explains (empty: every edit of
    the script shows, or changes nothing). The first matching rule wins, so an edited
    request is never also cut: where one of the script's edits is invisible, it may be
    the answer that comes back (a changed text, or a shorter one where the edit dropped
    the last delta); where the script also cuts some stream, a shorter text is that cut
    and no edit excuses it."""
    rules = scenario.script.rules
    edits = [r for r in rules if r.fault.action.alters_content]
    if not edits or not scenario.stream:
        return ()
    plan = reply_plan(scenario)
    healthy = _read(scenario.api, _units(plan))
    if all(_shows(scenario.api, rule, plan, healthy) for rule in edits):
        return ()
    cuts = any(r.fault.action.terminal and r.fault.action.applies(plan) for r in rules)
    return ("wrong_content",) if cuts else ("truncated_as_complete", "wrong_content")


def _units(plan: Any) -> list[tuple[bytes, bool]]:
    kinds = plan.kinds or ("",) * len(plan.units)
    return [(u, k != "comment") for u, k in zip(plan.units, kinds, strict=True)]


def _shows(api: str, rule: Any, plan: Any, healthy: tuple | None) -> bool:
    """Does a client see this edit: it changes nothing of the answer, or leaves what no
    reader takes as whole?"""
    edited = rule.fault.action.edit_units(_units(plan), rule.fault.phase.n or 0, plan)
    answer = _read(api, edited)
    return answer is None or answer == healthy


def _read(api: str, units: list[tuple[bytes, bool]]) -> tuple | None:
    """(text, each tool call's arguments) as the API's fold reads ``units``; None when
    it refuses them or an argument is not a JSON object."""
    sink = _Answer()
    fold = api_for(api).fold
    try:
        for item in SSEDecoder().feed(b"".join(u for u, _ in units)):
            if isinstance(item, Event):
                fold(item.event or "", item.data, sink)
        return sink.answer()
    except _Unreadable:
        return None


class _Answer:
    """A sink that keeps the answer's text and tool-call arguments (the API's fold
    writes into it)."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.parts: dict[Any, list[str]] = {}
        self.final: dict[Any, str] = {}

    def answer(self) -> tuple[str, tuple[Any, ...]]:
        calls = []
        for key in sorted(self.parts.keys() | self.final.keys(), key=str):
            raw = self.final.get(key, "".join(self.parts.get(key, ())))
            args = arguments_object(raw)
            if args is None:
                raise _Unreadable(f"tool call {key!r}: arguments are not a JSON object")
            calls.append(json.dumps(args, sort_keys=True))
        return "".join(self.text), tuple(calls)

    def json(self, data: str) -> dict[str, Any]:
        try:
            doc = json.loads(data)
        except ValueError as exc:
            raise _Unreadable(str(exc)) from None
        if not isinstance(doc, dict):
            raise _Unreadable("not an object")
        return doc

    def tool(self, key: Any, **piece: Any) -> None:
        args, final = piece.get("arguments"), piece.get("final")
        self.parts.setdefault(key, [])
        if isinstance(args, str) and args:
            self.parts[key].append(args)
        if isinstance(final, str):
            self.final[key] = final

    def has_tool(self, key: Any) -> bool:
        return key in self.parts or key in self.final

    def add_text(self, text: str) -> None:
        self.text.append(text)

    def replace_text(self, text: str) -> None:
        self.text[:] = [text]

    def add_reasoning(self, text: str) -> None:
        """Reasoning is not the answer a reply is judged on."""

    def finish(self, reason: str | None) -> None:
        """The finish reason is not the answer's content."""

    def end(self) -> None:
        """The terminal marker is not the answer's content."""

    def error(self, err: Any) -> NoReturn:
        raise _Unreadable(f"in-band error: {err}")

    def malformed(self, message: str) -> NoReturn:
        raise _Unreadable(message)
