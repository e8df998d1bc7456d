"""``hermes+guard``: hermes-agent whose primary OpenAI and Anthropic clients are built on
``harness.guard`` (the reference stack as their httpx transport), everything else hermes's.

The change to hermes is ``patches/hermes-http-client-factory.patch``: a new
``agent/http_client_factory.py`` and two call sites (where hermes builds its primary
OpenAI client's ``http_client``, and its Anthropic client), so an operator can name a
factory in ``HERMES_HTTP_CLIENT_FACTORY``; unset, hermes is unchanged. ``ci/setup``
copies the hermes venv to ``.cache/hermes-guard-venv`` and applies the patch there (the
stock venv stays stock). The child is the same driver as ``hermes``'s, run with
``--child --guard``: ``in_venv/hermes_driver/guard_hook.py`` names the guard as the factory and gives it
each job's deadlines (the scenario's ``[watchdog]`` settings, scaled as the
``reference`` target scales them); hermes's own watchdogs, retries and backoff stay.

Not here: the guard (``harness.guard``), the driver (``hermes_driver``).
"""

from __future__ import annotations

from pathlib import Path

from harness.targets.base import CallResult, EventLog, Job, TargetUnsupported
from harness.targets.hermes.target import (
    DEFAULT_HERMES_PYTHON,
    DRIVER_PATH,
    HermesTarget,
    venv_reason,
)

__all__ = ["DEFAULT_GUARD_PYTHON", "PATCH_PATH", "HermesGuardTarget", "guard_unavailable_reason"]

#: The patched copy of the hermes venv ``ci/setup`` makes, beside it.
DEFAULT_GUARD_PYTHON = DEFAULT_HERMES_PYTHON.parents[2] / "hermes-guard-venv" / "bin" / "python"
PATCH_PATH = Path(__file__).resolve().with_name("patches") / "hermes-http-client-factory.patch"


class HermesGuardTarget(HermesTarget):
    name = "hermes+guard"

    @classmethod
    def command(cls) -> list[str]:
        if guard_unavailable_reason() is not None:
            return super(HermesTarget, cls).command()  # the in-process child: skipped
        return [str(DEFAULT_GUARD_PYTHON), "-I", str(DRIVER_PATH), "--child", "--guard"]

    def call(self, job: Job, log: EventLog) -> CallResult:
        raise TargetUnsupported(guard_unavailable_reason() or "hermes+guard driver not started")


def guard_unavailable_reason(python: Path = DEFAULT_GUARD_PYTHON) -> str | None:
    """Why ``hermes+guard`` cannot run here (None: it can). Looks on disk only."""
    return venv_reason(
        python,
        what="patched hermes-agent",
        setup="run ci/setup",
        module="agent/http_client_factory.py",
        missing=f"hermes in {python.parent.parent} is not patched with {PATCH_PATH.name} "
        "(run ci/setup)",
    )
