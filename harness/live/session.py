"""The live checks as reusable code: sequential chats judged strictly.

One *sequence* is three chats through one reference client with a rebuild between the
second and the third (the seed regression: a rebuilt client reused a closed transport
and every later call failed). The tier runs a streaming and a non-streaming sequence.
Each chat asks the model to echo an exact random word, so a correct answer is
checkable, and a call counts as ok only when:

- it returned (a raised error is a failure, and its text is scanned for sentinels);
- its reply is non-empty, its finish reason is stop or length, and neither the reply
  nor the log records captured during the call contain an error sentinel;
- the reply contains the word.

Results are plain frozen data (:class:`CaseResult`, :class:`LiveRun`) with every string
already redacted, ready for the console, JSON, JUnit and Markdown writers. A case may
carry an *expectation* of failure: the dry run uses that to prove the detector flags a
sentinel the fault server injects into an otherwise successful reply.

Not here: the provider config (``config``), the fault server set-up (``dry_run``),
rendering (``report``).
"""

from __future__ import annotations

import logging
import random
import re
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from harness.live.config import LiveConfig
from harness.live.redact import Redactor, redacted_logging
from harness.live.sentinels import Finding, check_reply, scan_error, scan_records

__all__ = [
    "CAPTURED_LOGGERS",
    "CaseResult",
    "ChatCase",
    "ChatClient",
    "Expectation",
    "LiveRun",
    "echo_prompt",
    "make_reference_client",
    "plan_sequences",
    "random_word",
    "run_cases",
    "run_tier",
]

#: Loggers whose records are captured (at INFO and above) during each call and scanned:
#: the client side only (an embedded fault server's own logs describe its faults).
CAPTURED_LOGGERS = ("openai", "httpx", "httpcore", "harness.client")
CAPTURE_LEVEL = logging.INFO


class ChatClient(Protocol):
    """What the session needs from a client (``harness.client.ReferenceClient``)."""

    def complete(
        self,
        messages: list[dict[str, str]],
        *,
        model: str,
        api: str,
        stream: bool,
        max_tokens: int | None,
        on_delta: Callable[[str], None] | None,
    ) -> Any: ...

    def rebuild(self) -> None: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Expectation:
    """What a case must produce to count as a pass of the *run*: ``ok`` True for a healthy
    call; ``ok`` False plus the finding names that must be among its findings."""

    ok: bool = True
    findings: tuple[str, ...] = ()


@dataclass(frozen=True)
class ChatCase:
    """One chat of a sequence. ``rebuild_before`` rebuilds the client before the call."""

    name: str
    word: str
    stream: bool
    rebuild_before: bool = False
    api: str = "chat"
    expect: Expectation = field(default_factory=Expectation)

    @property
    def messages(self) -> list[dict[str, str]]:
        return [{"role": "user", "content": echo_prompt(self.word)}]


@dataclass(frozen=True)
class CaseResult:
    """What one chat did. Every string in it is redacted."""

    name: str
    ok: bool
    findings: tuple[Finding, ...]
    elapsed_s: float
    stream: bool
    expected_word: str
    reply: str | None = None
    finish_reason: str | None = None
    attempts: int | None = None
    error: str | None = None
    expect: Expectation = field(default_factory=Expectation)

    @property
    def as_expected(self) -> bool:
        """True when the case did what the run expected of it."""
        if self.expect.ok:
            return self.ok
        names = {f.sentinel for f in self.findings}
        return not self.ok and set(self.expect.findings) <= names

    def summary(self) -> str:
        """One line for tables: the reply when ok; else the error and what was found."""
        if self.ok:
            return f"ok ({self.reply!r})"
        if self.error is None:
            return "; ".join(f.describe() for f in self.findings) or "failed"
        parts = [f"raised {_shorten(self.error)}"]
        parts += [f.describe() for f in self.findings if f.where != "error"]
        in_error = sorted({f.sentinel for f in self.findings if f.where == "error"} - {"raised"})
        if in_error:
            parts.append("sentinels in the error: " + ", ".join(in_error))
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "ok": self.ok,
            "as_expected": self.as_expected,
            "expected": {"ok": self.expect.ok, "findings": list(self.expect.findings)},
            "findings": [f.to_dict() for f in self.findings],
            "elapsed_s": round(self.elapsed_s, 4),
            "stream": self.stream,
            "expected_word": self.expected_word,
            "reply": self.reply,
            "finish_reason": self.finish_reason,
            "attempts": self.attempts,
            "error": self.error,
        }


@dataclass(frozen=True)
class LiveRun:
    """A whole tier run: ``mode`` is ``live`` or ``dry-run``."""

    mode: str
    model: str
    base_url: str
    cases: tuple[CaseResult, ...]
    elapsed_s: float

    @property
    def ok(self) -> bool:
        return bool(self.cases) and all(c.as_expected for c in self.cases)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "model": self.model,
            "base_url": self.base_url,
            "ok": self.ok,
            "elapsed_s": round(self.elapsed_s, 4),
            "cases": [c.to_dict() for c in self.cases],
        }


def echo_prompt(word: str) -> str:
    """A prompt whose only correct answer is ``word``."""
    return (
        "This is an automated connectivity check. Reply with exactly the following word "
        f"and nothing else (no punctuation, no quotes): {word}"
    )


_SYLLABLES = ("ka", "lo", "mi", "ru", "te", "zo", "va", "ne", "pi", "su", "do", "fe")


def random_word(rng: random.Random) -> str:
    """A made-up word no model would produce by chance, e.g. ``kamirute4821``."""
    return "".join(rng.choice(_SYLLABLES) for _ in range(4)) + str(rng.randrange(1000, 10000))


def plan_sequences(
    rng: random.Random, *, streams: Sequence[bool] = (True, False), chats: int = 3
) -> list[list[ChatCase]]:
    """One sequence per stream mode: ``chats`` chats, the client rebuilt before the last."""
    sequences = []
    for stream in streams:
        label = "stream" if stream else "non-stream"
        sequences.append(
            [
                ChatCase(
                    name=f"{label}/chat-{i}",
                    word=random_word(rng),
                    stream=stream,
                    rebuild_before=(i == chats and chats > 1),
                )
                for i in range(1, chats + 1)
            ]
        )
    return sequences


def make_reference_client(config: LiveConfig) -> ChatClient:
    """A :class:`harness.client.ReferenceClient` for ``config`` (imported lazily so the
    detector and redaction stay importable without the client stack)."""
    from harness.client import ReferenceClient

    return ReferenceClient(
        base_url=config.base_url, api_key=config.api_key, settings=config.client_settings()
    )


def run_tier(
    config: LiveConfig,
    sequences: Sequence[Sequence[ChatCase]],
    *,
    mode: str = "live",
    client_factory: Callable[[LiveConfig], ChatClient] | None = None,
    before_call: Callable[[ChatCase], None] | None = None,
    redactor: Redactor | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> LiveRun:
    """Run every sequence on its own client (built by ``client_factory``, default the
    reference client, closed afterwards) within ``config.run_ceiling_s``."""
    factory = client_factory or make_reference_client
    redactor = redactor or Redactor([config.api_key])
    start = clock()
    deadline = start + config.run_ceiling_s
    results: list[CaseResult] = []
    for cases in sequences:
        if clock() >= deadline:
            results.extend(_not_run(case, "run_ceiling") for case in cases)
            continue
        try:
            client = factory(config)
        # The cases of this sequence fail with the (redacted) reason; the run goes on.
        except Exception as exc:  # noqa: BLE001
            results.extend(
                _not_run(case, "client_build_failed", redactor.error_text(exc)) for case in cases
            )
            continue
        try:
            results.extend(
                run_cases(
                    cases,
                    client=client,
                    config=config,
                    redactor=redactor,
                    before_call=before_call,
                    run_deadline=deadline,
                    clock=clock,
                )
            )
        finally:
            client.close()
    return LiveRun(
        mode=mode,
        model=config.model,
        base_url=redactor.redact(config.base_url),
        cases=tuple(results),
        elapsed_s=clock() - start,
    )


def run_cases(
    cases: Sequence[ChatCase],
    *,
    client: ChatClient,
    config: LiveConfig,
    redactor: Redactor,
    before_call: Callable[[ChatCase], None] | None = None,
    run_deadline: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> list[CaseResult]:
    """Run ``cases`` in order on ``client`` and judge each strictly.

    ``before_call`` runs before each call (the dry run loads the case's fault script
    there). No call starts after ``run_deadline`` (a ``clock`` value): such cases fail
    with a ``run_ceiling`` finding. Log records are redacted while the cases run.
    """
    results = []
    with redacted_logging(redactor):
        for case in cases:
            if run_deadline is not None and clock() >= run_deadline:
                results.append(_not_run(case, "run_ceiling"))
                continue
            results.append(_run_one(case, client, config, redactor, before_call, clock))
    return results


# --------------------------------------------------------------------------- helpers


def _run_one(
    case: ChatCase,
    client: ChatClient,
    config: LiveConfig,
    redactor: Redactor,
    before_call: Callable[[ChatCase], None] | None,
    clock: Callable[[], float],
) -> CaseResult:
    if before_call is not None:
        before_call(case)
    start = clock()
    chunks: list[str] = []  # streamed deltas, scanned joined: a split sentinel is caught
    with _captured_records() as records:
        try:
            if case.rebuild_before:
                client.rebuild()
            reply = client.complete(
                case.messages,
                model=config.model,
                api=case.api,
                stream=case.stream,
                max_tokens=config.max_tokens,
                on_delta=chunks.append,
            )
        # A raised error is this case's result, never the run's end: the report names it.
        except Exception as exc:  # noqa: BLE001
            elapsed = clock() - start
            findings = [
                Finding("raised", "error", None, redactor.redact(type(exc).__name__)),
                *scan_error(exc),
                *scan_records(records),
            ]
            return CaseResult(
                name=case.name,
                ok=False,
                findings=_redacted(findings, redactor),
                elapsed_s=elapsed,
                stream=case.stream,
                expected_word=case.word,
                attempts=getattr(exc, "attempt", None),
                error=redactor.error_text(exc),
                expect=case.expect,
            )
    elapsed = clock() - start
    text = getattr(reply, "text", None)
    finish = getattr(reply, "finish_reason", None)
    findings = [*check_reply(text, finish, chunks=chunks or None), *scan_records(records)]
    if text and text.strip() and not _contains_word(text, case.word):  # empty: flagged already
        findings.append(Finding("wrong_content", "reply", None, f"expected {case.word!r}"))
    return CaseResult(
        name=case.name,
        ok=not findings,
        findings=_redacted(findings, redactor),
        elapsed_s=elapsed,
        stream=case.stream,
        expected_word=case.word,
        reply=None if text is None else redactor.redact(text),
        finish_reason=finish,
        attempts=getattr(reply, "attempts", None),
        expect=case.expect,
    )


def _not_run(case: ChatCase, reason: str, error: str | None = None) -> CaseResult:
    why = error or "not started: the run's time budget is spent"
    return CaseResult(
        name=case.name,
        ok=False,
        findings=(Finding(reason, "error", None, _shorten(why, 120)),),
        elapsed_s=0.0,
        stream=case.stream,
        expected_word=case.word,
        error=error,
        expect=case.expect,
    )


def _shorten(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _contains_word(text: str, word: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(word)}(?![A-Za-z0-9])", text, re.I) is not None


def _redacted(findings: list[Finding], redactor: Redactor) -> tuple[Finding, ...]:
    return tuple(
        Finding(f.sentinel, f.where, f.offset, redactor.redact(f.excerpt), f.chunk)
        for f in findings
    )


class _ListHandler(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=CAPTURE_LEVEL)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if any(record.name == n or record.name.startswith(n + ".") for n in CAPTURED_LOGGERS):
            self.records.append(record)


@contextmanager
def _captured_records() -> Iterator[list[logging.LogRecord]]:
    """Collect INFO+ records of :data:`CAPTURED_LOGGERS` made inside the block. Lowers
    those loggers' levels to INFO if needed and restores them afterwards."""
    handler = _ListHandler()
    root = logging.getLogger()
    saved = {}
    for name in CAPTURED_LOGGERS:
        logger = logging.getLogger(name)
        if logger.getEffectiveLevel() > CAPTURE_LEVEL:
            saved[name] = logger.level
            logger.setLevel(CAPTURE_LEVEL)
    root.addHandler(handler)
    try:
        yield handler.records
    finally:
        root.removeHandler(handler)
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)
