"""A target the user names that cannot run here stops the command before any case.

``harness run -t litellm`` without ``.cache/litellm-venv`` used to print "74/74 cases as
expected" with every case skipped: a gate that passes when its target was never
installed. Now it is one line -- what is missing and the command that installs it --
and exit 2 (:class:`~harness.cli.common.UsageError`).

Not here: a tier prerequisite of some scenarios (Toxiproxy, root for netns): those
cases are skipped and counted apart (``harness.report.common.summary_counts``).
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.cli.common import UsageError

__all__ = ["require_runnable"]


def require_runnable(targets: Sequence[str]) -> None:
    """Raise :class:`UsageError` naming the first target in ``targets`` that cannot run."""
    from harness.targets import load_target

    for name in targets:
        cls = load_target(name)
        reason = cls.unavailable()
        if reason is not None:
            raise UsageError(
                f"--target {name} cannot run here: {reason}; install it with: {cls.install}"
            )
