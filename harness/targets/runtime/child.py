"""The child process of a target in this venv (see :mod:`harness.targets.base`).

``python -m harness.targets.runtime.child NAME``: builds the target, says ``ready``, runs a
job from stdin, reports the result as one JSON line, says ``ready`` again and waits:
the runner reads its leaks from /proc meanwhile, then sends the next job (a clean
child is reused) or ``exit`` (or closes stdin). The wire format and the loop are
:mod:`harness.targets.runtime.protocol`'s, shared with the hermes driver.

Not here: the parent side (``harness.targets.runtime.process``).
"""

from __future__ import annotations

import faulthandler
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from harness.targets.runtime.protocol import claim_stdout, describe_exception, fatal, send, serve

__all__ = ["main", "describe_exception"]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    proto = claim_stdout()
    if len(argv) != 1:
        fatal(proto, message="usage: python -m harness.targets.runtime.child NAME")
        return 2
    from harness.targets import Job, load_target

    # SIGUSR1 dumps every thread's stack to stderr: the runner asks for it before it
    # kills a hung target, so ``harness explain`` can show where the call was stuck.
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)

    try:
        target = load_target(argv[0])()
        target.prepare()
    except Exception as exc:  # a broken target must be reported, not crash silently
        fatal(proto, exc)
        return 1

    def handle(job: dict[str, Any], started: Callable[[], None]) -> dict[str, Any]:
        def call_begun(t: float) -> None:
            send(proto, {"event": "call", "t": t})

        return _run_job(target, argv[0], Job.from_dict(job), started, call_begun)

    return serve(
        proto,
        sys.stdin,
        handle,
        reuse=True,
        before_fork=target.before_fork,
        after_fork=target.after_fork,
    )


def _run_job(
    target: Any,
    name: str,
    job: Any,
    started: Callable[[], None],
    call_begun: Callable[[float], None] | None = None,
) -> dict[str, Any]:
    from harness.targets import EventLog, TargetUnsupported

    log = EventLog()
    log.on_call = call_begun
    if job.api not in target.apis:  # the runner normally decides this without a child
        return {
            "status": "not_applicable",
            "message": f"target {name} does not speak api={job.api}",
        }
    started()
    try:
        result = target.call(job, log)
    except TargetUnsupported as exc:
        report: dict[str, Any] = {"status": "skipped", "message": str(exc)}
    except BaseException as exc:  # noqa: BLE001 - every failure is the data we report
        report = {"status": "raised", **describe_exception(exc)}
    else:
        report = {
            "status": "returned",
            "text": result.text,
            "texts": list(result.texts),
            "finish_reason": result.finish_reason,
            "attempts": result.attempts,
        }
        log.details.update(result.details)
    report["t"] = time.monotonic()
    report["events"] = log.events
    report["events_dropped"] = log.dropped
    report["details"] = log.details
    return report


if __name__ == "__main__":
    raise SystemExit(main())
