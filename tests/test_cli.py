"""The ``harness`` command: exit codes, messages without tracebacks, report files."""

from __future__ import annotations

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
