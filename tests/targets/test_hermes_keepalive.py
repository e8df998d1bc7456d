"""hermes-agent's keepalive fix is visible (issue 34): a hermes-agent 0.19.0 build with
TCP keepalive 30/10/3 on its provider sockets (``patches/hermes-keepalive.patch``, the
shape of hermes-agent #11277; built from the installed package by ``hermes_builds``)
shows 30/10 x 3 in ``harness posture -t hermes`` on the sockets that carried its model
calls, and stock hermes shows keepalive off there. hermes's endpoint probes (``GET
/api/v1/models``, ``/api/tags``, ``/props``, ``/version`` ...: 404s, on sockets without
keepalive in both builds) are counted apart, never judged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.environment import scrubbed

from .hermes_builds import hermes_variant

ROOT = Path(__file__).resolve().parents[2]
PATCH = Path(__file__).with_name("patches") / "hermes-keepalive.patch"
HOLD_S = "3"

pytestmark = [pytest.mark.hermes, pytest.mark.usefixtures("hermes_ready")]


def _posture(out: Path, python: Path | None) -> tuple[dict, str]:
    env = scrubbed(os.environ)
    env.pop("HARNESS_HERMES_PYTHON", None)
    if python is not None:
        env["HARNESS_HERMES_PYTHON"] = str(python)
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "posture", "-t", "hermes", "--hold-s", HOLD_S]
        + ["--json", str(out)],
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert proc.returncode == 0 and out.exists(), proc.stderr[-2000:]
    return json.loads(out.read_text())["targets"]["hermes"], proc.stdout


def _row(text: str) -> str:
    [row] = [line for line in text.splitlines() if line.startswith("│ hermes")]
    return row


@pytest.mark.timeout(600)
def test_the_keepalive_build_shows_30_10_x_3_on_its_model_call_sockets_and_stock_shows_off(
    tmp_path,
):
    keepalive = hermes_variant(tmp_path / "keepalive-venv", patch=PATCH)
    stock, stock_text = _posture(tmp_path / "stock.json", None)
    fixed, fixed_text = _posture(tmp_path / "keepalive.json", keepalive)

    for s in (stock, fixed):
        calls = [c for c in s["connections"] if c["carried"] == "model_call"]
        probes = [c for c in s["connections"] if c["carried"] == "probe"]
        assert calls and probes, s["connections"]
        assert all(p["path"] == "/v1/chat/completions" for c in calls for p in c["requests"])
        # the probes are the same in both builds: their own clients, no keepalive
        assert {c["keepalive"]["enabled"] for c in probes} == {False}
        assert s["apart"].startswith(f"{len(probes)} probe (keepalive off")
        assert s["healthy_failed"] is None, s["outcomes"]

    fixed_calls = [c for c in fixed["connections"] if c["carried"] == "model_call"]
    assert {
        (c["keepalive"]["enabled"], c["keepalive"]["idle_s"], c["keepalive"]["interval_s"])
        + (c["keepalive"]["count"],)
        for c in fixed_calls
    } == {(True, 30.0, 10.0, 3)}
    assert fixed["posture"].startswith("keepalive 30/10x3")
    assert fixed["known"] and fixed["dead_peer_bound_s"] == 60.0
    assert fixed["dead_peer_bound_by"] == "keepalive"
    assert "30/10 x 3" in _row(fixed_text) and "60 s (keepalive)" in _row(fixed_text)

    stock_calls = [c for c in stock["connections"] if c["carried"] == "model_call"]
    assert {c["keepalive"]["enabled"] for c in stock_calls} == {False}
    assert stock["posture"].startswith("keepalive off")
    assert stock["known"] and stock["dead_peer_bound_s"] is None
    assert "never" in _row(stock_text) and "30/10" not in _row(stock_text)
