"""Payload faults on a stream that comes from elsewhere (a live upstream, a cassette).

A payload action (one that overrides ``Action.edit_units``: ``drop_event``,
``drop_field``, ``duplicate_event``, ``swap_events``, ``inband_error``, ``comment``,
``malformed``) edits the reply's SSE units. On the fault server the whole reply is
known before the first byte; here it arrives chunk by chunk, so :class:`UnitEditor`
applies the action's own hook to a sliding window of the units from counted unit N on:

* the bytes before unit N pass through untouched (chunk for chunk);
* from N on, each completed event is one unit; the window holds as few units as the
  action needs (``Action.edit_lookahead``: 0, or 1 for ``swap_events``) and the hook
  runs on it (``n = 0``) each time a unit arrives. The first time the hook changes the
  window, its result is sent and the edit is done: every later byte passes through
  untouched, or, for an action whose body ends where its edit stops
  (``fires_at_end``: ``inband_error``), the stream ends there and the action fires.
  While the hook leaves the window as it is, its oldest unit is released.

So an edit sees the events it needs and nothing later: a live stream is delayed by at
most ``edit_lookahead`` events. An action whose edit needs the reply plan's structure
(``edit_lookahead = None``: ``cut_tool_call`` needs the tool-call argument fragments)
cannot apply here; :func:`check_script` rejects it when the script is loaded.

Units are split with the project's SSE decoder (:class:`~harness.record.cursor.StreamCursor`):
a comment block belongs to the event after it; bytes after the last event are one
uncounted unit at the end. The plan the hooks see is ``apis.edit_plan`` for the API of
the request path (chat when unknown), with ``terminal`` marking the API's terminal
events (``[DONE]``, ``response.completed``, ``message_stop``).
"""

from __future__ import annotations

from typing import Any

from harness.apis import TERMINAL_MARKERS
from harness.faults import Action, FaultScript, FaultSpecError, Phase
from harness.faults.units import Unit, event_name
from harness.record.cursor import StreamCursor
from harness.server.apis import edit_plan

__all__ = ["UnitEditor", "check_script", "is_payload"]

#: What each API names its end marker (``event_name`` of a unit): the units never moved.
_TERMINAL_NAMES = frozenset(TERMINAL_MARKERS.values())
_NEVER = Phase("event", 1 << 62)  # a cursor phase that never fires: exact event ends


def is_payload(action: Action) -> bool:
    """Does ``action`` edit the reply's units (rather than act on the connection)?"""
    return type(action).edit_units is not Action.edit_units


def check_script(script: FaultScript) -> None:
    """Reject the rules whose action cannot apply to a proxied or recorded stream."""
    for i, rule in enumerate(script.rules):
        action = rule.fault.action
        if is_payload(action) and action.edit_lookahead is None:
            raise FaultSpecError(
                f"rules[{i}].fault.action",
                action.name,
                "an action that applies to a proxied or recorded stream (this one needs "
                "the fault server's own reply plan: use it with `harness serve` "
                "without --cassette)",
            )


class UnitEditor:
    """Applies one payload action to the units of a stream from counted unit N on."""

    def __init__(self, action: Action, *, api: str | None, stream: bool) -> None:
        if action.edit_lookahead is None:
            raise FaultSpecError("action", action.name, "see harness.record.edits")
        self.action = action
        self.api = api if api is not None else "chat"
        self.stream = stream
        self.lookahead = action.edit_lookahead
        self.held: list[Unit] = []
        self.done = False
        #: the edit ended the body (``fires_at_end``): nothing more is to be sent
        self.ended = False
        self._cursor = StreamCursor(_NEVER)
        self._rest = b""

    def start(self) -> list[Unit]:
        """The edit of no units yet (an insert before unit N applies at once)."""
        return self._try(final=False)

    def feed(self, data: bytes) -> list[Unit]:
        """The units to send now, given the next body bytes."""
        if self.done:
            return [(data, False)] if data and not self.ended else []
        out: list[Unit] = []
        pos = 0
        for end in self._cursor.feed(data).event_ends:
            self.held.append((self._rest + data[pos:end], True))
            self._rest, pos = b"", end
            out += self._try(final=False)
            if self.done:  # what follows in this chunk is past the edit
                out += self.feed(data[pos:])
                return out
        self._rest += data[pos:]
        return out

    def finish(self) -> list[Unit]:
        """The stream ended: the edit of what is held (and of any unfinished tail)."""
        if self.done:
            return []
        if self._rest:
            self.held.append((self._rest, False))
            self._rest = b""
        return self._try(final=True)

    def _try(self, *, final: bool) -> list[Unit]:
        held = self.held
        out = self.action.edit_units(list(held), 0, self._plan(held))
        # identity, not equality: swapping two equal events is still the edit
        changed = len(out) != len(held) or any(a is not b for a, b in zip(out, held, strict=True))
        if changed or final:
            self.held, self.done = [], True
            self.ended = self.action.fires_at_end
            return out
        if len(held) > self.lookahead:
            return [held.pop(0)]
        return []

    def _plan(self, units: list[Unit]) -> Any:
        kinds = tuple("terminal" if event_name(u) in _TERMINAL_NAMES else "" for u, _ in units)
        newline = b"\r\n" if any(b"\r\n" in u for u, _ in units) else b"\n"
        return edit_plan(self.api, stream=self.stream, kinds=kinds, newline=newline)
