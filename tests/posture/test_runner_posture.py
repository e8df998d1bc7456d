"""Posture through the runner, for targets with no code of ours in them: each case's
``posture`` holds what the client's sockets carried, and ``dead_peer_bound`` judges it.

The targets are out of the package (``posture.targets_pair``), a ``command:`` program
(curl) and the reference stack with its keepalive dropped; each is asserted against
the options the test itself set."""

from __future__ import annotations

import os
import shutil
import textwrap
from pathlib import Path

import pytest

from harness.contract.dead_peer import check_dead_peer
from harness.judge import Observed, judge_case
from harness.posture import Posture
from harness.report.posture import target_postures
from harness.runner import RunSettings, run_case
from harness.scenario import load_catalog, scenario_from_dict
from tests.judging import case_plan

TESTS_DIR = str(Path(__file__).resolve().parents[1])
FAST = 0.05
KEEPALIVE = "posture.targets_pair:KeepaliveHttpx"
BARE = "posture.targets_pair:BareHttpx"
UNCHECKED = "posture.targets_pair:UncheckedNoKeepalive"
PROBING = "posture.targets_pair:ProbingKeepaliveHttpx"


def silent_peer(bound_s: float) -> object:
    return scenario_from_dict(
        {
            "name": f"silent_peer_{bound_s:g}",
            "summary": "status and one event, then silence with the connection open",
            "api": "chat",
            "stream": True,
            "ceiling_s": 60,
            "script": {"rules": [{"fault": {"phase": "event:1", "action": "hang"}}]},
            "contract": {"dead_peer_bound_s": bound_s},
            "expected": {},
        }
    )


def settings() -> RunSettings:
    return RunSettings(time_scale=FAST, environ={**os.environ, "PYTHONPATH": TESTS_DIR})


@pytest.mark.timeout(90)
def test_two_targets_differing_only_in_keepalive_differ_in_posture_and_verdict(server):
    results = {
        (target, bound): run_case(silent_peer(bound), target, server=server, settings=settings())
        for target in (KEEPALIVE, BARE)
        for bound in (90.0, 20.0)
    }
    for r in results.values():  # both end at their own 1 s read timeout: a clean error
        assert r.outcome.kind == "error" and r.elapsed_s is not None and r.elapsed_s < 10
    ka = results[(KEEPALIVE, 90.0)].posture
    bare = results[(BARE, 90.0)].posture
    assert [p["keepalive"] for p in ka] == [
        {"enabled": True, "idle_s": 20.0, "interval_s": 5.0, "count": 8}
    ]
    assert [p["keepalive"]["enabled"] for p in bare] == [False]
    assert all(p["source"] == "getsockopt" and "fault" in p["sampled_at"] for p in ka + bare)
    # keepalive 20 + 5 x 8 = 60 s: within 90, not within 20; no keepalive: never
    assert results[(KEEPALIVE, 90.0)].dead_peer["status"] == "pass"
    assert results[(KEEPALIVE, 90.0)].dead_peer["bound_s"] == 60.0
    assert results[(KEEPALIVE, 20.0)].dead_peer["status"] == "fail"
    assert "dead_peer_bound" in results[(KEEPALIVE, 20.0)].failed_checks
    assert "dead_peer_bound" not in results[(KEEPALIVE, 90.0)].failed_checks
    for bound in (90.0, 20.0):
        r = results[(BARE, bound)]
        assert r.dead_peer["status"] == "fail" and r.dead_peer["bound_s"] is None
        assert r.verdict == "fail" and "dead_peer_bound" in r.failed_checks
    assert results[(KEEPALIVE, 90.0)].to_dict()["dead_peer_bound"]["status"] == "pass"


@pytest.mark.timeout(90)
def test_the_model_call_socket_is_judged_not_the_probe_before_it(server):
    """A client that probes ``GET /v1/models`` and ``GET /api/tags`` (404) without
    keepalive, then POSTs with keepalive 30/10x3: each socket is tied to what it carried
    by its port, and only the model call's 30/10x3 is judged (issue 34)."""
    r = run_case(silent_peer(90.0), PROBING, server=server, settings=settings())
    assert r.outcome.kind == "error", r.message  # its own 1 s read timeout
    by = {p["carried"]: p for p in r.posture}
    assert sorted(by) == ["model_call", "probe"], r.posture
    call, probe = by["model_call"], by["probe"]
    assert call["keepalive"] == {"enabled": True, "idle_s": 30.0, "interval_s": 10.0, "count": 3}
    assert probe["keepalive"]["enabled"] is False
    assert [q["path"] for q in call["requests"]] == ["/v1/chat/completions"]
    assert [q["path"] for q in probe["requests"]] == ["/v1/models", "/api/tags"]
    # the server's connection numbers, read from its records (probes came first)
    records = {q["index"]: q for p in r.posture for q in p["requests"]}
    assert sorted(records) == [1, 2, 3] and probe["server_conn"] < call["server_conn"]
    assert r.dead_peer["status"] == "pass" and r.dead_peer["bound_s"] == 60.0, r.dead_peer
    assert r.dead_peer["apart"] == "1 probe" and "model-call socket" in r.dead_peer["reason"]
    assert "dead_peer_bound" not in r.failed_checks
    note = target_postures([r])[PROBING]
    assert note.startswith("keepalive 30/10x3") and "dead peer noticed: <= 60s" in note
    assert "not judged: 1 probe (keepalive off" in note
    # the same case judged with every socket, as before the tie: the probe's "never"
    untied = [{**p, "carried": "unknown"} for p in r.posture]
    assert check_dead_peer("waiting", 90.0, untied).status == "fail"


@pytest.mark.timeout(120)
def test_reference_without_keepalive_and_self_check_is_killed_by_dead_peer_bound(server):
    [stall] = [s for s in load_catalog() if s.name == "chat_mid_stream_stall"]
    reference = run_case(stall, "reference", server=server, settings=settings())
    unchecked = run_case(stall, UNCHECKED, server=server, settings=settings())
    # the same outcome: its watchdog still ends the loopback stall ...
    assert unchecked.outcome.label == reference.outcome.label, unchecked.message
    assert reference.failed_checks == () and reference.dead_peer["status"] == "pass"
    # ... only the posture read from its sockets tells the keepalive is gone
    assert unchecked.failed_checks == ("dead_peer_bound",)
    assert unchecked.verdict == "fail"
    assert all(p["keepalive"]["enabled"] is False for p in unchecked.posture)
    assert all(p["keepalive"]["enabled"] is True for p in reference.posture)


CURL_PROGRAM = """\
#!/bin/sh
# harness-apis: chat    (a posture test's command: target: curl with its own keepalive)
exec curl -sS -N {keepalive} --max-time 2 -X POST "$OPENAI_BASE_URL/chat/completions" \\
  -H "Authorization: Bearer $OPENAI_API_KEY" -H "Content-Type: application/json" \\
  --data-binary '{{"model": "m", "stream": true, "messages": [{{"role": "user", "content": "hi"}}]}}'
"""


@pytest.mark.timeout(90)
@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
@pytest.mark.parametrize(
    ("flag", "enabled"), [("--keepalive-time 17", True), ("--no-keepalive", False)]
)
def test_curl_as_a_command_target_shows_the_keepalive_it_was_told(server, tmp_path, flag, enabled):
    program = tmp_path / "curl_posture.sh"
    program.write_text(textwrap.dedent(CURL_PROGRAM.format(keepalive=flag)))
    program.chmod(0o755)
    r = run_case(silent_peer(120.0), f"command:{program}", server=server, settings=settings())
    assert r.outcome.kind == "error", r.message  # curl's --max-time
    [p] = r.posture
    assert p["keepalive"]["enabled"] is enabled and p["source"] == "getsockopt"
    if enabled:  # curl sets idle and interval to --keepalive-time, the count it leaves
        probes = int(Path("/proc/sys/net/ipv4/tcp_keepalive_probes").read_text())
        assert (p["keepalive"]["idle_s"], p["keepalive"]["interval_s"]) == (17.0, 17.0)
        assert p["keepalive"]["count"] == probes
        assert r.dead_peer["bound_s"] == 17 + 17 * probes
    else:
        assert r.dead_peer["status"] == "fail"


def test_unreadable_posture_makes_the_check_not_applicable_never_a_failure():
    scenario = silent_peer(90.0)
    why = "socket posture is read on Linux only (this is darwin)"
    report = {"status": "raised", "error": "ReadTimeout", "mro": ["ReadTimeout"], "t": 1.5}
    result = judge_case(
        case_plan(scenario),
        Observed(
            report=report,
            started_t=1.0,
            posture=Posture(readable=False, reason=why),
            # the silent peer happened: a fault not reached judges nothing (not_exercised)
            timeline=({"t": 1.1, "conn": 1, "request": 1, "kind": "fault", "detail": {}},),
        ),
    )
    assert result.dead_peer["status"] == "not_applicable" and result.dead_peer["reason"] == why
    assert "dead_peer_bound" not in result.failed_checks and result.verdict == "safe"
    assert result.posture == () and result.to_dict()["posture_unreadable"] == why


def test_a_scenario_without_a_silent_peer_does_not_ask():
    healthy = scenario_from_dict({"name": "h", "summary": "h", "expected": {}})
    report = {"status": "returned", "text": "", "t": 1.5}
    result = judge_case(
        case_plan(healthy),
        Observed(report=report, started_t=1.0, posture=Posture()),
    )
    assert result.dead_peer is None


def _tier(backend: str) -> None:
    """Skip where the backend's tier cannot run; fail instead on CI, where it must."""
    from harness.environment import read_environment
    from harness.netem import prereq

    missing = {"relay": lambda: None, "toxiproxy": prereq.toxiproxy_missing}.get(
        backend, prereq.netns_missing
    )()
    if missing is not None:
        if read_environment().ci:
            pytest.fail(f"{backend} tier must run in CI: {missing}")
        pytest.skip(missing)


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "name", ["relay_hold_mid_stream", "toxiproxy_timeout_mid_stream", "kernel_dead_peer_mid_stream"]
)
def test_posture_is_read_through_every_network_path(server, name):
    [scenario] = [s for s in load_catalog() if s.name == name]
    _tier(scenario.backend)
    r = run_case(scenario, KEEPALIVE, server=server, settings=settings())
    # the client's leg: to the relay / Toxiproxy / namespaced server it was told to dial
    assert r.posture, r.message
    assert {p["keepalive"]["idle_s"] for p in r.posture} == {20.0}
    assert all(p["source"] == "getsockopt" for p in r.posture)
    assert r.dead_peer["status"] == "pass" and r.dead_peer["bound_s"] == 60.0
