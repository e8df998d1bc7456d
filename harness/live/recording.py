"""``harness live --record DIR`` and the fault check, wired around the tier's runs.

:func:`run_live_tier` and :func:`run_dry_tier` run the tier as before, optionally
through a :class:`harness.record.front.Recorder` (one cassette per call into
``record_dir``, credentials removed), then append the live-with-a-fault check
(:mod:`harness.live.fault_check`) to the run's cases. The dry run's fault check uses
a local fault server as the upstream.

Not here: the checks (``session``, ``dry_run``, ``fault_check``), the CLI (``cli_live``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness.live.config import LiveConfig
from harness.live.dry_run import DRY_RUN_API_KEY, dry_run_config, fault_server, run_dry
from harness.live.fault_check import run_fault_check
from harness.live.redact import Redactor
from harness.live.session import ChatCase, LiveRun, run_tier

__all__ = ["recording", "run_dry_tier", "run_live_tier"]

#: The dry run's stall deadline: the local upstream answers in milliseconds.
DRY_RUN_STALL_IDLE_S = 0.5


def run_live_tier(
    config: LiveConfig,
    sequences: Sequence[Sequence[ChatCase]],
    *,
    redactor: Redactor,
    record_dir: str | Path | None = None,
) -> LiveRun:
    with recording(config.base_url, record_dir) as base_url:
        run = run_tier(
            dataclasses.replace(config, base_url=base_url),
            sequences,
            mode="live",
            redactor=redactor,
        )
    faults = run_fault_check(config, redactor=redactor, record_dir=record_dir)
    return dataclasses.replace(
        run, base_url=redactor.redact(config.base_url), cases=run.cases + faults
    )


def run_dry_tier(
    *, seed: int | None, redactor: Redactor, record_dir: str | Path | None = None
) -> LiveRun:
    with fault_server() as server:
        with recording(server.base_url, record_dir) as base_url:
            run = run_dry(server=_Seen(server, base_url), seed=seed, redactor=redactor)
        config = dry_run_config(server.base_url, api_key=DRY_RUN_API_KEY)
        faults = run_fault_check(
            config, redactor=redactor, stall_idle_s=DRY_RUN_STALL_IDLE_S, record_dir=record_dir
        )
    return dataclasses.replace(
        run, base_url=redactor.redact(server.base_url), cases=run.cases + faults
    )


@contextmanager
def recording(base_url: str, record_dir: str | Path | None) -> Iterator[str]:
    """``base_url`` itself, or (with ``record_dir``) a recorder's URL standing in for it."""
    if record_dir is None:
        yield base_url
        return
    from harness.record.front import Recorder

    with Recorder(base_url, out_dir=record_dir) as recorder:
        yield recorder.base_url


class _Seen:
    """The dry run's fault server as reached through a recorder: scripts go to the
    server, calls to ``base_url``."""

    def __init__(self, server: Any, base_url: str) -> None:
        self._server = server
        self.base_url = base_url

    def load(self, script: Any) -> None:
        self._server.load(script)
