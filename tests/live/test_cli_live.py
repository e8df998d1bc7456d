"""``harness live``: exit codes, clear messages, and the real live path pointed at the
local fault server through the base-URL override."""

from __future__ import annotations

import argparse
import io
import json
import random

import pytest
from rich.console import Console

from harness.environment import Environment
from harness.faults import FaultScript
from harness.live import cli_live
from harness.live.session import plan_sequences
from harness.server import FaultServer

FAKE_KEY = "sk-or-v1-FAKEKEY-cli-0123456789abcdef0123456789ab"

pytestmark = pytest.mark.timeout(60)


def run(argv, env):
    parser = cli_live.add_arguments(argparse.ArgumentParser(prog="harness live"))
    out = io.StringIO()
    console = Console(file=out, width=200)
    status = cli_live.run_live(
        parser.parse_args(argv), environment=env, console=console, err_console=console
    )
    return status, out.getvalue()


def test_without_the_switches_it_exits_2_naming_both_variables():
    status, out = run([], Environment())
    assert status == cli_live.EXIT_USAGE
    assert "HERMES_LIVE_TESTS=1" in out and "OPENROUTER_API_KEY" in out
    assert "Traceback" not in out


def test_a_bad_option_value_exits_2_naming_the_field_without_the_key():
    env = Environment(live_tests=True, openrouter_api_key=FAKE_KEY)
    status, out = run(["--max-tokens", "0"], env)
    assert status == cli_live.EXIT_USAGE
    assert "max_tokens" in out and "1..1024" in out
    assert FAKE_KEY not in out


def test_help_is_available(capsys):
    with pytest.raises(SystemExit) as info:
        cli_live.main(["--help"])
    assert info.value.code == 0
    assert "--dry-run" in capsys.readouterr().out


def test_the_live_path_runs_end_to_end_against_the_base_url_override(tmp_path):
    seed = 11
    words = [c.word for seq in plan_sequences(random.Random(seed)) for c in seq]
    # One reply that contains every case's word, so each echo check passes for real.
    with FaultServer(FaultScript(content=" ".join(words))) as server:
        env = Environment(
            live_tests=True, openrouter_api_key=FAKE_KEY, live_base_url=server.base_url
        )
        report = tmp_path / "live.json"
        status, out = run(["--seed", str(seed), "--json", str(report)], env)
        seen = server.requests()
    assert status == cli_live.EXIT_OK, out
    data = json.loads(report.read_text())
    # 6 healthy chats, then the live-with-a-fault check's 2 streams through the fault proxy
    assert data["mode"] == "live" and data["ok"] and len(data["cases"]) == 8
    assert [r.stream for r in seen] == [True, True, True, False, False, False, True, True]
    assert FAKE_KEY not in out and FAKE_KEY not in report.read_text()


def test_the_live_path_fails_with_exit_1_when_a_reply_carries_a_sentinel():
    seed = 12
    words = [c.word for seq in plan_sequences(random.Random(seed)) for c in seq]
    content = " ".join(words) + " Error: Request timed out."
    with FaultServer(FaultScript(content=content)) as server:
        env = Environment(
            live_tests=True, openrouter_api_key=FAKE_KEY, live_base_url=server.base_url
        )
        status, out = run(["--seed", str(seed)], env)
    assert status == cli_live.EXIT_FAILED
    assert "request_timed_out" in out
