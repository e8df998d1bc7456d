"""A compiled client in another language through ``command:`` (issue 35): the Go program
of tests/targets/programs/go-client/, built here with ``go build`` (tests/targets/go_build.py),
in its keepalive-on, keepalive-off and Go-default variants.

Every assertion about the transport is read from the program's live sockets (the
posture the runner sampled) and the server's records, never from its flags: the
variants differ only in how the program sets up its ``net.Dialer``. The error kinds
are the names the program printed (``HARNESS error Kind: ...``). The kernel dead-peer
case needs root and ``ip netns`` (skipped locally without them, failed in CI, as the
kernel tier is).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.netem.prereq import require_netns
from harness.paths import PROJECT_ROOT
from harness.runner import RunSettings, run_case
from harness.scenario import load_catalog
from tests.targets.go_build import go_client

#: keepalive idle/interval/count the "on" variant sets by default (kernel seconds)
ON = {"enabled": True, "idle_s": 1.0, "interval_s": 1.0, "count": 2}
#: what Go's net.Dialer sets when told nothing (KeepAlive 0): 15 s, 15 s x 9
GO_DEFAULT = {"enabled": True, "idle_s": 15.0, "interval_s": 15.0, "count": 9}


@pytest.fixture(scope="module")
def binary() -> Path:
    return go_client()


def target(binary: Path, keepalive: str) -> str:
    return f"command:{binary} -keepalive={keepalive}"


def scenario(name: str) -> object:
    [found] = [s for s in load_catalog() if s.name == name]
    return found


def settings() -> RunSettings:
    return RunSettings(time_scale=0.05)


def keepalive_of(result: object) -> dict:
    """The keepalive the program's model-call socket had, as the runner read it."""
    conns = [p for p in result.posture if p.get("carried") == "model_call"]
    assert conns, f"no model-call socket of the program was read: {result.posture}"
    [keepalive] = {tuple(sorted(p["keepalive"].items())) for p in conns}
    return dict(keepalive)


@pytest.mark.timeout(600)  # a first build of the program included
def test_a_healthy_stream_is_ok_with_its_attempts_for_each_variant(server, binary):
    for keepalive in ("on", "off"):
        r = run_case(
            scenario("chat_healthy_stream"),
            target(binary, keepalive),
            server=server,
            settings=settings(),
        )
        assert r.outcome.kind == "ok", r.message
        assert r.verdict == "pass", r.failed_checks
        assert r.attempts == 1 and r.requests == 1
        assert r.posture and all(p["source"] == "getsockopt" for p in r.posture)


@pytest.mark.timeout(600)  # a first build of the program included
@pytest.mark.parametrize(
    ("name", "kind", "deadline"),
    [
        ("chat_fin_mid_stream", "TruncatedStream", None),
        ("chat_rst_mid_stream", "ConnectionReset", None),
        ("chat_malformed_chunk", "BadChunk", None),
        ("chat_no_first_byte", "FirstByteTimeout", "first_byte"),
        ("chat_mid_stream_stall", "StreamIdleTimeout", "stream_idle"),
    ],
)
def test_error_kinds_are_the_programs_own_names(server, binary, name, kind, deadline):
    r = run_case(scenario(name), target(binary, "on"), server=server, settings=settings())
    assert r.outcome.kind == "error", r.message
    assert r.outcome.error == kind and "CommandError" in r.outcome.mro
    assert r.attempts == 1, "the count it printed reaches the judge on a raised call too"
    assert r.verdict == "safe", r.failed_checks
    if deadline is not None:  # its deadline is the scenario's, scaled by the run
        assert "(time scale 0.05)" in r.message


@pytest.mark.timeout(600)  # a first build of the program included
def test_posture_and_dead_peer_bound_tell_the_variants_apart_on_a_silent_peer(server, binary):
    # the server stalls mid-stream: the program's own (scaled) idle deadline ends every
    # variant alike; what its transport would do with a really dead peer does not
    results = {
        k: run_case(
            scenario("chat_mid_stream_stall"), target(binary, k), server=server, settings=settings()
        )
        for k in ("on", "off", "default")
    }
    assert {k: r.outcome.error for k, r in results.items()} == dict.fromkeys(
        results, "StreamIdleTimeout"
    )
    assert keepalive_of(results["on"]) == ON
    assert keepalive_of(results["off"])["enabled"] is False  # KeepAlive -1: really off
    assert keepalive_of(results["default"]) == GO_DEFAULT
    on, off, default = (results[k].dead_peer for k in ("on", "off", "default"))
    assert on["status"] == "pass" and on["bound_s"] == 3.0
    assert off["status"] == "fail" and off["bound_s"] is None  # never noticed
    # Go's own default keepalive notices only after 15 + 15 x 9 = 150 s: over the 120 s bound
    assert default["status"] == "fail" and default["bound_s"] == 150.0
    assert "dead_peer_bound" in results["off"].failed_checks
    assert "dead_peer_bound" not in results["on"].failed_checks


@pytest.mark.timeout(600)  # a first build of the program included
def test_harness_posture_reads_each_variant(binary):
    on, off = target(binary, "on"), target(binary, "off")
    done = subprocess.run(
        [sys.executable, "-m", "harness", "posture", "-t", on, "-t", off, "--hold-s", "1"],
        cwd=PROJECT_ROOT,
        env={**os.environ, "COLUMNS": "250"},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = {ln.split(": ", 1)[0]: ln for ln in done.stdout.splitlines() if ": keepalive" in ln}
    assert "keepalive 1/1x2" in lines[on] and "dead peer noticed: <= 3s" in lines[on]
    assert "keepalive off" in lines[off] and "dead peer noticed: never" in lines[off]


@pytest.mark.netem
@pytest.mark.timeout(600)  # a first build of the program included
def test_a_kernel_dead_peer_is_noticed_by_keepalive_and_waited_out_without(server, binary):
    require_netns()
    s = scenario("kernel_dead_peer_mid_stream")
    on = run_case(s, target(binary, "on"), server=server, settings=settings())
    # the kernel's keepalive gave up on the peer after ~1 + 1 x 2 s: the program's read
    # failed with ETIMEDOUT, which it names ConnectionTimedOut
    assert on.outcome.kind == "error" and on.outcome.error == "ConnectionTimedOut", on.message
    assert on.verdict == "safe", on.failed_checks
    assert on.dead_peer["status"] == "pass"
    off = run_case(s, target(binary, "off"), server=server, settings=settings())
    # no keepalive, and its stream-idle deadline (30 s, the scenario's kernel floor of
    # time scale 1) outlasts the ceiling: nothing ends the call
    assert off.outcome.kind == "hung", off.message
    assert {"bounded", "dead_peer_bound"} <= set(off.failed_checks)
    assert keepalive_of(on) == ON and keepalive_of(off)["enabled"] is False


def test_the_targets_page_shows_the_programs_own_dialer():
    # docs/targets.md quotes the program: the quote must stay what the program does
    page = (PROJECT_ROOT / "docs" / "targets.md").read_text(encoding="utf-8")
    section = page.split("### A compiled client: Go", 1)[1]
    quoted = section.split("```go\n", 1)[1].split("```", 1)[0]
    source = (PROJECT_ROOT / "tests/targets/programs/go-client/main.go").read_text(encoding="utf-8")
    assert "net.KeepAliveConfig" in quoted and quoted in source
