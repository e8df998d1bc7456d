"""A reused hermes child answers a job as a fresh one would.

Unit tests check the parts that run anywhere (the protocol's way to decline reuse, the
switch, ``hermes_fresh`` restoring the environment and ``HERMES_HOME``). Tests marked
``hermes`` run real children from ``.cache/hermes-venv`` through the runner's own
:class:`TargetProcess`: one job that changes state (its own deadlines in the
environment, a failing call with retries), then a second job, compared with the same
second job in a fresh child.
"""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from harness.environment import read_environment
from harness.faults import script_from_dict
from harness.leaks import leaks_between, snapshot
from harness.targets.hermes import HermesTarget
from harness.targets.hermes.in_venv.hermes_driver import fresh as hermes_fresh
from harness.targets.runtime.process import TargetProcess
from harness.targets.runtime.protocol import serve
from harness.targets.runtime.wellformed import problems

# --------------------------------------------------------------------------- unit


def test_a_handler_declines_reuse_and_the_child_then_waits_for_exit() -> None:
    out = io.StringIO()
    run = json.dumps({"cmd": "run", "job": {}}) + "\n"
    commands = io.StringIO(run + run)  # a second job is never read

    def handle(job: dict[str, Any], started: Any) -> dict[str, Any]:
        started()
        return {"status": "returned", "text": "t", "texts": ["t"], "reuse": False}

    assert serve(out, commands, handle, reuse=True) == 0
    messages = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [m["event"] for m in messages] == ["ready", "started", "result"]
    assert messages[-1]["reuse"] is False and problems(messages[-1]) == []
    assert problems({**messages[-1], "reuse": True}) != []


def test_reuse_is_on_unless_harness_hermes_reuse_is_0(monkeypatch: pytest.MonkeyPatch) -> None:
    assert read_environment({}).hermes_reuse is True
    assert read_environment({"HARNESS_HERMES_REUSE": "0"}).hermes_reuse is False
    monkeypatch.setenv("HARNESS_HERMES_REUSE", "0")
    assert HermesTarget.reusable is False
    monkeypatch.setenv("HARNESS_HERMES_REUSE", "1")
    assert HermesTarget.reusable is True


def test_baseline_restores_the_environment_and_home_but_keeps_open_logs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / "logs").mkdir(parents=True)
    (home / "config.yaml").write_text("{}")
    (home / "sessions").mkdir()
    monkeypatch.delenv("HERMES_STREAM_STALE_TIMEOUT", raising=False)
    baseline = hermes_fresh.Baseline(str(home))
    try:
        os.environ["HERMES_STREAM_STALE_TIMEOUT"] = "0.5"  # a job's deadline
        (home / "config.yaml").write_text('{"agent": {"api_max_retries": 1}}')
        (home / "sessions" / "request_dump.json").write_text("{}")
        (home / "tool_calls.jsonl").write_text("{}\n")
        (home / "logs" / "agent.log").write_text("a line\n")
        baseline.restore()
        assert "HERMES_STREAM_STALE_TIMEOUT" not in os.environ
        assert (home / "config.yaml").read_text() == "{}"
        assert sorted(p.name for p in home.rglob("*")) == [
            "agent.log",
            "config.yaml",
            "logs",
            "sessions",
        ]
    finally:
        baseline.close()


def test_reuse_is_declined_where_hermes_state_cannot_be_vouched_for(tmp_path: Path) -> None:
    baseline = hermes_fresh.Baseline(str(tmp_path))  # no hermes here: entries missing
    try:
        returned = {"status": "returned", "text": "t"}
        assert "not audited" in (hermes_fresh.declines_reuse(returned, baseline) or "")
        assert hermes_fresh.declines_reuse({"status": "skipped"}, baseline) is None
        baseline.missing.clear()
        assert hermes_fresh.declines_reuse(returned, baseline) is None
        interrupted = {
            "status": "raised",
            "error": "KeyboardInterrupt",
            "mro": ["KeyboardInterrupt"],
        }
        assert "not an Exception" in (hermes_fresh.declines_reuse(interrupted, baseline) or "")
        assert hermes_fresh.declines_reuse(returned, baseline, setup_failed=True)
    finally:
        baseline.close()


# --------------------------------------------------------------------------- real hermes


#: Job 1 changes what a reused child carries: its own deadlines in the environment and
#: a call that fails with retries (jitter counter, request dumps in HERMES_HOME).
_FAILING = {"rules": [{"fault": {"phase": "request", "action": "status", "code": 500}}]}
_JOB1_SETTINGS = {"first_byte_s": 5, "stale_call_s": 30, "read_timeout_s": 40}


def _job(base_url: str, settings: dict[str, Any]) -> dict[str, Any]:
    return {
        "base_url": base_url,
        "api": "chat",
        "messages": [{"role": "user", "content": "hi"}],
        "settings": settings,
        "time_scale": 1.0,
        "calls": 1,
    }


def _run_job(child: TargetProcess, script: dict[str, Any], settings: dict[str, Any]) -> Any:
    """One job on ``child`` against a fresh server: (result, request paths, leaks)."""
    from harness.server import FaultServer

    with FaultServer(script_from_dict(script)) as srv:
        child.wait_ready(time.monotonic() + 90)
        baseline = snapshot(child.pid)
        child.run(_job(srv.base_url, settings))
        child.wait_started(time.monotonic() + 60)
        result = child.wait_result(time.monotonic() + 60)
        assert result is not None, child.stderr_tail()
        paths = [r.path for r in srv.requests()]
        expected = [r.expected_text for r in srv.requests() if r.api == "chat"]
    return result, paths, expected, leaks_between(baseline, snapshot(child.pid))


def _fresh_child() -> TargetProcess:
    return TargetProcess.spawn("hermes", environ=os.environ)


def _summary(result: dict[str, Any]) -> dict[str, Any]:
    details = result["details"]
    turns = [{k: t[k] for k in ("completed", "failed", "api_calls")} for t in details["turns"]]
    return {
        "status": result["status"],
        "reuse": result.get("reuse"),
        "env": details["env"],
        "environ": details["environ"],
        "transport": details["transport"],
        "turns": turns,
    }


@pytest.mark.hermes
@pytest.mark.timeout(240)
def test_a_reused_child_answers_like_a_fresh_one_after_a_job_that_changed_state(
    hermes_ready: None,
) -> None:
    reused = _fresh_child()
    fresh = _fresh_child()
    try:
        first, _, _, leaks = _run_job(reused, _FAILING, _JOB1_SETTINGS)
        assert first["text"].startswith("API call failed"), first
        assert leaks is not None and leaks.total == 0  # the runner would reuse it
        again, again_paths, again_expected, _ = _run_job(reused, {}, {})
        new, new_paths, new_expected, _ = _run_job(fresh, {}, {})
    finally:
        reused.finish(time.monotonic() + 5)
        fresh.finish(time.monotonic() + 5)
    assert again["text"] == again_expected[-1] and new["text"] == new_expected[-1]
    assert _summary(again) == _summary(new)
    # the same requests, probes included: no endpoint cache survived the first job
    assert again_paths == new_paths


@pytest.mark.hermes
@pytest.mark.timeout(240)
def test_environment_of_one_job_does_not_leak_into_the_next(hermes_ready: None) -> None:
    child = _fresh_child()
    try:
        first, _, _, _ = _run_job(child, {}, _JOB1_SETTINGS)
        second, _, _, _ = _run_job(child, {}, {"stale_call_s": 20})
    finally:
        child.finish(time.monotonic() + 5)
    assert first["details"]["environ"] == {
        "HERMES_CODEX_TTFB_TIMEOUT_SECONDS": "5",
        "HERMES_STREAM_STALE_TIMEOUT": "30",
        "HERMES_STREAM_READ_TIMEOUT": "40",
    }
    assert second["details"]["environ"] == {"HERMES_STREAM_STALE_TIMEOUT": "20"}
    assert second.get("reuse") is None  # hermes 0.19.0's state is audited: reuse stays on
