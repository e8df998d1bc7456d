"""Outcomes: what one call against one target amounted to, and whether it was expected.

Pure functions over plain data (a target's report, the server's timeline and request
records), so every classification rule is unit-tested without sockets::

    ok                      the full expected reply came back
    error(kind)             the call raised; ``kind`` is the exception class, ``mro`` its bases
    hung                    no result before the runner's outer ceiling
    did_not_start           the target never got to the wire: its child died or stalled
                            before ``ready``, or made no request (and no result) within
                            its start-up allowance (``Target.start_allowance_s``); its
                            stderr tail in the detail. Never judged as a hang: not run
    truncated_as_complete   a prefix of the reply was returned as if complete (the worst case)
    wrong_content           text came back that is not the reply the server sent
    error_as_reply          the returned text carries an error sentinel ("Connection error." ...)
    false_kill              a deadline fired on a call that was slow but alive
    executed_truncated_tool_call
                            the agent *ran* a tool call whose arguments were cut mid-stream
                            (worse than any error: a side effect on half an instruction).
                            A target reports it as raised ``ExecutedTruncatedToolCall``
                            (:data:`EXECUTED_TRUNCATED`, in its error or MRO); classification
                            maps that here, in one place
    skipped                 not run here: a prerequisite (toxiproxy, netns, hermes) is missing
    not_applicable          the target does not speak the scenario's API (e.g. the bare
                            OpenAI SDK and the Anthropic Messages API); never run, and
                            matched only when the scenario expects ``not_applicable``

An expectation (:class:`Expected`) is one of those names, or ``error:Kind`` which matches
an error whose class or any base class is named ``Kind`` (the target reports the MRO).

Not here: running anything (``harness.runner``) or rendering (``harness.report``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.replies import same_tool_calls

__all__ = [
    "EXECUTED_TRUNCATED",
    "EXPECTABLE",
    "FAULT_KINDS",
    "KINDS",
    "NOT_RUN",
    "STALL_NAMES",
    "Expected",
    "Outcome",
    "classify",
    "detection_latency",
    "fault_onset",
]

KINDS = (
    "ok",
    "error",
    "hung",
    "did_not_start",
    "truncated_as_complete",
    "wrong_content",
    "error_as_reply",
    "false_kill",
    "executed_truncated_tool_call",
    "skipped",
    "not_applicable",
)
#: The kinds of a case whose client never made its calls (a prerequisite missing, an API
#: the target does not speak, a child that never started): no verdict, no time axis.
NOT_RUN = frozenset({"skipped", "not_applicable", "did_not_start"})
#: The error name a target reports when its agent executed a tool call with cut arguments.
EXECUTED_TRUNCATED = "ExecutedTruncatedToolCall"
EXPECTABLE = (
    ", ".join(KINDS)
    + ", error:ClassName, error:ClassName|OtherClass, ok|false_kill (any of several)"
)

#: Exception names that mean "a deadline fired" (our tree, httpx/openai timeouts, builtins).
STALL_NAMES = frozenset(
    {
        "StallError",
        "FirstByteTimeout",
        "StreamIdleTimeout",
        "StaleCall",
        "HardCeiling",
        "TimeoutException",
        "APITimeoutError",
        "TimeoutError",
    }
)


@dataclass(frozen=True)
class Outcome:
    """The classified result of one case."""

    kind: str
    error: str | None = None
    mro: tuple[str, ...] = ()
    detail: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"outcome kind {self.kind!r} is not one of {', '.join(KINDS)}")

    @property
    def label(self) -> str:
        """``error(StreamIdleTimeout)``, ``hung``, ..."""
        if self.kind in ("error", "false_kill") and self.error:
            return f"{self.kind}({self.error})"
        return self.kind

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "error": self.error,
            "mro": list(self.mro),
            "detail": self.detail,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Outcome:
        return cls(
            data["kind"], data.get("error"), tuple(data.get("mro") or ()), data.get("detail", "")
        )


@dataclass(frozen=True)
class Expected:
    """An expected outcome: a kind, and for errors optionally class names.

    ``error`` may name alternatives separated by ``|`` (``"A|B"``): the outcome matches
    when any of them is its class or a base class -- e.g. an SDK line that raises the
    bare transport error and a newer one that wraps it.
    """

    kind: str
    error: str | None = None
    #: ``"ok|false_kill"``: any of these outcomes matches (a target whose own timers race
    #: the stream's pacing). ``kind`` and ``error`` are the first alternative's.
    alternatives: tuple[Expected, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Expected:
        """Parse ``"ok"``, ``"hung"``, ``"error"``, ``"error:StallError"``, ``"error(StallError)"``,
        ``"error:ReadError|APIConnectionError"``."""
        if not isinstance(text, str):
            raise ValueError(f"expected outcome must be a string, got {text!r}")
        name = r"[A-Za-z_][A-Za-z0-9_.]*"
        m = re.fullmatch(rf"\s*error\s*(?::\s*|\(\s*)({name}(?:\s*\|\s*{name})*)\s*\)?\s*", text)
        if m:
            names = [n.strip().rsplit(".", 1)[-1] for n in m.group(1).split("|")]
            if EXECUTED_TRUNCATED in names:
                # never an error outcome: classification gives it its own kind
                raise ValueError(
                    f"{text!r}: {EXECUTED_TRUNCATED} is the outcome "
                    "executed_truncated_tool_call; allowed: " + EXPECTABLE
                )
            return cls("error", "|".join(names))
        kind = text.strip()
        if "|" in kind and not kind.startswith("error"):
            options = tuple(cls.parse(part) for part in kind.split("|"))
            return cls(options[0].kind, options[0].error, options)
        if kind not in KINDS:
            raise ValueError(f"{text!r} is not an outcome; allowed: {EXPECTABLE}")
        return cls(kind)

    @property
    def errors(self) -> tuple[str, ...]:
        """The accepted error class names (empty: any error)."""
        return tuple(self.error.split("|")) if self.error else ()

    def matches(self, outcome: Outcome) -> bool:
        if self.alternatives:
            return any(option.matches(outcome) for option in self.alternatives)
        if self.kind != outcome.kind:
            return False
        if self.error is None:
            return True
        return any(name == outcome.error or name in outcome.mro for name in self.errors)

    def __str__(self) -> str:
        if self.alternatives:
            return "|".join(str(option) for option in self.alternatives)
        return f"error({self.error})" if self.error else self.kind


@dataclass(frozen=True)
class _Report:
    """The fields of a target's report that classification reads."""

    status: str  # returned | raised | hung | skipped | not_applicable | crashed
    text: str | None = None
    error: str | None = None
    mro: tuple[str, ...] = ()
    message: str = ""
    deadline: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def classify(
    report: Mapping[str, Any] | None,
    *,
    expected_text: str | None,
    alive: bool,
    find_sentinel: Callable[[str], str | None] | None = None,
    answer_arguments: str | None = None,
) -> Outcome:
    """Classify a target's report.

    ``report`` is None when the runner stopped the target at its ceiling. ``expected_text``
    is the full reply the server sent for the successful request (None when unknown).
    ``alive`` says the response was slow but never stopped progressing: a deadline that
    fires then is a ``false_kill``. A report with ``texts`` (several sequential calls)
    is judged call by call; the first call that is not ``ok`` decides. ``find_sentinel``
    returns a description of an error sentinel found in a text (or None).
    ``answer_arguments`` is the answer tool call's arguments where the answer went as one:
    a text that is a cut prefix of them is the cut answer taken as complete too (an agent
    that hands the unparsed arguments on).
    """
    if report is None:
        return Outcome("hung", detail="stopped at the runner's outer ceiling")
    r = _Report(
        status=str(report.get("status")),
        text=report.get("text"),
        error=report.get("error"),
        mro=tuple(report.get("mro") or ()),
        message=str(report.get("message") or ""),
        deadline=report.get("deadline"),
    )
    if r.status in NOT_RUN:
        return Outcome(r.status, detail=r.message)
    if r.status == "hung":
        return Outcome("hung", detail=r.message or "stopped at the runner's outer ceiling")
    if r.status in ("raised", "crashed"):
        name = r.error or ("TargetCrashed" if r.status == "crashed" else "UnknownError")
        mro = r.mro or (name,)
        if EXECUTED_TRUNCATED in mro:
            return Outcome("executed_truncated_tool_call", detail=r.message)
        is_stall = r.deadline is not None or bool(STALL_NAMES.intersection(mro))
        if is_stall and alive:
            return Outcome("false_kill", name, mro, r.message)
        return Outcome("error", name, mro, r.message)
    if r.status != "returned":
        raise ValueError(
            f"report status {r.status!r} is not one of returned, raised, hung, skipped, "
            "not_applicable, crashed, did_not_start"
        )
    texts = report.get("texts") or [r.text or ""]
    for i, text in enumerate(texts):
        outcome = _classify_text(text, expected_text, find_sentinel, answer_arguments)
        if outcome.kind != "ok" or i == len(texts) - 1:
            if len(texts) > 1 and outcome.kind != "ok":
                return Outcome(
                    outcome.kind, detail=f"call {i + 1} of {len(texts)}: {outcome.detail}"
                )
            return outcome
    raise AssertionError("unreachable: texts is never empty")


def _classify_text(
    text: str,
    expected_text: str | None,
    find_sentinel: Callable[[str], str | None] | None,
    answer_arguments: str | None = None,
) -> Outcome:
    if find_sentinel is not None:
        hit = find_sentinel(text)
        if hit:
            return Outcome("error_as_reply", detail=f"sentinel {hit!r} in the reply")
    if expected_text is None:
        return Outcome("ok", detail="reply not checked: the server recorded no expected text")
    if text == expected_text:
        return Outcome("ok")
    if len(text) < len(expected_text) and expected_text.startswith(text):
        return Outcome(
            "truncated_as_complete",
            detail=f"returned {len(text)} of {len(expected_text)} characters as complete",
        )
    if answer_arguments and len(text) < len(answer_arguments) and answer_arguments.startswith(text):
        return Outcome(
            "truncated_as_complete",
            detail=(
                f"returned {len(text)} of {len(answer_arguments)} characters of the answer "
                "tool call's arguments as the answer: the call was cut"
            ),
        )
    if same_tool_calls(text, expected_text):
        return Outcome(
            "ok",
            detail=(
                "the tool calls' arguments differ as text from the ones sent but read as "
                "the same JSON object (the call a tool runs with)"
            ),
        )
    return Outcome("wrong_content", detail=_diff_hint(text, expected_text))


#: Timeline kinds that mark a fault taking effect: the server's ``fault``, the kernel
#: backend's link ``cut``, a Toxiproxy toxic added, a relay switching mode.
FAULT_KINDS = frozenset({"fault", "cut", "toxic_added", "mode"})


def fault_onset(timeline: Sequence[Any], *, before: float | None = None) -> float | None:
    """Monotonic time of the last fault event at or before ``before`` (default: the
    first fault event). None when no fault fired."""
    onsets = [float(_get(e, "t")) for e in timeline if _get(e, "kind") in FAULT_KINDS]
    if before is not None:
        onsets = [t for t in onsets if t <= before]
        return max(onsets) if onsets else None
    return min(onsets) if onsets else None


def detection_latency(
    timeline: Sequence[Any],
    client_error_t: float | None,
    *,
    started_t: float | None = None,
    request_starts: Sequence[float] = (),
) -> float | None:
    """Client error time minus the onset of the fault it reacted to, in seconds.

    The fault is the last one that fired before the error: with retries, that is the
    final attempt's, so the figure is how long *detection* took, not the whole retry
    loop (``CaseResult.elapsed_s`` has that). None if either stamp is unknown. Both are
    ``time.monotonic()`` stamps; on Linux that clock is system-wide, so a child
    process's stamp and the server's compare directly.

    On the case's own clock: a fault in place before the call started (``started_t``;
    a Toxiproxy toxic or a relay mode set up with the network path, while the child was
    still starting) took effect on the requests, so its onset is the last request start
    before the error (else the call's start), never the set-up time.
    """
    if client_error_t is None:
        return None
    onset = fault_onset(timeline, before=client_error_t)
    if onset is not None and started_t is not None and onset < started_t:
        starts = [t for t in request_starts if started_t <= t <= client_error_t]
        onset = max(starts) if starts else started_t
    if onset is None:
        return None
    return client_error_t - onset


# --------------------------------------------------------------------------- helpers


def _get(obj: Any, name: str) -> Any:
    return obj[name] if isinstance(obj, Mapping) else getattr(obj, name)


def _diff_hint(text: str, expected: str) -> str:
    i = 0
    for i, (a, b) in enumerate(zip(text, expected, strict=False)):  # noqa: B007
        if a != b:
            break
    else:
        i = min(len(text), len(expected))
    return f"differs at character {i}: got {text[i : i + 20]!r}, expected {expected[i : i + 20]!r}"
