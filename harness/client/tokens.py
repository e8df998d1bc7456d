"""Attempt tokens (retirement) and the typed error of a fired deadline.

Every attempt carries an :class:`AttemptToken`. Once a watchdog retires it,
:func:`owns_attempt` is False: the client drops any late delta of that attempt and never
returns its partial text as a completed answer. :func:`error_for_deadline` is the one
place a fired deadline becomes its :class:`~harness.client.errors.StallError`.
"""

from __future__ import annotations

from harness.client.deadlines import Deadline
from harness.client.errors import (
    FirstByteTimeout,
    HardCeiling,
    StaleCall,
    StallError,
    StreamIdleTimeout,
)

__all__ = ["AttemptToken", "error_for_deadline", "owns_attempt"]

_ERRORS: dict[str, type[StallError]] = {
    "first_byte_s": FirstByteTimeout,
    "stream_idle_s": StreamIdleTimeout,
    "stale_call_s": StaleCall,
    "hard_ceiling_s": HardCeiling,
}

_MESSAGES = {
    "first_byte_s": "no first byte within {limit:g} s of the attempt starting",
    "stream_idle_s": "stream idle for {limit:g} s",
    "stale_call_s": "no content progress for {limit:g} s",
    "hard_ceiling_s": "call exceeded its hard ceiling of {limit:g} s",
}


class AttemptToken:
    """Identifies one attempt; a watchdog retires it when a deadline fires."""

    __slots__ = ("number", "retired_by", "retired_at")

    def __init__(self, number: int) -> None:
        self.number = number
        self.retired_by: Deadline | None = None
        self.retired_at: float | None = None

    @property
    def alive(self) -> bool:
        return self.retired_by is None

    def retire(self, deadline: Deadline, at: float) -> None:
        if self.retired_by is None:
            self.retired_by = deadline
            self.retired_at = at

    def __repr__(self) -> str:
        state = "alive" if self.alive else f"retired by {self.retired_by.name}"  # type: ignore[union-attr]
        return f"AttemptToken({self.number}, {state})"


def owns_attempt(token: AttemptToken) -> bool:
    """The retirement check: may this attempt still deliver deltas and a result?"""
    return token.alive


def error_for_deadline(
    deadline: Deadline, *, attempt: int | None, elapsed_s: float | None, detail: str = ""
) -> StallError:
    """The typed error for a fired deadline."""
    message = _MESSAGES[deadline.name].format(limit=deadline.limit_s)
    if detail:
        message = f"{message}; {detail}"
    return _ERRORS[deadline.name](
        message,
        attempt=attempt,
        elapsed_s=elapsed_s,
        deadline=deadline.name,
        deadline_s=deadline.limit_s,
    )
