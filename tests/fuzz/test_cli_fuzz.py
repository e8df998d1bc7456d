"""``harness fuzz`` and ``harness repro`` on the command line: bad input, interruption."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import EXIT_INPUT, main

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["-t", "no-such-target"], "--target 'no-such-target' is not valid"),
        (["--api", "soap"], "--api 'soap' is not valid"),
        (["--api", "messages"], "openai-sdk does not speak it"),
        (["--action", "explode"], "--action 'explode' is not valid (unknown)"),
        (["--action", "swallow_close"], "a relay action, not drawn"),
        (["--reference", "no-such-target"], "--target 'no-such-target' is not valid"),
        (["--backend", "carrier-pigeon"], "--backend 'carrier-pigeon' is not valid"),
        (["--same-as", "no-such-target"], "--target 'no-such-target' is not valid"),
        (["--same-as", "openai-sdk"], "the target itself"),
        (["--same-as", "anthropic-sdk"], "--same-as anthropic-sdk does not speak chat"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, args, says):
    out = tmp_path / "findings"
    code = main(["fuzz", "-t", "openai-sdk", "--out", str(out), "--db", "none", *args])
    err = capsys.readouterr().err
    assert code == EXIT_INPUT
    assert says in err and err.count("\n") == 1, err
    assert not out.exists()  # nothing ran, nothing written


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "cannot read it"),
        ("{not json", "not JSON"),
        ('{"hold_s": 10}', "no 'targets' table"),
        ('{"targets": {"reference": {}}}', "has no entry for openai-sdk; it has: reference"),
    ],
)
def test_a_posture_file_that_is_not_the_target_s_is_exit_2(tmp_path, capsys, content, says):
    posture = tmp_path / "posture.json"
    if content is not None:
        posture.write_text(content)
    out = tmp_path / "findings"
    code = main(["fuzz", "--posture", str(posture), "--out", str(out), "--db", "none"])
    err = capsys.readouterr().err
    assert code == EXIT_INPUT
    assert str(posture) in err and says in err and err.count("\n") == 1, err
    assert not out.exists()


def test_a_target_that_cannot_run_stops_before_the_first_example(tmp_path, capsys):
    out = tmp_path / "findings"
    code = main(["fuzz", "-t", "no_such_module_h6:Client", "--out", str(out), "--db", "none"])
    err = capsys.readouterr().err
    assert code == EXIT_INPUT and err.count("\n") == 1, err
    assert not out.exists()


def test_a_named_backend_that_cannot_run_here_stops_before_the_first_example(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("HARNESS_TOXIPROXY_BIN", str(tmp_path / "no-toxiproxy-here"))
    out = tmp_path / "findings"
    code = main(
        ["fuzz", "-t", "openai-sdk", "--backend", "toxiproxy", "--out", str(out), "--db", "none"]
    )
    err = capsys.readouterr().err
    assert code == EXIT_INPUT and err.count("\n") == 1, err
    assert "--backend toxiproxy cannot run here" in err and "no-toxiproxy-here" in err
    assert not out.exists()


def test_examples_and_minutes_exclude_each_other(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["fuzz", "--examples", "3", "--minutes", "1"])
    assert exc.value.code == EXIT_INPUT
    with pytest.raises(SystemExit) as exc:
        main(["fuzz", "--examples", "0"])
    assert exc.value.code == EXIT_INPUT


_WITH_DEFAULT_SIGINT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.executable, [sys.executable, '-m', 'harness', *sys.argv[1:]])"
)


def test_ctrl_c_writes_the_findings_so_far(tmp_path):
    out = tmp_path / "findings"
    # SIGINT as a terminal leaves it (default), whatever this process inherited: a job
    # started in the background by a non-interactive shell (`bash .ci/run &`) ignores it,
    # and an ignored signal stays ignored across exec, so the search would never see ^C
    command = [sys.executable, "-c", _WITH_DEFAULT_SIGINT]
    command += ["fuzz", "-t", "openai-sdk", "--api", "chat"]
    command += ["--action", "truncate", "--minutes", "5", "--time-scale", "0.02"]
    command += ["--out", str(out), "--db", "none", "--quiet", "--seed", "1"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    # its own process group, as a terminal's Ctrl-C reaches the command and its children
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, text=True, env=env, start_new_session=True
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # blocks until the first finding is reported
            if line.startswith("finding"):
                break
        os.killpg(proc.pid, signal.SIGINT)
        rest, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    summary = json.loads((out / "findings.json").read_text())
    assert summary["stopped_by"] == "interrupted", rest
    assert summary["findings"], rest
    assert all((out / f["file"]).is_file() for f in summary["findings"])
    assert proc.returncode == 1  # a finding was made
