"""``command:`` as a full citizen (issue 35): a program told the time scale and its
deadlines, reporting its error kind, deadline and attempts by the line protocol, given
arguments, and declaring its APIs anywhere in the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.runner import RunSettings, run_case
from harness.scenario import scenario_from_dict
from harness.targets.base import Job
from harness.targets.clients.command import declared_apis, load_command_target, program_env
from harness.targets.clients.command_protocol import parse_output

PROGRAM = Path(__file__).resolve().parent / "programs" / "protocol_chat.py"
TARGET = f"command:{PROGRAM}"
WATCHDOG = {"first_byte_s": 5, "stream_idle_s": 1, "stale_call_s": 15, "hard_ceiling_s": 40}


def make(name: str, target: str = TARGET, **fields) -> object:
    return scenario_from_dict(
        {"name": name, "summary": name, "watchdog": WATCHDOG, **fields}, targets=[target]
    )


def settings(scale: float) -> RunSettings:
    return RunSettings(time_scale=scale, reuse_children=False, min_ceiling_s=30.0)


@pytest.mark.timeout(120)
def test_a_healthy_stream_is_ok_and_its_attempts_are_the_programs_count(server):
    # an idle deadline of 0.5 s real: a healthy stream must not meet it on a loaded worker
    healthy = make("healthy", watchdog={**WATCHDOG, "stream_idle_s": 10})
    result = run_case(healthy, TARGET, server=server, settings=settings(0.05))
    assert result.outcome.kind == "ok", result.message
    assert result.attempts == 1 and result.requests == 1
    assert result.verdict == "pass", result.failed_checks


@pytest.mark.timeout(120)
@pytest.mark.parametrize("scale", [0.2, 1.0])
def test_a_stall_is_the_error_kind_the_program_printed_at_its_scaled_deadline(server, scale):
    s = make("stall", script={"rules": [{"fault": {"phase": "event:3", "action": "hang"}}]})
    result = run_case(s, TARGET, server=server, settings=settings(scale))
    assert result.outcome.kind == "error", result.message
    assert result.outcome.error == "StreamIdleTimeout"
    assert "CommandError" in result.outcome.mro
    # the deadline it was handed is the scenario's 1 s, times the run's scale
    assert f"no event for {1.0 * scale:g} s (time scale {scale:g})" in result.message


@pytest.mark.timeout(120)
def test_a_deadline_it_fires_on_a_slow_but_alive_stream_is_a_false_kill(server):
    # every event 3 scenario seconds apart, its idle deadline 1: alive, and killed
    s = make("slow_alive", script={"events": 4, "event_interval_s": 3.0})
    result = run_case(s, TARGET, server=server, settings=settings(0.1))
    assert result.outcome.kind == "false_kill", result.message
    assert result.outcome.error == "StreamIdleTimeout"
    assert "no_false_kill" in result.failed_checks


@pytest.mark.timeout(120)
def test_arguments_reach_the_program_and_its_printed_kind_wins_over_exit_status(server):
    target = f"command:{PROGRAM} --fail-as 'ProviderOverloaded'"
    result = run_case(make("told", target), target, server=server, settings=settings(0.05))
    assert result.outcome.kind == "error" and result.outcome.error == "ProviderOverloaded"
    assert "told to by its arguments" in result.message


def test_arguments_are_split_as_a_shell_would_and_a_bad_quote_is_one_line():
    cls = load_command_target(f"command:{PROGRAM} --flag 'a b'")
    assert cls.path == str(PROGRAM) and cls.args == ("--flag", "a b")
    with pytest.raises(ValueError, match="No closing quotation"):
        load_command_target(f"command:{PROGRAM} 'open")


def test_apis_are_declared_anywhere_in_the_file(tmp_path):
    path = tmp_path / "late.sh"
    path.write_text("#!/bin/sh\n" + "# padding\n" * 1000 + "# harness-apis: messages\n")
    assert path.stat().st_size > 4096
    assert declared_apis(path) == ("messages",)
    assert declared_apis(PROGRAM) == ("chat",)


def test_the_program_is_told_the_time_scale_and_the_scaled_deadlines():
    job = Job(base_url="http://127.0.0.1:1/v1", settings={"stream_idle_s": 2}, time_scale=0.5)
    env = program_env(job)
    assert env["HARNESS_TIME_SCALE"] == "0.5"
    assert env["HARNESS_STREAM_IDLE_S"] == "1"
    assert float(env["HARNESS_FIRST_BYTE_S"]) > 0  # the reference default, scaled


def test_protocol_lines_are_not_the_reply():
    said = parse_output(
        'HARNESS attempts 2\nhello\nHARNESS tool_call {"name": "record_note", '
        '"arguments": "{\\"note\\": 1}"}\nworld\nHARNESS nonsense\n'
    )
    assert said.reply == "hello\nworld"
    assert said.attempts == 2
    assert said.tool_calls == [{"name": "record_note", "arguments": '{"note": 1}'}]
    assert said.bad == ["nonsense"]


@pytest.mark.timeout(300)
def test_a_program_that_lives_milliseconds_has_its_posture_read_every_time(server):
    # one non-streamed body: the program is gone right after it; the server holds the
    # first byte until its socket was read, so the read never depends on luck
    s = make("body", stream=False)
    for _ in range(5):
        result = run_case(s, TARGET + " --one-body", server=server, settings=settings(0.05))
        assert result.outcome.kind == "ok", result.message
        assert result.posture, "no socket of the program was read"
        assert any("first_byte_held" in p["sampled_at"] for p in result.posture)
        kinds = [e["kind"] for e in result.timeline]
        assert kinds.index("held") < kinds.index("released") < kinds.index("response_done")


def test_a_pooled_connection_scenario_is_not_applicable_to_a_program_run_per_call(server):
    s = make(
        "stale_pool",
        request={"calls": 2},
        script={"rules": [{"fault": {"phase": "idle", "action": "close_idle", "after_s": 0.5}}]},
    )
    result = run_case(s, TARGET, server=server, settings=settings(0.05))
    assert result.outcome.kind == "not_applicable"
    assert "nothing is pooled" in result.message
    assert result.requests is None  # known before the run: never run
