"""What the judge reads of one case, parsed once into typed values.

- :class:`ChildReport`: the target child's result message (``harness.targets.runtime``:
  ``status``, ``t``, ``attempts``, ``details.follow_up``, ...), read from its JSON dict
  here and nowhere else; a field the child did not send, or sent with the wrong type, is
  None (or empty), never a default that could pass for a measurement.
- :class:`Request`: one request record of the fault server (``RequestRecord`` of
  ``harness.server.timeline``, or a hand-made one in a test) with its
  :class:`Lineage` (``harness.apis.lineage``).

The raw message stays on :attr:`ChildReport.raw` for the readers that take the whole of
it (``harness.outcome.classify``, ``harness.contract.causes``).

Not here: judging (``harness.judge``, ``harness.contract.verdict``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.apis.lineage import Conversation
from harness.outcome import NOT_RUN

__all__ = ["ChildReport", "FollowUp", "Lineage", "Request", "requests_of"]

#: Statuses of a case that never ran its calls (no check is judged).


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


@dataclass(frozen=True)
class FollowUp:
    """The contract's healthy follow-up call (``details.follow_up``)."""

    ok: bool
    #: When it started: the job's own calls ended there.
    t: float | None = None


@dataclass(frozen=True)
class ChildReport:
    """The child's result message for one case, typed (:meth:`parse`)."""

    raw: Mapping[str, Any]
    status: str | None = None
    #: When the call returned or raised (the child's clock, ``time.monotonic()``).
    t: float | None = None
    #: The attempts the child says it made (a returned result's count).
    attempts: int | None = None
    #: A raised call's attempt number, and how many attempt errors it listed.
    attempt: int | None = None
    attempt_errors: int = 0
    finish_reason: str | None = None
    error: str | None = None
    message: str | None = None
    causes: tuple[str, ...] = ()
    events: tuple[tuple[Any, ...], ...] = ()
    details: Mapping[str, Any] = field(default_factory=dict)
    follow_up: FollowUp | None = None

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None) -> ChildReport | None:
        """The typed report of ``raw`` (None: no result came)."""
        if raw is None:
            return None
        details = raw.get("details")
        details = dict(details) if isinstance(details, Mapping) else {}
        follow = details.get("follow_up")
        errors = raw.get("attempt_errors")
        return cls(
            raw=raw,
            status=_text(raw.get("status")),
            t=_number(raw.get("t")),
            attempts=_int(raw.get("attempts")),
            attempt=_int(raw.get("attempt")),
            attempt_errors=len(errors) if isinstance(errors, list) else 0,
            finish_reason=_text(raw.get("finish_reason")),
            error=_text(raw.get("error")),
            message=_text(raw.get("message")),
            causes=tuple(str(c) for c in raw.get("causes") or ()),
            events=tuple(tuple(e) for e in raw.get("events") or ()),
            details=details,
            follow_up=(
                FollowUp(ok=bool(follow.get("ok")), t=_number(follow.get("t")))
                if isinstance(follow, Mapping)
                else None
            ),
        )

    @property
    def ran(self) -> bool:
        """False for a case that never ran its calls (``harness.outcome.NOT_RUN``)."""
        return self.status not in NOT_RUN

    @property
    def end_t(self) -> float | None:
        """Where the job's own calls ended: where the follow-up call started, else the
        call's own end."""
        return (self.follow_up.t if self.follow_up is not None else None) or self.t

    def claimed_attempts(self, *, calls: int) -> int | None:
        """How many requests the client says it made: a returned result's ``attempts``
        (for several calls, the sum the target reports), a raised one's list of attempt
        errors (``RetriesExhausted``) or the attempt number of the error. None when it
        does not say, or when a raised call was not the first of several (the earlier
        calls are unknown)."""
        if self.status == "returned":
            return self.attempts
        if self.status != "raised" or calls > 1:
            return None
        return self.attempt_errors or self.attempt


@dataclass(frozen=True)
class Lineage:
    """Where a request stands in the conversation (``harness.apis.lineage``): ``new``,
    ``continuation`` (of request ``of``, with the turns it ``appended``) or ``retry`` of
    model call ``call``."""

    kind: str | None = None
    of: int | None = None
    call: int | None = None
    appended: tuple[str, ...] = ()
    replaced: tuple[str, ...] = ()

    @classmethod
    def parse(cls, raw: Any) -> Lineage | None:
        if not isinstance(raw, Mapping):
            return None
        appended = tuple(str(a) for a in raw.get("appended") or ())
        replaced = tuple(str(a) for a in raw.get("replaced") or ())
        return cls(
            kind=_text(raw.get("kind")),
            of=raw.get("of"),
            call=raw.get("call"),
            appended=appended,
            replaced=replaced,
        )


@dataclass(frozen=True)
class Request:
    """One request record of the fault server, typed (:meth:`of`)."""

    index: int
    t_start: float
    api: str | None = None
    fault: str | None = None
    expected_text: str | None = None
    #: the answer tool call's arguments the answer went in (None: a plain reply)
    answer_arguments: str | None = None
    lineage: Lineage | None = None
    #: The conversation its body carried (``harness.apis.lineage``), on a live record only
    #: (a report's JSON drops it).
    conversation: Conversation | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, record: Any) -> Request:
        """The typed view of a server ``RequestRecord`` (or any object with its fields)."""
        if isinstance(record, Request):
            return record
        return cls(
            index=int(getattr(record, "index", 0)),
            t_start=float(getattr(record, "t_start", 0.0)),
            api=getattr(record, "api", None),
            fault=getattr(record, "fault", None),
            expected_text=getattr(record, "expected_text", None),
            answer_arguments=getattr(record, "answer_arguments", None),
            lineage=Lineage.parse(getattr(record, "lineage", None)),
            conversation=getattr(record, "conversation", None),
        )


def requests_of(records: Iterable[Any]) -> tuple[Request, ...]:
    """:meth:`Request.of` of every record."""
    return tuple(Request.of(r) for r in records)
