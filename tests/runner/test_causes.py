"""Named causes and honest accounting (issue 24), end to end with a target of our own
that reuses a closed httpx client (the hermes-agent #10933 shape): the reports name
httpx's closed-client error, and the accounting check fails on its claimed retries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.report.json_report import render_json
from harness.report.markdown import render_markdown
from harness.runner import RunSettings, run_case
from harness.scenario import scenario_from_dict
from harness.server import FaultServer
from harness.targets.runtime.protocol import describe_chain

TESTS_DIR = str(Path(__file__).resolve().parents[1])
CLOSED = "Cannot send a request, as the client has been closed"


@pytest.mark.timeout(60)
def test_a_target_that_reuses_a_closed_client_names_the_cause_and_fails_accounting():
    scenario = scenario_from_dict(
        {"name": "two_calls", "summary": "two healthy calls on one client", "request": {"calls": 2}}
    )
    settings = RunSettings(time_scale=0.05, environ={"PYTHONPATH": TESTS_DIR})
    with FaultServer() as server:
        r = run_case(
            scenario, "runner.causes_double:ClosedClientAgent", server=server, settings=settings
        )
    assert r.outcome.kind == "error_as_reply", r.message
    assert r.requests == 1 and r.attempts == 1 + 3  # one real call, then 3 claimed retries
    assert [c["type"] for c in r.chain] == ["ConnectionError", "RuntimeError"]
    assert r.chain[1]["via"] == "cause" and CLOSED in r.chain[1]["message"]
    assert r.verdict == "fail" and "accounting" in r.failed_checks
    assert r.evidence["accounting"].startswith("claims 4 attempts, 1 reached the wire")
    assert r.reply == "API call failed after 3 retries: Connection error."
    # ... and every report says so
    doc = json.loads(json.dumps(render_json([r]), default=str))["results"][0]
    assert CLOSED in doc["chain"][1]["message"] and doc["evidence"]["accounting"]
    assert doc["contract"]["required_reply"] is True and "accounting" in doc["contract"]["checks"]
    markdown = render_markdown([r])
    assert CLOSED in markdown and "claims 4 attempts, 1 reached the wire" in markdown


@pytest.mark.timeout(60)
def test_accounting_counts_model_call_attempts_never_the_probe_connections():
    """The #10933 build as hermes shows it: three endpoint probes, each on a connection of
    its own, then one real call and three claimed retries that never left the process.
    The probes are no attempts: 4 claimed, 1 reached the wire (issue 34)."""
    scenario = scenario_from_dict(
        {"name": "two_calls", "summary": "two healthy calls on one client", "request": {"calls": 2}}
    )
    settings = RunSettings(time_scale=0.05, environ={"PYTHONPATH": TESTS_DIR})
    with FaultServer() as server:
        r = run_case(
            scenario,
            "runner.causes_double:ProbingClosedClientAgent",
            server=server,
            settings=settings,
        )
    heads = [e for e in r.timeline if e["kind"] == "request_head"]
    assert [e["detail"]["path"] for e in heads] == [
        "/v1/models",
        "/api/tags",
        "/props",
        "/v1/chat/completions",
    ]
    assert len({e["conn"] for e in heads}) == 4  # a connection per probe
    assert r.requests == 1 and r.attempts == 4
    assert "accounting" in r.failed_checks, r.evidence
    assert r.evidence["accounting"].startswith("claims 4 attempts, 1 reached the wire")


def test_wire_attempts_on_a_recorded_timeline():
    from harness.contract.causes import wire_attempts
    from harness.server.timeline import RequestRecord

    def ev(conn, kind, **detail):
        return {"t": 1.0, "conn": conn, "request": None, "kind": kind, "detail": detail}

    def rec(index, conn, path, api):
        return RequestRecord(index, path, api, True, 1, conn, 1, None, "", 1.0)

    timeline = [
        ev(1, "accepted", port=1),  # a probe, answered 404, closed by the client
        ev(1, "request_head", path="/api/tags"),
        ev(1, "peer_closed", bytes_in=90),
        ev(2, "accepted", port=2),  # idle, pre-opened: nothing came
        ev(2, "peer_closed", bytes_in=0),
        ev(3, "accepted", port=3),  # bytes, never a whole head: an attempt a fault ate
        ev(3, "peer_reset", bytes_in=512),
        ev(4, "accepted", port=4),  # the model call, closed by the server first (a fin)
        ev(4, "request_head", path="/v1/chat/completions"),
        ev(4, "closed", how="fin", reason="fin", bytes_in=300),
        ev(5, "accepted", port=5),  # a probe the server closed: still no attempt
        ev(5, "request_head", path="/v1/models"),
        ev(5, "closed", how="fin", reason="end of connection", bytes_in=80),
        {"t": 1.0, "source": "relay", "conn": 9, "kind": "accepted", "detail": "from x:1"},
    ]
    records = [
        rec(1, 1, "/api/tags", "unknown"),
        rec(2, 4, "/v1/chat/completions", "chat"),
        rec(3, 5, "/v1/models", "models"),
    ]
    # the call, the eaten attempt on conn 3, and one the client may have written onto 4
    assert wire_attempts(records, timeline) == 3
    # a client abandoning attempts (its deadline cut request 4 before its response):
    # then a connection it opened and closed before writing (conn 2) is an attempt too
    cut = [
        ev(6, "accepted", port=6),
        {**ev(6, "request_head", path="/v1/chat/completions"), "request": 4},
        ev(6, "peer_closed", bytes_in=300),
    ]
    assert wire_attempts([*records, rec(4, 6, "/v1/chat/completions", "chat")], timeline + cut) == 5


def test_a_chain_is_bounded_cycle_safe_and_follows_cause_context_and_attempts():
    def chained() -> BaseException:
        try:
            try:
                raise OSError("reset by peer")
            except OSError as low:
                raise RuntimeError("x" * 1000) from low
        except RuntimeError:
            try:
                raise KeyError("while handling")
            except KeyError as exc:
                return exc

    chain = describe_chain(chained())
    assert [(c["type"], c["via"]) for c in chain] == [
        ("KeyError", "raised"),
        ("RuntimeError", "context"),
        ("OSError", "cause"),
    ]
    assert len(chain[1]["message"]) == 200
    loop = ValueError("a")
    loop.__context__ = TypeError("b")
    loop.__context__.__context__ = loop
    assert [c["type"] for c in describe_chain(loop)] == ["ValueError", "TypeError"]
    retries = LookupError("gave up")
    retries.attempts = [TimeoutError("stalled")]  # type: ignore[attr-defined]
    assert describe_chain(retries)[-1] == {
        "type": "TimeoutError",
        "message": "stalled",
        "via": "last attempt",
    }


def test_secrets_in_a_chain_or_a_reply_are_redacted():
    from harness.contract.causes import cause_chain, reply_text

    key = "sk-proj-" + "A1b2C3d4" * 4
    report = {
        "status": "raised",
        "chain": [{"type": "AuthError", "message": f"bad key {key}", "via": "raised"}],
    }
    assert key not in json.dumps(cause_chain(report))
    assert key not in (reply_text({"status": "returned", "text": f"Bearer {key}"}) or "")
