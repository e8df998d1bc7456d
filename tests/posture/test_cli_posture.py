"""``harness posture``: a row per target from its live sockets, JSON of the same, exit 2
on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import EXIT_INPUT, EXIT_OK, main

TESTS_DIR = str(Path(__file__).resolve().parents[1])
KEEPALIVE = "posture.targets_pair:KeepaliveHttpx"
BARE = "posture.targets_pair:BareHttpx"
PROBING = "posture.targets_pair:ProbingKeepaliveHttpx"


@pytest.mark.timeout(120)
def test_posture_rows_differ_for_targets_differing_only_in_keepalive(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PYTHONPATH", TESTS_DIR)
    out = tmp_path / "posture.json"
    assert (
        main(["posture", "-t", KEEPALIVE, "-t", BARE, "--hold-s", "3", "--json", str(out)])
        == EXIT_OK
    )
    text = capsys.readouterr().out
    rows = [line for line in text.splitlines() if "posture.targets_pair" in line and "│" in line]
    assert len(rows) == 2 and "20/5 x 8" in rows[0] and "off" in rows[1] and rows[0] != rows[1]
    assert f"{KEEPALIVE}: keepalive 20/5x8" in text and f"{BARE}: keepalive off" in text
    report = json.loads(out.read_text())
    ka, bare = report["targets"][KEEPALIVE], report["targets"][BARE]
    # each gave up at its own 1 s read timeout, well inside the 3 s hold: that deadline
    # is then what notices a silent dead peer first
    for s in (ka, bare):
        assert s["gave_up_after_s"] is not None and s["gave_up_after_s"] < 3
        assert s["dead_peer_bound_by"] == "read_timeout" and s["known"]
        assert {c["call"] for c in s["connections"]} == {"healthy", "silent"}
        assert s["reuse"] is None or isinstance(s["reuse"], bool)
    assert {c["keepalive"]["enabled"] for c in ka["connections"]} == {True}
    assert {c["keepalive"]["enabled"] for c in bare["connections"]} == {False}
    assert ka["in_flight_known"] and ka["in_flight_bound_by"] == "read_timeout"
    assert ka["posture"].startswith("keepalive 20/5x8")
    assert bare["posture"].startswith("keepalive off")


@pytest.mark.timeout(120)
def test_posture_row_is_the_model_call_socket_not_the_probe_before_it(
    tmp_path, monkeypatch, capsys
):
    """Probes without keepalive, then the model call with 30/10x3: the row and the note
    are the model call's; the probes are counted apart (issue 34)."""
    monkeypatch.setenv("PYTHONPATH", TESTS_DIR)
    out = tmp_path / "posture.json"
    assert main(["posture", "-t", PROBING, "--hold-s", "3", "--json", str(out)]) == EXIT_OK
    text = capsys.readouterr().out
    [row] = [line for line in text.splitlines() if "posture.targets_pair" in line and "│" in line]
    assert "30/10 x 3" in row and "off" not in row.split("│")[2], row
    s = json.loads(out.read_text())["targets"][PROBING]
    assert s["posture"].startswith("keepalive 30/10x3")
    assert s["apart"].startswith("2 probe (keepalive off")  # one per call's probe client
    carried = [(c["call"], c["carried"]) for c in s["connections"]]
    assert sorted(set(carried)) == [
        ("healthy", "model_call"),
        ("healthy", "probe"),
        ("silent", "model_call"),
        ("silent", "probe"),
    ]
    # one model call per job: the probes' two requests on one connection are no reuse
    assert s["reuse"] is None and s["healthy_failed"] is None


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["posture"], "at least one --target"),
        (["posture", "-t", "no-such-target"], "--target 'no-such-target' is not valid"),
        (["posture", "-t", "reference", "--hold-s", "0"], "--hold-s 0.0 is not valid"),
        (["posture", "-t", "reference", "--hold-s", "nan"], "--hold-s nan is not valid"),
        (["posture", "-t", "reference", "--json", "/no/such/dir/p.json"], "--json /no/such/dir"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, needle, capsys):
    assert main(argv) == EXIT_INPUT
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err
