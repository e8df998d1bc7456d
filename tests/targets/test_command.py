"""``command:PATH`` targets: the shipped curl and Node examples end to end, the process
tree's leaks, and the kill at the ceiling reaching every process the program started."""

from __future__ import annotations

import os
import select
import shutil
import textwrap
from pathlib import Path

import pytest

from harness.paths import EXAMPLES_DIR
from harness.runner import RunSettings, run_case
from harness.scenario import scenario_from_dict
from harness.targets import is_target, load_target
from harness.targets.clients.command import declared_apis

FAST = 0.02
CURL = f"command:{EXAMPLES_DIR / 'curl_chat.sh'}"
NODE = f"command:{EXAMPLES_DIR / 'node_chat.mjs'}"
EXAMPLES = [
    pytest.param(
        CURL,
        marks=pytest.mark.skipif(
            not (shutil.which("curl") and shutil.which("jq")), reason="needs curl and jq"
        ),
        id="curl",
    ),
    pytest.param(
        NODE, marks=pytest.mark.skipif(not shutil.which("node"), reason="needs node"), id="node"
    ),
]


def make(name: str, target: str, expected: str = "ok", **fields) -> object:
    return scenario_from_dict(
        {"name": name, "summary": name, "expected": {target: expected}, **fields},
        targets=[target],
    )


def settings(**kw) -> RunSettings:
    # A generous ceiling where the case must not hang: on a loaded 2-core machine a node
    # or curl start can take seconds, and speed is not what these tests are about.
    kw.setdefault("min_ceiling_s", 30.0)
    return RunSettings(time_scale=FAST, reuse_children=False, **kw)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("target", EXAMPLES)
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])
def test_example_returns_the_full_reply_with_no_leak(server, target, stream):
    s = make("healthy", target, stream=stream)
    result = run_case(s, target, server=server, settings=settings())
    assert result.outcome.kind == "ok", result.message
    assert result.requests == 1
    assert result.leaks is not None and result.leaks.total == 0, result.leaks


@pytest.mark.timeout(300)
@pytest.mark.parametrize("target", EXAMPLES)
def test_example_fails_with_the_programs_own_message_when_the_stream_ends_early(server, target):
    s = make(
        "no_terminal",
        target,
        "error:CommandFailed",
        script={"rules": [{"fault": {"phase": "event:3", "action": "truncate"}}]},
    )
    result = run_case(s, target, server=server, settings=settings())
    assert result.outcome.kind == "error" and result.outcome.error == "CommandFailed"
    assert "without data: [DONE]" in result.message  # stderr's last line, not a traceback
    assert result.leaks is not None and result.leaks.total == 0


@pytest.mark.timeout(300)
@pytest.mark.parametrize("target", EXAMPLES)
def test_example_that_hangs_is_killed_at_the_ceiling(server, target):
    s = make(
        "stall",
        target,
        "hung",
        ceiling_s=10,
        script={"rules": [{"fault": {"phase": "event:2", "action": "hang"}}]},
    )
    result = run_case(s, target, server=server, settings=settings(min_ceiling_s=0.5))
    assert result.outcome.kind == "hung"
    assert result.ceiling_s == 0.5


def test_examples_declare_chat_and_a_messages_scenario_is_not_applicable(server):
    assert declared_apis(EXAMPLES_DIR / "curl_chat.sh") == ("chat",)
    assert declared_apis(EXAMPLES_DIR / "node_chat.mjs") == ("chat",)
    s = make("messages", CURL, "not_applicable", api="messages")
    result = run_case(s, CURL, server=server, settings=settings())
    assert result.outcome.kind == "not_applicable"
    assert result.requests is None  # never run


def _program(tmp_path: Path, body: str) -> str:
    path = tmp_path / "prog.sh"
    path.write_text("#!/usr/bin/env bash\n" + textwrap.dedent(body))
    path.chmod(0o755)
    return f"command:{path}"


def _wait_gone(pid: int, timeout_s: float) -> bool:
    """True once ``pid`` has exited (a pidfd turns readable), False at the timeout."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], timeout_s)[0])
    finally:
        os.close(fd)


@pytest.mark.timeout(300)
def test_a_socket_held_by_a_process_the_program_left_behind_is_a_leak(server, tmp_path):
    pids = tmp_path / "pids"
    connected = tmp_path / "connected"
    os.mkfifo(connected)
    target = _program(
        tmp_path,
        f"""\
        hostport="${{OPENAI_BASE_URL#http://}}"; hostport="${{hostport%%/*}}"
        # A background worker that outlives the program, holding a connection open.
        (exec 3<>"/dev/tcp/${{hostport%:*}}/${{hostport##*:}}"; echo up > {connected}
         exec sleep 30) &
        echo $! > {pids}
        read -r _ < {connected}  # returns once the worker holds its connection
        printf 'some text'
        """,
    )
    result = run_case(make("leaky", target), target, server=server, settings=settings())
    worker = int(pids.read_text())
    assert result.leaks is not None
    assert result.leaks.established >= 1, result.leaks  # counted although not the program's
    assert result.leaks.threads >= 1  # the worker process itself
    # The child was not reused (it leaked); when it exited, its guardian killed the group.
    assert _wait_gone(worker, 10.0)


@pytest.mark.timeout(300)
def test_the_kill_at_the_ceiling_reaches_the_programs_children(server, tmp_path):
    pids = tmp_path / "pids"
    target = _program(
        tmp_path,
        f"""\
        hostport="${{OPENAI_BASE_URL#http://}}"; hostport="${{hostport%%/*}}"
        # connected: the case's clock starts (a program that never connects did not start)
        exec 3<>"/dev/tcp/${{hostport%:*}}/${{hostport##*:}}"
        # a request whose body never comes
        printf 'POST /v1/chat/completions HTTP/1.1\r\nHost: h\r\nContent-Length: 9\r\n\r\n' >&3
        sleep 30 &
        echo $! > {pids}
        wait
        """,
    )
    s = make("sleeper", target, "hung", ceiling_s=10)
    result = run_case(s, target, server=server, settings=settings(min_ceiling_s=0.5))
    assert result.outcome.kind == "hung"
    assert _wait_gone(int(pids.read_text()), 10.0)


def test_a_failing_program_reports_its_last_stderr_line(server, tmp_path):
    target = _program(tmp_path, "echo 'noise' >&2\necho 'the real reason' >&2\nexit 3\n")
    result = run_case(make("fails", target, "error:CommandFailed"), target, server=server)
    assert result.outcome.error == "CommandFailed"
    assert "the real reason" in result.message and "noise" not in result.message


def test_bad_paths_and_declarations_are_clear_errors(tmp_path):
    assert is_target("command:/no/such/file")
    with pytest.raises(ValueError, match="is not a file"):
        load_target("command:/no/such/file")
    plain = tmp_path / "plain.sh"
    plain.write_text("#!/bin/sh\n")
    with pytest.raises(ValueError, match="not executable"):
        load_target(f"command:{plain}")
    plain.write_text("#!/bin/sh\n# harness-apis: chat, smoke\n")
    plain.chmod(0o755)
    with pytest.raises(ValueError, match="'smoke' is not an API; allowed: chat, responses"):
        load_target(f"command:{plain}")
    plain.write_text("#!/bin/sh\n# harness-apis: messages chat\n")
    assert load_target(f"command:{plain}").apis == ("messages", "chat")
