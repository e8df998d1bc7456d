"""Targets whose client lives in a virtualenv of its own (its pins clash with ours).

``ci/setup`` builds each one under ``.cache/<name>-venv`` (idempotent, stamped). A
:class:`VenvTarget` runs the ordinary child protocol with that venv's python (the
harness package comes from ``PYTHONPATH``, which the runner sets); without the venv the
child runs here and every job is skipped with the reason (tests skip, CI fails).

Not here: the clients themselves (one module per target).
"""

from __future__ import annotations

import os
from typing import ClassVar

from harness.paths import CACHE_DIR
from harness.targets.base import CallResult, EventLog, Job, Target, TargetUnsupported
from harness.targets.runtime.warmup import warm_up_target

__all__ = ["VenvTarget", "venv_unavailable"]


def venv_unavailable(venv: str, package: str) -> str | None:
    """Why ``.cache/<venv>`` cannot run ``package`` here (None when it can); disk only."""
    root = CACHE_DIR / venv
    python = root / "bin" / "python"
    if not (python.exists() and os.access(python, os.X_OK)):
        return f"{venv} not found: {python} does not exist (run ci/setup)"
    if not any(root.glob(f"lib/python3*/site-packages/{package}/__init__.py")):
        return f"{package} is not installed in {root} (run ci/setup)"
    return None


class VenvTarget(Target):
    """A target whose child runs in ``.cache/<venv>``; ``package`` proves the install."""

    venv: ClassVar[str] = ""
    package: ClassVar[str] = ""
    #: Extra variables for the child (e.g. to keep a library off the internet).
    child_env: ClassVar[dict[str, str]] = {}
    #: How long the runner waits for ``ready``: a big import plus warm-up calls, on a
    #: busy 2-core machine, can take more than the runner's default minute.
    start_s: ClassVar[float] = 180.0

    #: Every client venv is one of ci/setup's opt-in third-party venvs.
    install: ClassVar[str] = "HARNESS_EXTRA_TARGETS=1 bash ci/setup"

    @classmethod
    def unavailable(cls) -> str | None:
        return venv_unavailable(cls.venv, cls.package)

    @classmethod
    def command(cls) -> list[str]:
        base = super().command()
        if cls.unavailable() is not None:
            return base  # this interpreter: call() reports why, as skipped
        env = [f"{k}={v}" for k, v in cls.child_env.items()]
        python = str(CACHE_DIR / cls.venv / "bin" / "python")
        return ["/usr/bin/env", *env, python, *base[1:]]

    def prepare(self) -> None:
        """Warm the client up on every API it speaks (see :mod:`harness.targets.runtime.warmup`);
        without the venv there is nothing to warm: ``call()`` reports why, as skipped."""
        if self.unavailable() is None:
            warm_up_target(self, apis=self.apis)

    def check(self) -> None:
        """Raise :class:`TargetUnsupported` when the venv is missing."""
        reason = self.unavailable()
        if reason is not None:
            raise TargetUnsupported(reason)

    def call(self, job: Job, log: EventLog) -> CallResult:
        """Every job: the venv checked first (skipped with the reason), then :meth:`run`."""
        self.check()
        return self.run(job, log)

    def run(self, job: Job, log: EventLog) -> CallResult:
        """The job's calls with the venv's library (each kind of target its own)."""
        raise NotImplementedError
