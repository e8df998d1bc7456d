"""The child-process protocol: ready, run, started, result, exit -- with real processes."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from harness.targets import is_target, load_target
from harness.targets.base import Job
from harness.targets.runtime.child import describe_exception
from harness.targets.runtime.process import ChildFailed, TargetProcess

TESTS_DIR = str(Path(__file__).resolve().parents[1])


def spawn(name: str, environ: dict[str, str] | None = None) -> TargetProcess:
    env = dict(os.environ) if environ is None else environ
    return TargetProcess.spawn(
        f"runner.targets_double:{name}", environ=env, extra_env={"PYTHONPATH": TESTS_DIR}
    )


def run_job(child: TargetProcess) -> dict:
    child.wait_ready(time.monotonic() + 30)
    child.run(Job(base_url="http://127.0.0.1:9/v1").to_dict())
    started = child.wait_started(time.monotonic() + 30)
    if started["event"] == "result":
        return started
    result = child.wait_result(time.monotonic() + 30)
    child.finish(time.monotonic() + 10)
    return result


@pytest.mark.timeout(60)
def test_child_starts_from_a_scrubbed_environment():
    environ = {
        **os.environ,
        "HERMES_CODEX_TTFB_TIMEOUT_SECONDS": "1",
        "HTTP_PROXY": "http://proxy:3128",
        "OPENAI_API_KEY": "sk-not-for-children",
        "HARNESS_TEST_MARKER": "kept",
    }
    result = run_job(spawn("EnvTarget", environ))
    names = json.loads(result["text"])
    assert "HARNESS_TEST_MARKER" in names
    for gone in ("HERMES_CODEX_TTFB_TIMEOUT_SECONDS", "HTTP_PROXY", "OPENAI_API_KEY"):
        assert gone not in names
    assert result["events"][0][1] == "env"
    assert isinstance(result["details"]["pid"], int)


@pytest.mark.timeout(60)
def test_raised_error_reports_the_last_attempt_and_both_mros():
    result = run_job(spawn("RaisingTarget"))
    assert result["status"] == "raised"
    assert result["error"] == "LookupError:TimeoutError"
    assert (
        "LookupError" in result["mro"]
        and "TimeoutError" in result["mro"]
        and "OSError" in result["mro"]
    )
    assert result["attempt_errors"] == ["ValueError", "TimeoutError"]


@pytest.mark.timeout(60)
def test_unsupported_job_is_reported_as_skipped():
    result = run_job(spawn("SkipTarget"))
    assert result["status"] == "skipped" and "not today" in result["message"]


@pytest.mark.timeout(60)
def test_hung_child_is_killed_and_reaped():
    child = spawn("EnvTarget")
    child.wait_ready(time.monotonic() + 30)
    # No job sent: the child blocks reading stdin, so no result can come.
    assert child.wait_result(time.monotonic() + 0.2) is None
    pid = child.pid
    child.kill()
    assert (
        not Path(f"/proc/{pid}").exists() or "zombie" not in Path(f"/proc/{pid}/status").read_text()
    )


@pytest.mark.timeout(60)
def test_unloadable_target_is_a_clear_error_before_any_process_starts():
    with pytest.raises(ValueError, match="cannot be loaded"):
        TargetProcess.spawn("runner.no_such_module:Nope", environ=dict(os.environ))


@pytest.mark.timeout(60)
def test_writing_to_a_dead_child_raises_child_failed():
    child = spawn("EnvTarget")
    child.wait_ready(time.monotonic() + 30)
    child.kill()
    with pytest.raises(ChildFailed):
        child.run({"base_url": "http://127.0.0.1:9/v1"})


def test_describe_exception_keeps_reference_fields():
    exc = RuntimeError("x" * 2000)
    exc.deadline = "first_byte_s"  # type: ignore[attr-defined]
    exc.attempt = 2  # type: ignore[attr-defined]
    out = describe_exception(exc)
    assert out["deadline"] == "first_byte_s" and out["attempt"] == 2
    assert len(out["message"]) == 500


def test_target_names_registered_mutant_and_module_paths():
    assert is_target("reference") and is_target("openai-sdk") and is_target("mutant:no-keepalive")
    assert is_target("pkg.mod:Cls") and not is_target("curl")
    with pytest.raises(ValueError, match="allowed: .*openai-sdk"):
        load_target("curl")
    assert load_target("openai-sdk").name == "openai-sdk"
