"""The hermes-agent target: the driver's pure parts everywhere, real hermes where installed.

Unit tests import the driver's modules in this venv (it is stdlib-only) and check the
setting -> environment mapping, spec validation and how a run becomes a protocol result.
Tests marked ``hermes`` run a real ``AIAgent`` from ``.cache/hermes-venv`` against the
fault server; they skip when that venv is missing, and fail instead when ``CI`` is set.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from harness.environment import Environment, scrubbed
from harness.faults import script_from_dict
from harness.live.sentinels import find_sentinels
from harness.outcome import classify
from harness.targets.hermes import (
    DRIVER_PATH,
    HermesCall,
    HermesTarget,
    hermes_python,
    run_hermes,
    unavailable_reason,
)
from harness.targets.hermes.in_venv.hermes_driver import spec as driver
from harness.targets.hermes.in_venv.hermes_driver.turns import protocol_result
from harness.targets.runtime.protocol import describe_exception, serve
from harness.targets.runtime.wellformed import problems

# --------------------------------------------------------------------------- unit


def test_hermes_env_scales_deadlines_and_writes_zero_for_disabled_watchdogs() -> None:
    env = driver.hermes_env(
        {"first_byte_s": 10, "stream_idle_s": None, "hard_ceiling_s": 40, "stale_call_s": None}, 0.5
    )
    assert env["HERMES_CODEX_TTFB_TIMEOUT_SECONDS"] == "5"
    assert env["HERMES_CODEX_EVENT_STALE_TIMEOUT_SECONDS"] == "0"
    assert env["HERMES_CODEX_HARD_TIMEOUT_SECONDS"] == "20"
    assert "HERMES_STREAM_STALE_TIMEOUT" not in env  # hermes has no off switch for it


def test_hermes_env_maps_each_deadline_to_the_variable_with_its_meaning() -> None:
    env = driver.hermes_env({"stream_idle_s": 5, "stale_call_s": 15}, 1.0)
    assert env == {
        "HERMES_CODEX_EVENT_STALE_TIMEOUT_SECONDS": "5",
        "HERMES_STREAM_STALE_TIMEOUT": "15",
    }


def test_hermes_env_leaves_settings_a_scenario_does_not_give_at_hermes_defaults() -> None:
    assert driver.hermes_env({}, 0.01) == {}
    assert driver.hermes_env({"connect_timeout_s": 3, "backoff_initial_s": 1}, 1.0) == {}


def test_hermes_env_never_scales_a_deadline_below_the_floor() -> None:
    env = driver.hermes_env({"first_byte_s": 1}, 0.001)
    assert float(env["HERMES_CODEX_TTFB_TIMEOUT_SECONDS"]) == driver.MIN_SCALED_S


def test_hermes_config_maps_max_attempts_to_api_max_retries() -> None:
    assert driver.hermes_config({"max_attempts": 1}) == {"agent": {"api_max_retries": 1}}
    assert driver.hermes_config({"max_attempts": True}) == {}
    assert driver.hermes_config({}) == {}


def test_parse_spec_rejects_an_unknown_api_naming_the_allowed_values() -> None:
    with pytest.raises(
        driver.SpecError, match=r"spec\.api='gemini' is not valid; allowed: .*responses"
    ):
        driver.parse_spec({"base_url": "http://127.0.0.1:1/v1", "api": "gemini", "turns": ["hi"]})


def test_parse_spec_runs_messages_in_anthropic_mode_against_the_server_root() -> None:
    spec = driver.parse_spec(
        {"base_url": "http://127.0.0.1:1/v1", "api": "messages", "turns": ["hi"]}
    )
    assert (spec["api_mode"], spec["base_url"]) == ("anthropic_messages", "http://127.0.0.1:1")


def test_parse_spec_rejects_missing_base_url_and_empty_turns() -> None:
    with pytest.raises(driver.SpecError, match="base_url"):
        driver.parse_spec({"turns": ["hi"]})
    with pytest.raises(driver.SpecError, match="turns"):
        driver.parse_spec({"base_url": "http://127.0.0.1:1/v1", "turns": []})


def test_spec_from_job_repeats_the_user_message_per_call_and_rebuilds_after_n() -> None:
    job = {
        "base_url": "http://127.0.0.1:1/v1",
        "api": "responses",
        "calls": 3,
        "rebuild_after": 2,
        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}],
        "settings": {"first_byte_s": 4},
        "time_scale": 0.25,
        "pause_s": 2,
    }
    spec = driver.spec_from_job(job, "/tmp/home")
    assert spec["turns"] == ["hi", "hi", "hi"]
    assert spec["rebuild_before"] == frozenset({2})
    assert spec["api_mode"] == "codex_responses"
    assert spec["env"]["HERMES_CODEX_TTFB_TIMEOUT_SECONDS"] == "1"
    assert spec["pause_s"] == 0.5  # scaled like every scenario duration


def test_spec_from_job_refuses_an_api_hermes_does_not_speak() -> None:
    with pytest.raises(driver.SpecError, match="hermes does not speak api='gemini'"):
        driver.spec_from_job({"base_url": "http://127.0.0.1:1/v1", "api": "gemini"}, "/tmp/h")


def _turn(index: int = 0, **fields: Any) -> dict[str, Any]:
    turn = {
        "index": index,
        "text": "fine.",
        "completed": True,
        "failed": False,
        "partial": False,
        "turn_exit_reason": "text_response(finish_reason=stop)",
        "error": None,
        "api_calls": 1,
        "exception": None,
        "elapsed_s": 0.1,
        "rebuild": None,
    }
    turn.update(fields)
    return turn


def _run(*turns: dict[str, Any]) -> dict[str, Any]:
    return {
        "hermes_version": "x",
        "api_mode": "chat_completions",
        "transport": {},
        "env": {},
        "turns": list(turns),
    }


def test_failed_turn_is_reported_as_returned_text_that_the_runner_calls_error_as_reply() -> None:
    text = "API call failed after 3 retries: Connection error."
    report = protocol_result(_run(_turn(text=text, failed=True, completed=False)))
    assert report["status"] == "returned"
    assert report["text"] == text
    outcome = classify(
        report,
        expected_text="fine.",
        alive=False,
        find_sentinel=lambda t: (find_sentinels(t) or [None])[0] and "hit",
    )
    assert outcome.kind == "error_as_reply"


def test_turn_without_reply_text_is_reported_as_hermes_no_reply_with_its_error() -> None:
    report = protocol_result(
        _run(
            _turn(
                text=None,
                completed=False,
                partial=True,
                error="Response remained truncated after 4 continuation attempts",
            )
        )
    )
    assert report["status"] == "raised"
    assert report["mro"] == ["HermesNoReply", "Exception"]
    assert "remained truncated" in report["message"]


def test_first_unclean_turn_of_several_decides_the_report() -> None:
    run = _run(_turn(0), _turn(1, text="API call failed after 3 retries: x", failed=True), _turn(2))
    report = protocol_result(run)
    assert report["text"].startswith("API call failed")
    assert report["message"] == "turn 2/3: "
    assert report["texts"] == ["fine.", "API call failed after 3 retries: x", "fine."]


def test_exception_raised_by_hermes_is_reported_with_its_mro() -> None:
    exc = {"error": "TimeoutError", "mro": ["TimeoutError", "OSError", "Exception"]}
    exc |= {"message": "stale", "causes": ["OSError: reset"]}
    report = protocol_result(_run(_turn(exception=exc, text=None)))
    assert report["status"] == "raised"
    assert report["mro"] == ["TimeoutError", "OSError", "Exception"]
    assert report["causes"] == ["OSError: reset"]


def test_hermes_results_pass_the_protocol_contract_for_every_turn_shape() -> None:
    """hermes's result builder, through the shared loop, for each way a turn ends."""
    try:
        raise TimeoutError("stale") from OSError("reset")
    except TimeoutError as exc:
        raised = describe_exception(exc)
    shapes = [
        _turn(),
        _turn(text="API call failed after 3 retries", failed=True),
        _turn(text=None, completed=False, error="no reply " * 200),
        _turn(text=None, exception=raised),
    ]
    for shape in shapes:
        out = io.StringIO()
        commands = io.StringIO(json.dumps({"cmd": "run", "job": {}}) + "\n")
        run = _run(shape)

        def handle(job: dict[str, Any], started: Any, run: Any = run) -> dict[str, Any]:
            started()
            return protocol_result(run)

        assert serve(out, commands, handle, reuse=False) == 0
        messages = [json.loads(line) for line in out.getvalue().splitlines()]
        assert [m["event"] for m in messages] == ["ready", "started", "result"]
        for message in messages:
            assert problems(message) == [], message
    assert raised["mro"] == ["TimeoutError", "OSError", "Exception"]
    assert raised["causes"] == ["OSError: reset"]


def test_driver_answers_a_bad_spec_with_one_json_line_naming_the_field() -> None:
    # The spec is checked before hermes is imported, so any python can run this.
    proc = subprocess.run(
        [sys.executable, "-I", str(DRIVER_PATH), "-"],
        input=b'{"base_url": "http://127.0.0.1:1/v1", "api": "gemini", "turns": ["hi"]}',
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode == 2
    (line,) = proc.stdout.decode().splitlines()
    result = json.loads(line)
    assert result["ok"] is False and result["stage"] == "spec"
    assert "spec.api='gemini' is not valid" in result["exception"]["message"]


def test_unavailable_reason_names_the_missing_interpreter(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "bin" / "python"
    reason = unavailable_reason(Environment(hermes_python=str(missing)))
    assert reason is not None and str(missing) in reason and "HARNESS_HERMES_PYTHON" in reason


def test_unavailable_reason_names_a_venv_without_hermes(tmp_path: Path) -> None:
    python = tmp_path / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\n")
    python.chmod(0o755)
    reason = unavailable_reason(Environment(hermes_python=str(python)))
    assert reason is not None and "not installed" in reason


def test_hermes_call_rejects_an_unknown_api() -> None:
    with pytest.raises(
        ValueError, match="api: 'gemini' is not valid; allowed: chat, responses, messages"
    ):
        HermesCall(base_url="http://127.0.0.1:1/v1", api="gemini")


# --------------------------------------------------------------------------- real hermes


def _server(rules: list[dict[str, Any]] | None = None, **script: Any) -> Any:
    from harness.server import FaultServer

    return FaultServer(script_from_dict({"rules": rules or [], **script}))


def _api_records(srv: Any) -> list[Any]:
    # hermes also probes a local base URL for its server type and pricing: not API calls.
    return [r for r in srv.requests() if r.api in ("chat", "responses")]


@pytest.mark.hermes
@pytest.mark.timeout(120)
@pytest.mark.parametrize("api", ["chat", "responses"])
def test_three_sequential_chats_across_client_rebuilds_all_succeed(
    hermes_ready: None, api: str
) -> None:
    with _server() as srv:
        run = run_hermes(
            HermesCall(
                base_url=srv.base_url,
                api=api,
                turns=("one", "two", "three"),
                rebuild_between_turns=True,
            ),
            timeout_s=90,
        )
        records = _api_records(srv)
    assert not run.hung, run.stderr_tail
    assert [t["rebuild"] and t["rebuild"]["replaced"] for t in run.turns] == [None, True, True]
    assert len(records) == 3
    for turn, record in zip(run.turns, records, strict=True):
        assert turn["text"] == record.expected_text
        assert not find_sentinels(turn["text"])
        assert turn["completed"] and not turn["failed"]


@pytest.mark.hermes
@pytest.mark.timeout(120)
def test_provider_drop_mid_response_does_not_hang_the_agent(hermes_ready: None) -> None:
    # Every attempt is cut by a FIN after three events: hermes must come back, not hang.
    with _server([{"fault": {"phase": "event:3", "action": "fin"}}]) as srv:
        run = run_hermes(HermesCall(base_url=srv.base_url, api="chat"), timeout_s=90)
        records = _api_records(srv)
    assert not run.hung, run.stderr_tail
    (turn,) = run.turns
    assert not turn["completed"]  # never a finished turn from a cut stream
    assert turn["text"] != records[0].expected_text
    assert 1 <= len(records) <= 4


@pytest.mark.hermes
@pytest.mark.timeout(60)
def test_chat_stall_outlives_hermes_stale_detector(hermes_ready: None) -> None:
    """Finding (hermes-agent 0.19.0): a mid-stream stall in chat mode hangs the agent.

    The stale-stream detector fires every ``HERMES_STREAM_STALE_TIMEOUT`` seconds, but its
    socket abort walks ``http_client._transport`` while hermes's own httpx client routes
    through ``mounts``: it shuts down 0 sockets and the worker stays blocked in recv. A
    working abort would end this call within a few seconds (4 continuation attempts).
    """
    with _server([{"fault": {"phase": "event:3", "action": "hang"}}]) as srv:
        run = run_hermes(
            HermesCall(base_url=srv.base_url, api="chat", settings={"stale_call_s": 0.5}),
            timeout_s=15,
        )
    assert run.hung
    assert run.elapsed_s >= 15


@pytest.mark.hermes
@pytest.mark.timeout(90)
def test_driver_speaks_the_runner_child_protocol(hermes_ready: None) -> None:
    command = HermesTarget.command()
    assert command[:2] == [str(hermes_python()), "-I"] and command[2] == str(DRIVER_PATH)
    with _server() as srv:
        job = {
            "base_url": srv.base_url,
            "api": "responses",
            "calls": 2,
            "rebuild_after": 1,
            "messages": [{"role": "user", "content": "hi"}],
            "settings": {"first_byte_s": 5},
            "time_scale": 1.0,
        }
        proc = subprocess.run(
            command,
            input=(json.dumps({"cmd": "run", "job": job}) + '\n{"cmd": "exit"}\n').encode(),
            capture_output=True,
            env=scrubbed({"PATH": "/usr/bin:/bin"}),
            timeout=80,
            check=False,
        )
        records = _api_records(srv)
    messages = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    # ready again after the result: the child would take another job ("exit" ends it)
    assert [m["event"] for m in messages] == ["ready", "started", "result", "ready"]
    result = messages[2]
    assert result["status"] == "returned", result
    assert result["texts"] == [r.expected_text for r in records]
    assert result["details"]["env"]["HERMES_CODEX_TTFB_TIMEOUT_SECONDS"] == "5"
    assert [e[1] for e in result["events"]] == [
        "agent_built",
        "turn_start",
        "turn_end",
        "rebuild",
        "turn_start",
        "turn_end",
    ]
    assert messages[0]["t"] <= result["t"] <= time.monotonic()
    # the call starts once AIAgent() is built: its set-up is not counted against the case
    assert result["events"][0][0] <= messages[1]["t"] <= result["events"][1][0]


@pytest.mark.hermes
@pytest.mark.timeout(180)
@pytest.mark.parametrize(
    "scenario",
    ["sequential_calls_across_rebuild", "responses_truncated_after_text", "html_502_page"],
)
def test_catalog_scenario_matches_its_recorded_hermes_outcome(
    hermes_ready: None, scenario: str
) -> None:
    from harness.paths import CATALOG_DIR
    from harness.runner import RunSettings, run_case
    from harness.scenario import load_scenario
    from harness.server import FaultServer

    loaded = load_scenario(CATALOG_DIR / f"{scenario}.toml")
    with FaultServer() as srv:
        result = run_case(loaded, "hermes", server=srv, settings=RunSettings(jobs=1))
    assert result.matched, (
        f"{scenario}: expected {result.expected}, got {result.outcome.label}: {result.message}"
    )


def test_every_job_pins_the_context_length_and_turns_the_toolchain_probe_off(tmp_path):
    """No request or subprocess that only the system prompt's content needs: a fresh
    child's first call waited 4-5 s on hermes's python3/pip probe before its request."""
    import json

    from harness.targets.hermes.in_venv.hermes_driver import turns as hermes_turns

    hermes_turns.prepare_home(str(tmp_path), {"agent": {"api_max_retries": 2}})
    config = json.loads((tmp_path / "config.yaml").read_text())
    assert config["agent"] == {"environment_probe": False, "api_max_retries": 2}
    assert (
        config["model"]["context_length"] == hermes_turns.PINNED_CONFIG["model"]["context_length"]
    )
    hermes_turns.prepare_home(str(tmp_path), {"agent": {"environment_probe": True}})
    assert json.loads((tmp_path / "config.yaml").read_text())["agent"]["environment_probe"] is True
