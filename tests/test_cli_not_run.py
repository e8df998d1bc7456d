"""``harness run`` never passes with nothing run (issue 24): a named target that cannot
run here is one line before any case, exit 2; a run where no case ran exits 2 naming why."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import EXIT_INPUT, main

UNINSTALLED = "tests.runner.causes_double:UninstalledTarget"


def test_a_target_that_cannot_run_here_is_one_line_and_exit_2(tmp_path: Path, capsys):
    (tmp_path / "a.toml").write_text('name = "a"\nsummary = "healthy"\n')
    code = main(["run", "--scenarios-dir", str(tmp_path), "-t", UNINSTALLED, "--quiet"])
    captured = capsys.readouterr()
    assert code == EXIT_INPUT
    lines = captured.err.strip().splitlines()
    assert lines == [
        f"harness: error: --target {UNINSTALLED} cannot run here: uninstalled-client is not "
        "installed in .cache/uninstalled-venv; install it with: pip install uninstalled-client"
    ]
    assert "as expected" not in captured.out  # no case ran, no summary


@pytest.mark.timeout(60)
def test_a_run_where_no_case_ran_exits_2_naming_why(tmp_path: Path, capsys):
    # a Messages scenario against the bare OpenAI SDK: not applicable, so nothing runs
    (tmp_path / "m.toml").write_text(
        'name = "m"\nsummary = "m"\napi = "messages"\n[expected]\nopenai-sdk = "not_applicable"\n'
    )
    code = main(["run", "--scenarios-dir", str(tmp_path), "-t", "openai-sdk", "--quiet"])
    captured = capsys.readouterr()
    assert code == EXIT_INPUT
    assert "0/0 cases as expected" in captured.out and "1 not run" in captured.out
    assert captured.err.strip().endswith(
        "no case ran: 1 not applicable: the target does not speak the scenario's API"
    )


@pytest.mark.timeout(120)
def test_a_run_where_every_case_of_a_target_did_not_start_exits_2_naming_why(
    tmp_path: Path, capsys
):
    # No expectations: without this rule the run would pass with nothing judged.
    for name in ("a", "b"):
        (tmp_path / f"{name}.toml").write_text(f'name = "{name}"\nsummary = "healthy"\n')
    target = "tests.runner.reach_targets:CrashAtImportTarget"
    code = main(["run", "--scenarios-dir", str(tmp_path), "-t", target, "--quiet"])
    captured = capsys.readouterr()
    assert code == EXIT_INPUT
    # one line says why; the others are the run's own notes (its workers)
    lines = [x for x in captured.err.strip().splitlines() if not x.startswith("workers:")]
    assert len(lines) == 1, lines
    assert lines[0].startswith(
        f"harness: error: every case of target {target} (2) crashed or did not start: "
        "the child failed before it was ready"
    )


def test_the_all_crashed_rule_counts_crashes_and_did_not_start_per_target():
    from harness.case_result import CaseResult
    from harness.cli.run import _never_ran_a_call
    from harness.outcome import Outcome

    def case(target: str, outcome: Outcome, message: str = "") -> CaseResult:
        return CaseResult(
            scenario="s", target=target, expected="", outcome=outcome, matched=True,
            time_scale=0.05, ceiling_s=3.0, message=message,
        )  # fmt: skip

    crashed = Outcome("error", "TargetCrashed", ("TargetCrashed",))
    results = [
        case("a", crashed, "child exited (code -11)"),
        case("a", Outcome("did_not_start", detail="no request")),
        case("a", Outcome("not_applicable")),  # never tried: not counted either way
        case("b", crashed),
        case("b", Outcome("ok")),  # one case made a call: b is not dead
    ]
    assert _never_ran_a_call(results) == (
        "every case of target a (2) crashed or did not start: child exited (code -11)"
    )
    assert _never_ran_a_call(results[3:]) == ""
