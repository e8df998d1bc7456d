"""The live-with-a-fault check: a real provider stream through the fault proxy, broken mid-way.

Two cases, each one streamed chat through :class:`harness.record.front.FaultProxy` in
front of the tier's base URL, on a fresh reference client (one attempt, so the error
is the fault's, not a retry's):

    fault/stall-mid-stream   after 2 real events the proxy holds the connection open
                             and silent; the client's ``stream_idle_s`` must end it
    fault/fin-mid-stream     after 2 real events the proxy closes with a FIN and no
                             terminator; the client must report a truncated stream

A case passes when the client raised one of the reference stack's typed errors
(``harness.client.errors.HarnessError``), within its deadline (for the stall: at most
``stream_idle_s`` plus :data:`DETECTION_MARGIN_S` after the proxy's own ``fault``
timeline stamp), and never returned the partial text as a reply. Findings otherwise:
``returned_partial_text``, ``untyped_error``, ``missed_deadline``, ``fault_not_fired``.

The dry run uses the local fault server as the upstream (default CI); the real run the
provider (``HERMES_LIVE_TESTS=1``). ``record_dir`` also records the proxied streams.

Not here: the healthy live sequences (``session``), the proxy (``harness.record``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.faults import Fault, FaultScript, Phase, Rule
from harness.faults import Fin as FinAction
from harness.faults import Hang as HangAction
from harness.live.config import LiveConfig
from harness.live.redact import Redactor, redacted_logging
from harness.live.sentinels import Finding
from harness.live.session import CaseResult, Expectation

__all__ = ["DETECTION_MARGIN_S", "FAULT_EVENT", "FaultCase", "fault_cases", "run_fault_check"]

#: The fault fires after this many upstream SSE events: mid-stream, text already sent.
FAULT_EVENT = 2
#: Idle deadline of the check's client (live: a real provider pauses under a second).
DEFAULT_STALL_IDLE_S = 3.0
#: How late after its deadline the stall may be detected and still pass.
DETECTION_MARGIN_S = 1.0
COUNT_PROMPT = "Count from 1 to 40, one number per line, digits only."


@dataclass(frozen=True)
class FaultCase:
    """One faulted streamed chat: the proxy's script and what the client must raise."""

    name: str
    script: FaultScript
    stall: bool


def fault_cases() -> tuple[FaultCase, ...]:
    at = Phase("event", FAULT_EVENT)
    return (
        FaultCase(
            "fault/stall-mid-stream", FaultScript(rules=(Rule(Fault(at, HangAction())),)), True
        ),
        FaultCase(
            "fault/fin-mid-stream", FaultScript(rules=(Rule(Fault(at, FinAction())),)), False
        ),
    )


def run_fault_check(
    config: LiveConfig,
    *,
    redactor: Redactor,
    stall_idle_s: float = DEFAULT_STALL_IDLE_S,
    record_dir: str | Path | None = None,
    client_factory: Callable[[LiveConfig, float], Any] | None = None,
) -> tuple[CaseResult, ...]:
    """Run :func:`fault_cases` through a fault proxy in front of ``config.base_url``."""
    from harness.record.front import FaultProxy

    factory = client_factory or _reference_client
    results = []
    for case in fault_cases():
        with FaultProxy(config.base_url, case.script, out_dir=record_dir) as proxy:
            proxied = _with_base_url(config, proxy.base_url)
            with redacted_logging(redactor):
                results.append(_run_case(case, proxied, proxy, factory, stall_idle_s, redactor))
    return tuple(results)


# --------------------------------------------------------------------------- helpers


def _run_case(
    case: FaultCase,
    config: LiveConfig,
    proxy: Any,
    factory: Callable[[LiveConfig, float], Any],
    stall_idle_s: float,
    redactor: Redactor,
) -> CaseResult:
    from harness.client.errors import HarnessError

    client = factory(config, stall_idle_s)
    start = time.monotonic()
    deltas: list[str] = []
    findings: list[Finding] = []
    error: str | None = None
    reply_text: str | None = None
    try:
        reply = client.complete(
            [{"role": "user", "content": COUNT_PROMPT}],
            model=config.model,
            api="chat",
            stream=True,
            max_tokens=config.max_tokens,
            on_delta=deltas.append,
        )
        reply_text = getattr(reply, "text", "")
        findings.append(Finding("returned_partial_text", "reply", None, _short(reply_text)))
    # Whatever the client raised is this case's evidence; the check judges its type.
    except Exception as exc:  # noqa: BLE001
        ended = time.monotonic()
        error = redactor.error_text(exc)
        reply_text = f"raised {type(exc).__name__}"  # the table's summary of a pass
        if not isinstance(exc, HarnessError):
            findings.append(Finding("untyped_error", "error", None, _short(type(exc).__name__)))
        fault_at = _fault_time(proxy)
        if fault_at is None:
            findings.append(Finding("fault_not_fired", "error", None, "the proxy never fired"))
        elif case.stall and ended - fault_at > stall_idle_s + DETECTION_MARGIN_S:
            late = ended - fault_at - stall_idle_s
            findings.append(Finding("missed_deadline", "error", None, f"{late:.2f} s late"))
        if ended - start > config.call_ceiling_s + DETECTION_MARGIN_S:
            findings.append(Finding("missed_deadline", "error", None, "past the call ceiling"))
    finally:
        client.close()
    return CaseResult(
        name=case.name,
        ok=not findings,
        findings=tuple(
            Finding(f.sentinel, f.where, f.offset, redactor.redact(f.excerpt)) for f in findings
        ),
        elapsed_s=time.monotonic() - start,
        stream=True,
        expected_word="",
        reply=None if reply_text is None else redactor.redact(_short(reply_text)),
        error=error,
        expect=Expectation(True),
    )


def _fault_time(proxy: Any) -> float | None:
    try:
        return proxy.wait_for("fault", timeout=1.0).t
    except TimeoutError:
        return None


def _reference_client(config: LiveConfig, stall_idle_s: float) -> Any:
    import dataclasses

    from harness.client import ReferenceClient

    settings = dataclasses.replace(
        config.client_settings(), stream_idle_s=stall_idle_s, max_attempts=1
    )
    return ReferenceClient(base_url=config.base_url, api_key=config.api_key, settings=settings)


def _with_base_url(config: LiveConfig, base_url: str) -> LiveConfig:
    import dataclasses

    return dataclasses.replace(config, base_url=base_url)


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
