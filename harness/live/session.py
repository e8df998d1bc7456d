"""The live checks through the in-process reference client: sequential chats judged
strictly.

The tier runs a streaming and a non-streaming sequence (:func:`plan_sequences`), each on
its own :class:`harness.client.ReferenceClient`, and a call counts as ok only when:

- it returned (a raised error is a failure, and its text is scanned for sentinels);
- its reply is non-empty, its finish reason is stop or length, and neither the reply
  nor the log records captured during the call contain an error sentinel;
- the reply contains the word.

Not here: the data and the judge (``cases``), the provider config (``config``), the
fault server set-up (``dry_run``), any other target (``targets``), rendering
(``report``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

from harness.live.budget import run_sequences
from harness.live.cases import (
    CaseResult,
    ChatCase,
    Expectation,
    LiveRun,
    echo_prompt,
    judge_reply,
    not_run,
    plan_sequences,
    random_word,
    redacted_findings,
)
from harness.live.config import LiveConfig
from harness.live.redact import Redactor, redacted_logging
from harness.live.sentinels import Finding, scan_error, scan_records

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

    def run_one(cases: Sequence[ChatCase], deadline: float) -> list[CaseResult]:
        try:
            client = factory(config)
        # The cases of this sequence fail with the (redacted) reason; the run goes on.
        except Exception as exc:  # noqa: BLE001
            return [
                not_run(case, "client_build_failed", redactor.error_text(exc)) for case in cases
            ]
        try:
            return run_cases(
                cases,
                client=client,
                config=config,
                redactor=redactor,
                before_call=before_call,
                run_deadline=deadline,
                clock=clock,
            )
        finally:
            client.close()

    def over_budget(cases: Sequence[ChatCase]) -> list[CaseResult]:
        return [not_run(case, "run_ceiling") for case in cases]

    return run_sequences(
        config, sequences, run_one, over_budget, mode=mode, redactor=redactor, clock=clock
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
                results.append(not_run(case, "run_ceiling"))
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
                findings=redacted_findings(findings, redactor),
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
    findings = [
        *judge_reply(text, finish, case.word, chunks=chunks or None),
        *scan_records(records),
    ]
    return CaseResult(
        name=case.name,
        ok=not findings,
        findings=redacted_findings(findings, redactor),
        elapsed_s=elapsed,
        stream=case.stream,
        expected_word=case.word,
        reply=None if text is None else redactor.redact(text),
        finish_reason=finish,
        attempts=getattr(reply, "attempts", None),
        expect=case.expect,
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
