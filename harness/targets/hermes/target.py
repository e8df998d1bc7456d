"""``hermes``: a real hermes-agent ``AIAgent`` in its own virtualenv, as a target.

hermes-agent pins its own dependency versions, so it lives in a separate virtualenv
(``ci/setup`` makes ``.cache/hermes-venv``; ``HARNESS_HERMES_PYTHON`` points elsewhere).
Nothing here imports hermes: the child process is that venv's python running
the ``hermes_driver`` package (stdlib + hermes only, ``in_venv/``), which speaks the runner's child protocol
itself. So the process the runner kills at its ceiling, and whose sockets and threads
it counts, is hermes.

Each job gets a fresh ``AIAgent`` (one harmless registered tool, ``record_note``, that
records its arguments under the scratch ``HERMES_HOME`` -- ``hermes_driver/tool.py``; no
memory, no context files) in a scratch
``HERMES_HOME``, from a scrubbed environment plus the scenario's deadlines translated
to hermes's documented variables (:func:`hermes_env`; what hermes has no knob for keeps
hermes's default). A child that left nothing behind takes the next case (hermes's
imports cost ~1.3 s of CPU per child); the driver first puts the environment,
``HERMES_HOME`` and hermes's process-wide caches back as the warm-up left them
(``hermes_driver.fresh``), or declines reuse when it cannot vouch for them. Three hermes API modes run: ``chat`` is ``chat_completions``,
``responses`` is ``codex_responses``, ``messages`` is ``anthropic_messages``. A turn in
which hermes ran the tool with cut arguments is reported as raised
``ExecutedTruncatedToolCall``, which classification turns into the outcome
``executed_truncated_tool_call`` (expect that; every contract fails it).

Two entry points:

* :class:`HermesTarget` -- the runner's target (``harness run --target hermes``).
* :func:`run_hermes` -- one driver run outside the runner, for tests and the seed
  regressions (several turns on one agent, rebuilds in between); it returns the
  driver's full result (every turn, timestamps) or ``hung`` at ``timeout_s``.

When the venv is missing, :func:`unavailable_reason` says why; the target then reports
every job as skipped with that reason (tests skip, or fail when ``CI`` is set).

Not here: judging results (``harness.outcome``), hermes itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar

from harness.environment import Environment, read_environment, scrubbed
from harness.paths import CACHE_DIR
from harness.targets.base import (
    DEFAULT_API_KEY,
    CallResult,
    EventLog,
    Job,
    Target,
    TargetUnsupported,
)
from harness.targets.hermes.in_venv.hermes_driver.spec import (
    SETTING_ENV,
    UNMAPPED_SETTINGS,
    hermes_config,
    hermes_env,
)

__all__ = [
    "DEFAULT_HERMES_PYTHON",
    "DRIVER_PATH",
    "HERMES_MIN_CEILING_S",
    "HERMES_MIN_TIME_SCALE",
    "SETTING_ENV",
    "UNMAPPED_SETTINGS",
    "HermesCall",
    "HermesRun",
    "HermesTarget",
    "hermes_config",
    "hermes_env",
    "hermes_python",
    "run_hermes",
    "unavailable_reason",
    "venv_reason",
]

#: Where ``ci/setup`` installs hermes-agent (``HARNESS_HERMES_PYTHON`` overrides).
DEFAULT_HERMES_PYTHON = CACHE_DIR / "hermes-venv" / "bin" / "python"
#: The directory hermes's python runs (``python -I DRIVER_PATH``): its ``__main__.py`` and
#: the ``hermes_driver`` package, nothing else, so nothing of ours shadows hermes's modules.
DRIVER_PATH = Path(__file__).resolve().with_name("in_venv")
#: hermes's retry backoff (2 s, 4 s, jittered; 3 attempts) does not scale with
#: ``time_scale``: a failing call needs this long before hermes gives up on its own.
#: At its time-scale floor the slowest (messages_mid_stream_stall: three stalled
#: attempts) took 29-33 s quiet and over 45 s in a clean-clone CI run.
HERMES_MIN_CEILING_S = 60.0
#: hermes checks its stream deadlines from a watchdog that polls every 0.3 s. The
#: catalog's usual deadlines (5 s first byte and idle, 15 s stale) at the default 0.05
#: became 0.25 s and 0.75 s: at or under one poll, so outcomes raced the poll and a busy
#: machine (mismatches in clean-clone CI runs). At 0.2 they are 1 s and 3 s.
HERMES_MIN_TIME_SCALE = 0.2


class _ReuseSwitch:
    """``HermesTarget.reusable``: ``HARNESS_HERMES_REUSE`` read when the runner asks, so
    the same process can run the catalog with reuse and without."""

    def __get__(self, obj: object, owner: type | None = None) -> bool:
        return read_environment().hermes_reuse


class HermesTarget(Target):
    name = "hermes"
    apis = ("chat", "responses", "messages")
    min_ceiling_s: ClassVar[float] = HERMES_MIN_CEILING_S
    min_time_scale: ClassVar[float] = HERMES_MIN_TIME_SCALE
    #: Import and warm-up take ~1.4 s alone, but beside the third-party targets' start-ups
    #: (LiteLLM's proxy, langchain) the first hermes children of a run sent ``ready``
    #: after more than the default minute (2026-12-02: 11 cases lost that way in one
    #: run). Start-up is never a case's time, so waiting longer judges nothing looser.
    start_s: ClassVar[float] = 180.0
    #: A clean child takes the next case (the driver restores hermes's process-wide
    #: state before each job: ``hermes_driver.fresh``); ``HARNESS_HERMES_REUSE=0`` turns it off.
    reusable = _ReuseSwitch()  # type: ignore[assignment]
    #: Its warm child keeps hermes's activity-monitor thread, and every copy would share
    #: the warm-up's HERMES_HOME: never forked.
    forkable = False
    #: Each model call opens a connection of its own that lives ~10 ms (hermes's local
    #: probes reuse theirs; its chat calls do not): sampled on request_read, it was gone
    #: before the read in 2 of 10 repeats beside CPU hogs, and dead_peer_bound went from
    #: fail to not judged. The first model reply waits until its socket was read.
    posture_hold = True

    @classmethod
    def unavailable(cls) -> str | None:
        return unavailable_reason(read_environment())

    @classmethod
    def command(cls) -> list[str]:
        env = read_environment()
        if unavailable_reason(env) is not None:
            # The in-process child runs call(), which reports the reason as skipped.
            return super().command()
        return [str(hermes_python(env)), "-I", str(DRIVER_PATH), "--child"]

    def call(self, job: Job, log: EventLog) -> CallResult:
        raise TargetUnsupported(
            unavailable_reason(read_environment()) or "hermes driver not started"
        )


@dataclass(frozen=True, kw_only=True)
class HermesCall:
    """One driver run: ``turns`` user messages on one agent, optionally rebuilding its
    primary OpenAI client before turns 2..n. ``settings`` are reference-client deadlines
    in scenario seconds (``None`` = off), scaled by ``time_scale``; ``env`` adds raw
    ``HERMES_*`` variables on top."""

    base_url: str
    api: str = "chat"
    turns: Sequence[str] = ("Say something.",)
    rebuild_between_turns: bool = False
    settings: Mapping[str, Any] = field(default_factory=dict)
    time_scale: float = 1.0
    env: Mapping[str, str] = field(default_factory=dict)
    config: Mapping[str, Any] = field(default_factory=dict)
    model: str = "test-model"
    provider: str | None = None
    api_key: str = field(default=DEFAULT_API_KEY, repr=False)

    def __post_init__(self) -> None:
        if self.api not in HermesTarget.apis:
            raise ValueError(
                f"api: {self.api!r} is not valid; allowed: {', '.join(HermesTarget.apis)}"
            )
        if not self.turns or not all(isinstance(t, str) and t for t in self.turns):
            raise ValueError("turns: must be a non-empty sequence of non-empty strings")
        if not self.time_scale > 0:
            raise ValueError(f"time_scale: {self.time_scale!r} is not valid; allowed: a number > 0")

    def spec(self) -> dict[str, Any]:
        """The driver's JSON spec: every field, as JSON (contains the api key: never log it)."""
        plain = {f.name: getattr(self, f.name) for f in fields(self)}
        return {
            **plain,
            "turns": list(self.turns),
            "settings": dict(self.settings),
            "env": dict(self.env),
            "config": dict(self.config),
        }


@dataclass(frozen=True)
class HermesRun:
    """What one driver run did. ``result`` is the driver's JSON (None when ``hung`` or
    when the driver died); ``t_start``/``t_end`` are this process's ``time.monotonic()``."""

    hung: bool
    result: dict[str, Any] | None
    returncode: int | None
    stderr_tail: str
    t_start: float
    t_end: float

    @property
    def elapsed_s(self) -> float:
        return self.t_end - self.t_start

    @property
    def turns(self) -> list[dict[str, Any]]:
        return list((self.result or {}).get("turns") or [])

    @property
    def texts(self) -> list[str | None]:
        return [t.get("text") for t in self.turns]


def hermes_python(env: Environment | None = None) -> Path:
    """The hermes virtualenv's python: ``HARNESS_HERMES_PYTHON`` or the default."""
    env = env if env is not None else read_environment()
    return Path(env.hermes_python) if env.hermes_python else DEFAULT_HERMES_PYTHON


def unavailable_reason(env: Environment | None = None) -> str | None:
    """Why the hermes target cannot run here, or None when it can. Cheap: looks for the
    interpreter and hermes's ``run_agent`` module on disk, starts nothing."""
    python = hermes_python(env)
    return venv_reason(
        python,
        what="hermes-agent",
        setup="run ci/setup, or set HARNESS_HERMES_PYTHON",
        module="run_agent.py",
        missing=f"hermes-agent is not installed in {python.parent.parent} (no run_agent module)",
    )


def venv_reason(python: Path, *, what: str, setup: str, module: str, missing: str) -> str | None:
    """Why the virtualenv of ``python`` cannot run hermes (None: it can), from the disk
    only: no interpreter, one that is not executable, or no ``module`` in its
    site-packages (then ``missing`` says why)."""
    if not python.exists():
        return f"{what} virtualenv not found: {python} does not exist ({setup})"
    if not os.access(python, os.X_OK):
        return f"hermes-agent python {python} is not executable"
    venv = python.parent.parent
    if not any(venv.glob(f"lib/python3*/site-packages/{module}")):
        return missing
    return None


def run_hermes(
    call: HermesCall,
    *,
    timeout_s: float,
    environ: Mapping[str, str] | None = None,
    env: Environment | None = None,
) -> HermesRun:
    """Run the driver once in a child process and return what it reported.

    The child gets ``scrubbed(environ)`` (default: this process's environment) and a
    scratch ``HERMES_HOME`` removed afterwards. At ``timeout_s`` the child is killed and
    the run is ``hung``. Raises ``RuntimeError`` with the reason if hermes is unavailable.
    """
    reason = unavailable_reason(env)
    if reason is not None:
        raise RuntimeError(reason)
    child_env = scrubbed(os.environ if environ is None else environ)
    with tempfile.TemporaryDirectory(prefix="hermes-home-") as home:
        spec = {**call.spec(), "hermes_home": home}
        t_start = time.monotonic()
        proc = subprocess.Popen(
            [str(hermes_python(env)), "-I", str(DRIVER_PATH), "-"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=child_env,
            close_fds=True,
        )
        try:
            out, err = proc.communicate(json.dumps(spec).encode(), timeout=timeout_s)
            hung = False
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            hung = True
        t_end = time.monotonic()
    return HermesRun(
        hung=hung,
        result=None if hung else _last_json_line(out),
        returncode=None if hung else proc.returncode,
        stderr_tail=err.decode("utf-8", "replace")[-2000:],
        t_start=t_start,
        t_end=t_end,
    )


def _last_json_line(out: bytes) -> dict[str, Any] | None:
    for line in reversed(out.decode("utf-8", "replace").splitlines()):
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict):
            return data
    return None
