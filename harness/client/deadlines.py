"""The deadline state of one call: pure, clock-free, shared by the sync and async clients.

:class:`DeadlineState` is fed events with the time they happened (``start_attempt``,
``first_byte``, ``content``, ``comment``, ``done``) and answers one question: *which
deadline fires next, and when* (:meth:`DeadlineState.next_deadline`). It never reads a
clock, sleeps or raises a timeout itself; ``watchdog.py`` enforces what it answers, with
a condition-wait thread (sync) or a loop timer (async), both aborting the socket.

The four deadlines (names are the :class:`ClientSettings` fields)::

    first_byte_s    attempt start + first_byte_s, until the first activity arrives
    stream_idle_s   last activity + stream_idle_s, once the first activity arrived
    stale_call_s    last content (or attempt start) + stale_call_s; comments never count
    hard_ceiling_s  call start + hard_ceiling_s, over every attempt and wait

*Activity* is content, plus comments (SSE ``:`` lines, Anthropic ``ping``) when
``idle_counts_comments`` is set. A disabled deadline (``None``) is never scheduled and
never described. When two deadlines fall due at the same instant the hard ceiling wins
(it is the one that must not be retried), then stale call, idle, first byte.

Not here: threads, sockets, errors.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.client.settings import ClientSettings

__all__ = ["DEADLINE_NAMES", "Deadline", "DeadlineState", "describe_deadlines"]

#: In tie-break order (first wins when two fall due together).
DEADLINE_NAMES = ("hard_ceiling_s", "stale_call_s", "stream_idle_s", "first_byte_s")

_LABELS = {
    "first_byte_s": "first byte",
    "stream_idle_s": "stream idle",
    "stale_call_s": "stale call",
    "hard_ceiling_s": "hard ceiling",
}


@dataclass(frozen=True)
class Deadline:
    """One scheduled deadline: which one, when (clock time), and its configured length."""

    name: str
    at: float
    limit_s: float

    @property
    def label(self) -> str:
        return _LABELS[self.name]


class DeadlineState:
    """What has happened in one call so far, and the deadlines that follow from it."""

    def __init__(self, settings: ClientSettings, *, call_started_at: float) -> None:
        self.settings = settings
        self.call_started_at = call_started_at
        self.attempt = 0
        self.in_attempt = False
        self.attempt_started_at: float | None = None
        self.first_byte_at: float | None = None
        self.last_activity_at: float | None = None
        self.last_content_at: float | None = None

    # ------------------------------------------------------------------ events

    def start_attempt(self, t: float) -> int:
        """A new attempt starts at ``t``; returns its 1-based number."""
        self.attempt += 1
        self.in_attempt = True
        self.attempt_started_at = t
        self.first_byte_at = None
        self.last_activity_at = None
        self.last_content_at = None
        return self.attempt

    # Each activity event returns True when it may have moved the earliest deadline
    # *earlier* (only the first activity can: it swaps first byte for stream idle), so
    # an enforcer reschedules only then and finds later deadlines when it wakes.

    def first_byte(self, t: float) -> bool:
        if self.in_attempt and self.first_byte_at is None:
            self.first_byte_at = t
            self.last_activity_at = t
            return True
        return False

    def content(self, t: float) -> bool:
        """Progress: a content-bearing event (or non-whitespace body bytes)."""
        return self.activity("content", t)

    def comment(self, t: float) -> bool:
        """Keep-alive traffic: never progress; activity only if ``idle_counts_comments``."""
        return self.activity("comment", t)

    def activity(self, kind: str | None, t: float) -> bool:
        """``content`` or ``comment`` by name (None: nothing complete arrived yet). Once
        per event on every stream, so plain stores only: one call, no helpers."""
        if not self.in_attempt or kind is None:
            return False
        if kind == "comment":
            if not self.settings.idle_counts_comments:
                return False
        elif kind == "content":
            self.last_content_at = t
        else:
            return False
        self.last_activity_at = t
        if self.first_byte_at is None:
            self.first_byte_at = t
            return True
        return False

    def done(self, t: float) -> None:
        """The attempt ended (for any reason); only the hard ceiling stays armed."""
        self.in_attempt = False

    # ------------------------------------------------------------------ questions

    def deadlines(self) -> list[Deadline]:
        """Every armed deadline, in tie-break order (disabled ones never appear)."""
        s = self.settings
        out: list[Deadline] = []
        if s.hard_ceiling_s is not None:
            out.append(
                Deadline(
                    "hard_ceiling_s", self.call_started_at + s.hard_ceiling_s, s.hard_ceiling_s
                )
            )
        if not self.in_attempt or self.attempt_started_at is None:
            return out
        if s.stale_call_s is not None:
            since = (
                self.last_content_at
                if self.last_content_at is not None
                else self.attempt_started_at
            )
            out.append(Deadline("stale_call_s", since + s.stale_call_s, s.stale_call_s))
        if self.first_byte_at is not None:
            if s.stream_idle_s is not None and self.last_activity_at is not None:
                out.append(
                    Deadline(
                        "stream_idle_s", self.last_activity_at + s.stream_idle_s, s.stream_idle_s
                    )
                )
        elif s.first_byte_s is not None:
            out.append(
                Deadline("first_byte_s", self.attempt_started_at + s.first_byte_s, s.first_byte_s)
            )
        return out

    def next_deadline(self) -> Deadline | None:
        """The deadline that fires first (ties: tie-break order), or None if none is armed."""
        best: Deadline | None = None
        for d in self.deadlines():
            if best is None or d.at < best.at:
                best = d
        return best

    def expired(self, now: float) -> Deadline | None:
        """The deadline that has fired by ``now``, if any."""
        d = self.next_deadline()
        return d if d is not None and d.at <= now else None


def describe_deadlines(state: DeadlineState, now: float) -> str:
    """Human text for the armed deadlines, e.g. ``"first byte in 1.20 s, hard ceiling in
    9.80 s"``; disabled or non-finite deadlines are never mentioned; ``""`` if none."""
    parts = []
    for d in sorted(state.deadlines(), key=lambda d: d.at):
        remaining = d.at - now
        if remaining != remaining or remaining in (float("inf"), float("-inf")):
            continue
        parts.append(f"{d.label} in {max(0.0, remaining):.2f} s")
    return ", ".join(parts)
