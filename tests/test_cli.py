"""The ``harness`` command: exit codes, messages without tracebacks, report files."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import EXIT_INPUT, EXIT_MISMATCH, EXIT_OK, main

FAST = ["--time-scale", "0.02", "--quiet"]

HEALTHY = """
name = "{name}"
summary = "healthy"
[expected]
openai-sdk = "{expected}"
"""


def scenario_dir(tmp_path: Path, **expectations: str) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    for name, expected in expectations.items():
        (tmp_path / f"{name}.toml").write_text(HEALTHY.format(name=name, expected=expected))
    return tmp_path


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["run", "--help"],
        ["list", "--help"],
        ["explain", "--help"],
        ["bench", "--help"],
        ["report", "merge", "--help"],
        ["serve", "--help"],
    ],
)
def test_help_exits_zero(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 0
    assert "usage: harness" in capsys.readouterr().out


def test_list_prints_the_catalog(capsys):
    assert main(["list"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "chat_mid_stream_stall" in out and "#10324" in out


def test_bad_scenario_file_exits_2_with_file_field_and_allowed_values(tmp_path, capsys):
    (tmp_path / "broken.toml").write_text(
        HEALTHY.format(name="broken", expected="ok") + 'colour = "red"\n'
    )
    code = main(["run", "--scenarios-dir", str(tmp_path), *FAST])
    err = capsys.readouterr().err
    assert code == EXIT_INPUT
    assert "broken.toml: expected.colour: unknown target; allowed:" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "--target", "curl"], "--target 'curl' is not valid; allowed:"),
        (["run", "--shard", "3/2"], "--shard '3/2' is not valid"),
        (["run", "--time-scale", "-1"], "--time-scale -1.0 is not valid"),
        (["run", "no_such_scenario"], "matches no scenario"),
        (["report", "merge", "missing.json"], "missing.json: no such file"),
    ],
)
def test_usage_errors_exit_2_with_one_line(argv, message, capsys):
    assert main(argv) == EXIT_INPUT
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_missing_optional_module_is_a_clear_usage_error():
    from harness.cli import UsageError, _optional

    with pytest.raises(UsageError, match="harness bench x is not available in this build"):
        _optional("harness.bench.no_such_module", "run", what="harness bench x")


def test_serve_rejects_a_bad_time_scale(capsys):
    assert main(["serve", "--time-scale", "0"]) == EXIT_INPUT
    assert "--time-scale 0.0 is not valid" in capsys.readouterr().err


def test_serve_rejects_a_port_out_of_range_instead_of_wrapping_it(capsys):
    assert main(["serve", "--port", "70000"]) == EXIT_INPUT
    assert "--port: 70000 is not valid; allowed: 0..65535" in capsys.readouterr().err


@pytest.mark.timeout(90)
def test_run_writes_reports_and_exits_0_when_all_match(tmp_path, capsys):
    d = scenario_dir(tmp_path / "s", healthy_a="ok")
    out = tmp_path / "out"
    out.mkdir()
    code = main(
        [
            "run",
            "--scenarios-dir",
            str(d),
            "-t",
            "openai-sdk",
            *FAST,
            "--json",
            str(out / "r.json"),
            "--junit",
            str(out / "r.xml"),
            "--markdown",
            str(out / "r.md"),
        ]
    )
    assert code == EXIT_OK, capsys.readouterr()
    assert json.loads((out / "r.json").read_text())["summary"]["matched"] == 1
    assert "<testsuite" in (out / "r.xml").read_text()
    assert "healthy_a" in (out / "r.md").read_text()
    assert "1/1 cases as expected" in capsys.readouterr().out


@pytest.mark.timeout(90)
def test_run_exits_1_on_a_mismatch_and_merge_reports_it(tmp_path, capsys):
    d = scenario_dir(tmp_path / "s", good="ok", wrong="hung")
    shards = []
    for k in (1, 2):
        path = tmp_path / f"shard{k}.json"
        main(
            [
                "run",
                "--scenarios-dir",
                str(d),
                "-t",
                "openai-sdk",
                *FAST,
                "--shard",
                f"{k}/2",
                "--json",
                str(path),
            ]
        )
        shards.append(str(path))
    capsys.readouterr()
    assert main(["report", "merge", *shards, "--markdown", str(tmp_path / "m.md")]) == EXIT_MISMATCH
    out = capsys.readouterr().out
    assert "1/2 cases as expected" in out and "MISMATCH wrong [openai-sdk]" in out
    assert "❌" in (tmp_path / "m.md").read_text()


@pytest.mark.timeout(90)
def test_explain_prints_one_time_axis_with_the_fault(capsys):
    code = main(["explain", "chat_rst_mid_stream", "-t", "openai-sdk", "--time-scale", "0.02"])
    out = capsys.readouterr().out
    assert code == EXIT_OK
    assert "⚡ fault" in out and "action=rst" in out and "client" in out


def test_console_script_runs_without_arguments_help():
    proc = subprocess.run(
        [sys.executable, "-m", "harness"], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == EXIT_INPUT
    assert "usage: harness" in proc.stdout


# --------------------------------------------------------------------------- report paths


def bad_paths(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Unwritable report paths that stay unwritable as root (the CI user)."""
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    return {
        "missing-dir": (tmp_path / "no" / "such" / "r.json", "no such directory"),
        "a-directory": (tmp_path, "is a directory"),
        "under-a-file": (a_file / "r.json", "is not a directory"),
    }


@pytest.mark.parametrize("option", ["--json", "--junit", "--markdown"])
@pytest.mark.parametrize("shape", ["missing-dir", "a-directory", "under-a-file"])
def test_an_unwritable_report_path_exits_2_before_any_case_runs(tmp_path, capsys, option, shape):
    path, reason = bad_paths(tmp_path)[shape]
    # A broken scenario directory: had the catalog been loaded (let alone run) first, the
    # error would name the scenario file instead of the report path.
    broken = tmp_path / "scenarios"
    broken.mkdir()
    (broken / "broken.toml").write_text('name = "broken"\ncolour = "red"\n')
    code = main(["run", "--scenarios-dir", str(broken), *FAST, option, str(path)])
    err = capsys.readouterr().err
    assert code == EXIT_INPUT
    assert err.strip() == f"harness: error: {option} {path}: {err.split(': ', 3)[-1].strip()}"
    assert reason in err and "broken.toml" not in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_the_path_check_leaves_no_file_behind_and_keeps_an_existing_one(tmp_path, capsys):
    from harness.cli.common import check_report_paths

    new, old = tmp_path / "new.json", tmp_path / "old.json"
    old.write_text("keep me")
    check_report_paths(argparse.Namespace(json=str(new), junit=str(old), markdown=None))
    assert not new.exists() and old.read_text() == "keep me"


def test_report_merge_and_scorecard_check_their_paths_too(tmp_path, capsys):
    path, _ = bad_paths(tmp_path)["missing-dir"]
    assert main(["report", "merge", "whatever.json", "--junit", str(path)]) == EXIT_INPUT
    assert f"--junit {path}: cannot write" in capsys.readouterr().err
    a_file = tmp_path / "a_file"
    assert main(["scorecard", "--out", str(a_file), "--from", "whatever.json"]) == EXIT_INPUT
    assert f"--out {a_file}: not a directory" in capsys.readouterr().err


def test_a_bad_report_path_from_the_console_script_is_one_line_and_fast(tmp_path):
    import time

    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--json", str(tmp_path / "x" / "r.json")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    took = time.monotonic() - start
    assert proc.returncode == EXIT_INPUT and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "no such directory" in proc.stderr
    print(f"bad report path: exit 2 after {took:.2f} s")  # the README's figure, not a bound


# --------------------------------------------------------------------------- scorecard


@pytest.mark.timeout(120)
def test_scorecard_runs_each_target_and_writes_the_files_then_rerenders_them(tmp_path, capsys):
    d = scenario_dir(tmp_path / "s", healthy_a="ok")
    (d / "healthy_a.toml").write_text(
        HEALTHY.format(name="healthy_a", expected="ok") + 'reference = "ok"\n'
    )
    out = tmp_path / "card"
    code = main(
        [
            "scorecard",
            "--scenarios-dir",
            str(d),
            "-t",
            "reference",
            "-t",
            "openai-sdk",
            *FAST,
            "--out",
            str(out),
        ]
    )
    printed = capsys.readouterr().out
    assert code == EXIT_OK, printed
    for name in ("scorecard.md", "scorecard.png", "scorecard.html", "scorecard.json"):
        assert (out / name).stat().st_size > 0, name
    assert "reference:" in printed and "openai-sdk:" in printed
    md = (out / "scorecard.md").read_text()
    assert "| healthy_a |" in md and "| reference |" in md and "| openai-sdk |" in md
    wall = json.loads((out / "scorecard.json").read_text())["wall_s"]
    assert set(wall) == {"reference", "openai-sdk"} and all(s > 0 for s in wall.values())

    again = tmp_path / "again"
    code = main(
        ["scorecard", "--from", str(out / "scorecard.json"), "-t", "reference", "--out", str(again)]
    )
    assert code == EXIT_OK
    md = (again / "scorecard.md").read_text()
    assert "| reference |" in md and "| openai-sdk |" not in md
    assert "(sum of cases" not in md  # the measured wall time came along


def test_the_help_texts_restate_the_runners_defaults_exactly():
    from harness.cli.common import DEFAULT_TIME_SCALE_TEXT
    from harness.runner import DEFAULT_TIME_SCALE

    assert float(DEFAULT_TIME_SCALE_TEXT) == DEFAULT_TIME_SCALE


def test_adding_a_command_is_one_module_with_register(monkeypatch, capsys):
    import types

    import harness.cli as cli

    module = types.ModuleType("harness_test_hello")

    def register(commands):
        hello = commands.add_parser("hello", help="say hello")
        hello.set_defaults(func=lambda args: print("hello") or EXIT_OK)

    module.register = register
    monkeypatch.setitem(sys.modules, "harness_test_hello", module)
    monkeypatch.setattr(cli, "COMMAND_MODULES", (*cli.COMMAND_MODULES, "harness_test_hello"))
    assert main(["hello"]) == EXIT_OK
    assert capsys.readouterr().out == "hello\n"
