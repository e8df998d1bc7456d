"""Run hermes-agent chat turns from a JSON call spec and print one JSON result line.

This module runs *inside the hermes-agent virtualenv*, in a child process started by
``harness.targets.hermes`` (``python -I harness/targets/hermes/in_venv``). It imports
only the standard library, hermes-agent itself and its own package: the harness package
and its dependencies are not importable there.

It is not a test and not a client: it builds one real ``run_agent.AIAgent`` (no
tools, no memory, no context files, a scratch ``HERMES_HOME``) and runs the spec's
turns on it, optionally rebuilding the agent's primary OpenAI client between turns
through ``_replace_primary_openai_client`` (the entry point of the #10933
regression). Whatever hermes returns is reported verbatim, including error texts it
returns as if they were replies ("API call failed after 3 retries: ..."); judging
them is the runner's job (``harness.outcome``), not the driver's.

Usage::

    python -I harness/targets/hermes/in_venv SPEC.json   # or "-": one spec in, one JSON line out
    python -I harness/targets/hermes/in_venv --child     # the runner's child protocol (see below)
    python -I harness/targets/hermes/in_venv --child --guard   # the same, hermes on harness.guard

``--child`` speaks the JSON-lines protocol of :mod:`harness.targets.base` on stdout
(ready / run / started / result / exit), so the runner starts this script as the
``hermes`` target's child process (``HermesTarget.command``): a hung hermes is the
process the runner kills and whose sockets it counts. The child takes job after job
(the runner reuses one that left no leak): before each, ``fresh.Baseline``
restores what the warm-up left -- ``os.environ`` (a job's ``env`` goes on top of the
base environment, never on top of the last job's), ``HERMES_HOME``'s files and the
module-level caches and counters hermes keeps across agents -- and every job builds a
new ``AIAgent``, so per-agent state (the stale-stream streak, rate-limit state, clients)
starts fresh. After a job that raised in hermes's setup, or a ``BaseException`` that is
not an ``Exception``, the child declines reuse (``"reuse": false`` in its result). A job's ``settings`` (the
scenario's reference-client deadlines, in scenario seconds) become hermes's own
environment variables, times the job's ``time_scale`` (see :data:`SETTING_ENV`);
settings a scenario does not give keep hermes's defaults. The result reports the
first turn that did not end cleanly (else the last): an exception hermes raised is
``raised``; a turn hermes marks ``failed`` is ``returned`` with the error text hermes
handed back as its reply, which the runner's sentinel check classifies as
``error_as_reply``; a turn with no reply text at all (hermes returned
``final_response=None`` plus an ``error`` field) is raised ``HermesNoReply``. hermes's
own flags travel in ``details``.

Spec (JSON object; only ``base_url`` is required)::

    base_url      "http://127.0.0.1:PORT/v1"
    api_key       any string (default "sk-harness")
    model         default "test-model"
    api           "chat" | "responses"  (hermes api_mode chat_completions |
                  codex_responses; "chat_completions"/"codex_responses" also accepted)
    provider      optional hermes provider id (e.g. "openai-codex"); default none
    turns         list of user messages (strings or {"message": str}); or
    messages      chat messages; the user messages become the turns
    rebuild_between_turns  bool: call _replace_primary_openai_client before turns 2..n
    rebuild_after int: rebuild once, after this many turns (the runner's Job.rebuild_after)
    pause_s       seconds to wait between turns (the runner's Job.pause_s, already scaled)
    env           {"NAME": "value"} set before hermes is imported (watchdog timeouts)
    hermes_home   scratch directory to use (default: a fresh temporary directory)
    settings      reference-client settings in scenario seconds (see SETTING_ENV)
    time_scale    factor applied to ``settings`` (default 1.0)
    config        mapping merged into HERMES_HOME/config.yaml (written as JSON, which
                  YAML reads); default pins model.context_length so hermes sends no
                  context-length probe (/api/show) to the fault server

Result (one line on the real stdout; everything hermes prints goes to stderr)::

    {"driver": 1, "ok": bool, "hermes_version": str, "api_mode": str,
     "turns": [{"index", "message", "text", "completed", "failed", "partial",
                "interrupted", "turn_exit_reason", "error", "failure_reason",
                "api_calls", "exception", "rebuild", "t_start", "t_end",
                "elapsed_s"}],
     "exception": null | {"error", "mro", "message", "causes"},   # setup failure
     "transport": {...},   # the primary client's httpx settings, for the record
     "env": {...},         # the HERMES_* variables this run set
     "environ": {...},     # the HERMES_* variables hermes saw (but HERMES_HOME, _SESSION_ID)
     "t_start", "t_end", "elapsed_s"}

A turn's ``exception`` has the same fields: every exception is described by
``protocol.describe_exception``, the one the runner's child protocol uses.

The rest of the driver is its package's other modules (see ``hermes_driver``):
``protocol`` (the child protocol, shared with ``harness.targets.runtime.child``),
``spec`` (the spec and the settings mapping), ``turns`` (running hermes) and ``fresh``
(what is reset between jobs, and why).

Timestamps are ``time.monotonic()`` (CLOCK_MONOTONIC: comparable with the fault
server's timeline across processes on Linux).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any, TextIO

from . import deps, fresh, guard_hook, protocol, turns
from . import spec as spec_mod


def main(argv: list[str]) -> int:
    # Keep the real stdout for our one result line; hermes prints spinners and
    # status lines to stdout, so fd 1 is pointed at stderr for the rest of the run.
    result_out = protocol.claim_stdout()
    if argv[1:] in (["--child"], ["--child", "--guard"]):
        # HERMES_HOME and its baseline copy live in one directory of this child's: a
        # child killed at the case's ceiling never gets to its finally, so each child
        # first removes the directories of children that are gone.
        scratch = _own_scratch()
        home = tempfile.mkdtemp(prefix="hermes-home-", dir=scratch)
        try:
            return _child(result_out, home, guard="--guard" in argv)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    t_start = time.monotonic()
    try:
        spec = spec_mod.parse_spec(_load_spec(argv, spec_mod.SpecError))
    except spec_mod.SpecError as exc:
        protocol.send(result_out, turns.failure(exc, t_start, kind="spec"))
        return 2
    scratch = None
    if spec["hermes_home"] is None:
        scratch = tempfile.mkdtemp(prefix="hermes-home-")
        spec["hermes_home"] = scratch
    try:
        result = turns.run_spec(spec, t_start=t_start)
    except BaseException as exc:  # report, never a traceback at the caller
        result = turns.failure(exc, t_start, kind="setup")
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    protocol.send(result_out, result)
    return 0


#: The scratch directories of ``--child`` drivers: this prefix and the owner's pid.
SCRATCH_PREFIX = "hermes-harness-child-"


def _own_scratch(tmp: str | None = None) -> str:
    """A new scratch directory for this process (``SCRATCH_PREFIX`` + its pid), after
    removing those whose owner process is gone (killed before it could clean up)."""
    tmp = tmp or tempfile.gettempdir()
    for name in os.listdir(tmp):
        if not name.startswith(SCRATCH_PREFIX):
            continue
        pid = name[len(SCRATCH_PREFIX) :]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(os.path.join(tmp, name), ignore_errors=True)
    path = os.path.join(tmp, f"{SCRATCH_PREFIX}{os.getpid()}")
    shutil.rmtree(path, ignore_errors=True)  # a gone process's, whose pid this one reuses
    os.makedirs(path, mode=0o700)
    return path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def _child(proto: TextIO, home: str, *, guard: bool = False) -> int:
    """The runner's child protocol: prepare, ``ready``, jobs until ``exit``.

    Each job starts from the state the warm-up left (``fresh.Baseline``), so a
    reused child answers it as a fresh one would; a job after which that cannot be
    vouched for declines reuse (the child then exits after it). With ``guard``
    (``hermes+guard``), hermes's clients are built on ``harness.guard`` through its
    ``HERMES_HTTP_CLIENT_FACTORY`` hook (``guard_hook``), with each job's deadlines."""
    missing = deps.missing_line()
    if missing is not None:  # hermes would pip-install it mid-case: refuse, in one line
        protocol.send(proto, {"event": "fatal", "error": "HermesWouldInstall", "message": missing})
        return 1
    hook = guard_hook if guard else None
    try:
        if hook is not None:
            hook.install()  # before the warm-up: the guard's imports are in the baseline
        turns.prepare_home(home, {})
        os.environ["HERMES_HOME"] = home
        turns.warm_up()
        baseline = fresh.Baseline(home)
    except BaseException as exc:  # a hermes that cannot start is reported, not a traceback
        protocol.fatal(proto, exc)
        return 1

    def handle(job: dict[str, Any], started: Callable[[], None]) -> dict[str, Any]:
        try:
            spec = spec_mod.spec_from_job(job, home)
        except (spec_mod.SpecError, ValueError, KeyError, TypeError) as exc:
            return {"status": "skipped", "message": str(exc)}
        baseline.restore()
        if hook is not None:
            hook.configure(spec["settings"], spec["time_scale"])
        turns.prepare_home(home, spec["config"])
        os.environ.update(spec["env"])
        events: list[list[Any]] = []

        def mark(kind: str, detail: str = "") -> None:
            events.append([time.monotonic(), kind, detail])

        setup_failed = False
        try:
            # the call starts once the agent is built (a crash before: a result, no start)
            run = turns.run_turns(spec, t_start=time.monotonic(), on_event=mark, on_built=started)
            report = turns.protocol_result(run)
        except BaseException as exc:  # a crash in AIAgent() itself is the data too
            report = {"status": "raised", **protocol.describe_exception(exc)}
            setup_failed = True
        report["events"] = events
        reason = fresh.declines_reuse(report, baseline, setup_failed=setup_failed)
        if reason is not None:
            report["reuse"] = False
            report.setdefault("details", {})["reuse_declined"] = reason
        return report

    try:
        return protocol.serve(proto, sys.stdin, handle, reuse=True)
    finally:
        baseline.close()


def _load_spec(argv: list[str], error: type[Exception]) -> Any:
    if len(argv) != 2:
        raise error("usage: python -I harness/targets/hermes/in_venv SPEC.json | -")
    try:
        if argv[1] == "-":
            return json.load(sys.stdin)
        with open(argv[1], encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, json.JSONDecodeError) as exc:
        raise error(f"cannot read spec {argv[1]!r}: {exc}") from exc
