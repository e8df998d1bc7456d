"""The child-process side of the target protocol (see :mod:`harness.targets.base`).

``python -m harness.targets.child NAME``: builds the target, says ``ready``, runs a
job from stdin, reports the result as one JSON line, says ``ready`` again and waits:
the runner reads its leaks from /proc meanwhile, then sends the next job (a clean
child is reused) or ``exit`` (or closes stdin).

Not here: the parent side (``harness.targets.process``).
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys
import time
from typing import Any, TextIO

__all__ = ["main", "describe_exception"]

#: Error messages are cut here: enough to recognise, never a whole response body.
MAX_MESSAGE_CHARS = 500


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # The protocol owns the real stdout; anything the client prints goes to stderr.
    proto: TextIO = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1, encoding="utf-8")
    sys.stdout = sys.stderr
    if len(argv) != 1:
        _send(proto, {"event": "fatal", "message": "usage: python -m harness.targets.child NAME"})
        return 2
    from harness.targets import Job, load_target

    # SIGUSR1 dumps every thread's stack to stderr: the runner asks for it before it
    # kills a hung target, so ``harness explain`` can show where the call was stuck.
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)

    try:
        target = load_target(argv[0])()
        target.prepare()
    except Exception as exc:  # a broken target must be reported, not crash silently
        _send(proto, {"event": "fatal", **describe_exception(exc)})
        return 1
    while True:
        _send(proto, {"event": "ready", "pid": os.getpid(), "t": time.monotonic()})
        line = sys.stdin.readline()  # "run" again (the runner reuses a clean child), or "exit"/EOF
        if not line:
            return 0
        message = json.loads(line)
        if message.get("cmd") != "run":
            return 0
        _send(
            proto,
            {"event": "result", **_run_job(target, argv[0], Job.from_dict(message["job"]), proto)},
        )


def _run_job(target: Any, name: str, job: Any, proto: TextIO) -> dict[str, Any]:
    from harness.targets import EventLog, TargetUnsupported

    log = EventLog()
    if job.api not in target.apis:  # the runner normally decides this without a child
        return {
            "status": "not_applicable",
            "t": time.monotonic(),
            "message": f"target {name} does not speak api={job.api}",
        }
    _send(proto, {"event": "started", "t": time.monotonic()})
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


def describe_exception(exc: BaseException) -> dict[str, Any]:
    """Class name, MRO names, message and the reference client's fields, as JSON data."""
    mro = _mro_names(exc)
    name = type(exc).__name__
    causes = []
    inner = exc.__cause__ or exc.__context__
    while inner is not None and len(causes) < 5:
        causes.append(f"{type(inner).__name__}: {str(inner)[:200]}")
        inner = inner.__cause__ or inner.__context__
    attempts = getattr(exc, "attempts", None)
    if isinstance(attempts, list | tuple) and attempts and isinstance(attempts[-1], BaseException):
        # RetriesExhausted: the last attempt's error says what actually went wrong, and a
        # scenario may expect it ("error:StreamIdleTimeout") or the wrapper.
        last = attempts[-1]
        name = f"{name}:{type(last).__name__}"
        mro += [n for n in _mro_names(last) if n not in mro]
    out: dict[str, Any] = {
        "error": name,
        "mro": mro,
        "message": str(exc)[:MAX_MESSAGE_CHARS],
        "causes": causes,
    }
    for attr in ("deadline", "attempt", "elapsed_s", "status_code"):
        value = getattr(exc, attr, None)
        if value is None and attr == "deadline" and isinstance(attempts, list | tuple) and attempts:
            value = getattr(attempts[-1], "deadline", None)
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            out[attr] = value
    if isinstance(attempts, list | tuple):
        out["attempt_errors"] = [type(a).__name__ for a in attempts]
    return out


def _mro_names(exc: BaseException) -> list[str]:
    return [c.__name__ for c in type(exc).__mro__ if c not in (object, BaseException)]


def _send(proto: TextIO, message: dict[str, Any]) -> None:
    proto.write(json.dumps(message, default=str) + "\n")
    proto.flush()


if __name__ == "__main__":
    raise SystemExit(main())
