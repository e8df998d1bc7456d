"""What the two ``+guard`` targets share: the guard's settings for a job, and how a
guarded call's error is reported.

Settings are the scenario's ``[watchdog]`` deadlines (the reference stack's), scaled by
the run's ``time_scale`` exactly as the ``reference`` target scales them. The SDK keeps
its own defaults (timeouts, ``max_retries=2``, backoff): the guard is a drop-in.

An error the guard produced reaches the child as the SDK's own class
(``APITimeoutError``, ``APIConnectionError``, or a bare ``Guard<httpx class>`` from a
stream iterator); :func:`reraise_typed` re-raises its typed cause instead, so the
report names what happened (``error:StreamIdleTimeout``), and records the SDK's class
in the report's details (``sdk_error``).

Not here: the guard (``harness.guard``).
"""

from __future__ import annotations

from typing import NoReturn

from harness.targets.base import EventLog
from harness.targets.clients.reference import job_settings

__all__ = ["guard_settings", "reraise_typed"]


#: the guard runs under the reference stack's settings for the job
guard_settings = job_settings


def reraise_typed(exc: BaseException, log: EventLog) -> NoReturn:
    """Raise the guard's typed cause of ``exc`` (or ``exc`` itself when there is none)."""
    from harness import guard

    typed = guard.typed_cause(exc)
    if typed is None:
        raise exc
    log.details["sdk_error"] = f"{type(exc).__module__}.{type(exc).__name__}"
    log.mark("guard_error", f"{type(exc).__name__} <- {type(typed).__name__}")
    raise typed from None  # the SDK's class is in details; a cause would close a cycle
