"""The live check through any target (``harness live -t X``): real child processes,
doubles that fail the way real clients did, the built-in targets against the local
fault server, and the reference stack's #10933 mutant."""

from __future__ import annotations

import io
import json
import os
import random
from typing import TYPE_CHECKING

import pytest
from rich.console import Console

from harness.environment import Environment, read_environment
from harness.live import cli_live
from harness.live.config import LiveConfig
from harness.live.targets import plan_target_sequences, run_target_tier

if TYPE_CHECKING:
    from tests.conftest import DryRun

FAKE_KEY = "sk-or-v1-FAKEKEY-targets-0123456789abcdef0123456789"

pytestmark = pytest.mark.timeout(120)


def config(**kw) -> LiveConfig:
    # Port 9 (discard) on loopback: the doubles never connect; nothing listens there.
    values = dict(base_url="http://127.0.0.1:9/v1", api_key=FAKE_KEY, model="m", call_ceiling_s=5.0)
    values.update(kw)
    return LiveConfig(**values)


def tier(target, **kw):
    sequences = plan_target_sequences(random.Random(3), streams=(True,))
    return run_target_tier(
        config(**kw.pop("config", {})), target, sequences, environ=dict(os.environ), **kw
    )


def test_a_correct_target_passes_every_chat_across_the_rebuild():
    run = tier("tests.live.doubles:Echo")
    assert run.ok, [c.summary() for c in run.cases]
    names = [c.name for c in run.cases]
    assert names == [
        "tests.live.doubles:Echo/stream/chat-1",
        "tests.live.doubles:Echo/stream/chat-2",
        "tests.live.doubles:Echo/stream/chat-3 (after rebuild)",
    ]
    assert run.cases[-1].elapsed_s is not None and run.cases[0].elapsed_s is None


def test_error_text_returned_as_the_reply_after_the_rebuild_is_a_failure():
    run = tier("tests.live.doubles:ErrorTextAfterRebuild")
    assert not run.ok
    first, second, third = run.cases
    assert first.ok and second.ok and not third.ok
    assert {"api_call_failed", "connection_error", "wrong_content"} <= {
        f.sentinel for f in third.findings
    }


def test_a_raised_closed_client_error_names_its_sentinel():
    run = tier("tests.live.doubles:ClosedClientAfterRebuild")
    (case,) = run.cases
    assert not case.ok and case.name.endswith("/stream/chats-1-3")
    assert {"raised", "client_closed"} <= {f.sentinel for f in case.findings}
    assert "Cannot send a request" in case.error


def test_a_target_hung_after_the_rebuild_is_killed_at_the_ceiling():
    run = tier(
        "tests.live.doubles:HangsAfterRebuild", config={"call_ceiling_s": 0.5}, ceiling_margin_s=0.5
    )
    (case,) = run.cases
    assert not case.ok and [f.sentinel for f in case.findings] == ["hung"]
    assert case.elapsed_s >= 2.0  # 3 chats x 0.5 s + 0.5 s: it waited the whole ceiling


def test_a_wrong_word_in_the_middle_is_caught():
    run = tier("tests.live.doubles:WrongWordSecondChat")
    assert [c.ok for c in run.cases] == [True, False, True]
    assert [f.sentinel for f in run.cases[1].findings] == ["wrong_content"]


def test_an_unknown_target_is_a_usage_error_before_any_call():
    out = io.StringIO()
    console = Console(file=out, width=200)
    parser = cli_live.add_arguments(__import__("argparse").ArgumentParser())
    status = cli_live.run_live(
        parser.parse_args(["--dry-run", "-t", "curl"]),
        environment=Environment(),
        console=console,
        err_console=console,
    )
    assert status == cli_live.EXIT_USAGE
    assert "--target 'curl' is not valid; allowed:" in out.getvalue()


def test_an_unwritable_report_path_is_a_usage_error_before_any_call(tmp_path):
    out = io.StringIO()
    console = Console(file=out, width=200)
    parser = cli_live.add_arguments(__import__("argparse").ArgumentParser())
    path = tmp_path / "missing" / "r.json"
    status = cli_live.run_live(
        parser.parse_args(["--dry-run", "--json", str(path)]),
        environment=Environment(),
        console=console,
        err_console=console,
    )
    assert status == cli_live.EXIT_USAGE
    assert out.getvalue().strip() == (
        f"harness live: --json {path}: cannot write there: no such directory {str(path.parent)!r}"
    )


def test_the_closed_transport_mutant_fails_the_dry_run_through_its_child():
    out = io.StringIO()
    console = Console(file=out, width=220)
    parser = cli_live.add_arguments(__import__("argparse").ArgumentParser())
    status = cli_live.run_live(
        parser.parse_args(["--dry-run", "-t", "mutant:closed-transport-reuse", "--seed", "5"]),
        environment=Environment(),
        console=console,
        err_console=console,
    )
    assert status == cli_live.EXIT_FAILED, out.getvalue()
    assert "UNEXPECTED" in out.getvalue() and "Cannot send a request" in out.getvalue()


@pytest.mark.timeout(450)  # the shared run's setup: every built-in target (~80-150 s)
def test_harness_live_dry_run_covers_every_built_in_target(live_dry_run_every_target: DryRun):
    """No ``-t``: the in-process checks and every built-in target, hermes included (its
    rebuild is ``_replace_primary_openai_client`` on one ``AIAgent``). The run is the one
    tests/record/test_secrets.py checks for the key (tests/conftest.py)."""
    from harness.targets import TARGETS, required_in_ci
    from harness.targets.hermes import unavailable_reason

    done = live_dry_run_every_target.done
    env = read_environment()  # what the `harness live` child read
    assert done.returncode == cli_live.EXIT_OK, done.stdout + done.stderr
    report = json.loads(live_dry_run_every_target.report.read_text())
    assert set(report["targets"]) == {"reference", *TARGETS}
    names = [c["name"] for c in report["cases"]]
    for target in TARGETS:
        mine = [c for c in report["cases"] if c["name"].startswith(f"{target}/")]
        if mine and all(c["skipped"] for c in mine):
            # its venv is missing here: allowed only where CI does not require it
            assert target != "hermes" or unavailable_reason(env) is not None
            assert not required_in_ci(target, ci=env.ci, extra_targets=env.extra_targets)
            continue
        assert f"{target}/stream/chat-3 (after rebuild)" in names
        assert f"{target}/non-stream/chat-3 (after rebuild)" in names
        flagged = next(c for c in mine if "sentinel-in-stream" in c["name"])
        assert not flagged["ok"] and flagged["as_expected"]
        assert all(c["as_expected"] for c in mine)
