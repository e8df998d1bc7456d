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
