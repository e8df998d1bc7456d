"""The child's report and the server's request records, parsed once into typed values."""

from __future__ import annotations

import pytest

from harness.apis.lineage import Lineage as ServerLineage
from harness.contract.observation import ChildReport, FollowUp, Lineage, Request, requests_of
from harness.server.timeline import RequestRecord

pytestmark = pytest.mark.timeout(30)


def test_a_returned_report_is_read_typed_and_its_follow_up_ends_the_job() -> None:
    raw = {
        "status": "returned",
        "t": 4,
        "attempts": 2,
        "finish_reason": "stop",
        "events": [["first_byte", 1.5]],
        "details": {"follow_up": {"ok": 1, "t": 3.5}},
    }
    child = ChildReport.parse(raw)
    assert child is not None and child.raw is raw and child.ran
    assert (child.t, child.attempts, child.finish_reason) == (4.0, 2, "stop")
    assert child.events == (("first_byte", 1.5),)
    assert child.follow_up == FollowUp(ok=True, t=3.5) and child.end_t == 3.5
    assert child.claimed_attempts(calls=1) == 2


def test_a_field_of_the_wrong_type_is_unknown_never_a_measurement() -> None:
    child = ChildReport.parse({"status": "returned", "t": "soon", "attempts": True, "details": 3})
    assert child is not None
    assert child.t is None and child.end_t is None and child.attempts is None
    assert child.details == {} and child.follow_up is None
    assert ChildReport.parse(None) is None


@pytest.mark.parametrize("status", ["skipped", "not_applicable", "did_not_start"])
def test_a_case_that_never_ran_says_so(status: str) -> None:
    child = ChildReport.parse({"status": status, "message": "why"})
    assert child is not None and not child.ran and child.message == "why"


def test_a_server_record_is_read_as_a_typed_request_once() -> None:
    record = RequestRecord(
        index=3,
        path="/v1/chat/completions",
        api="chat",
        stream=True,
        attempt=2,
        connection=1,
        request_on_connection=2,
        fault="status@request(code=429)",
        expected_text="hi",
        t_start=12.5,
        lineage=ServerLineage(kind="retry", of=None, call=2).to_dict(),
    )
    (request,) = requests_of([record])
    assert request == Request(
        index=3,
        t_start=12.5,
        api="chat",
        fault="status@request(code=429)",
        expected_text="hi",
        lineage=Lineage(kind="retry", of=None, call=2),
    )
    assert Request.of(request) is request
