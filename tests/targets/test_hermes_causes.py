"""The hermes driver names what hermes caught and counts what it says it tried (issue 24):
hermes turns the SDK's exception into reply text ("API call failed after 3 retries:
Connection error."), so the driver watches where hermes summarises each caught error
and reads its retry claims from its log. No hermes needed: a stand-in class with the
same hook (``_summarize_api_error``, a staticmethod) and the same log lines."""

from __future__ import annotations

import logging
from typing import Any

from harness.targets.hermes.in_venv.hermes_driver.causes import watching
from harness.targets.hermes.in_venv.hermes_driver.turns import protocol_result

CLOSED = "Cannot send a request, as the client has been closed."


class StandInAgent:
    """Does what hermes's retry loop does with a caught error: summarise, log, give up."""

    @staticmethod
    def _summarize_api_error(error: Exception) -> str:
        return str(error)

    def run_conversation(self, retries: int) -> dict[str, Any]:
        log = logging.getLogger("agent.conversation_loop")
        for attempt in range(1, retries + 1):
            try:
                try:
                    raise RuntimeError(CLOSED)
                except RuntimeError as exc:
                    raise ConnectionError("Connection error.") from exc
            except ConnectionError as api_error:
                summary = self._summarize_api_error(api_error)
                log.warning("API call failed (attempt %s/%s) summary=%s", attempt, retries, summary)
        log.error("API call failed after %s retries. %s", retries, summary)
        return {"final_response": f"API call failed after {retries} retries: {summary}"}


def test_the_exception_hermes_caught_and_its_retry_claim_are_kept():
    original = StandInAgent.__dict__["_summarize_api_error"]
    with watching(StandInAgent) as watch:
        StandInAgent().run_conversation(3)
    assert StandInAgent.__dict__["_summarize_api_error"] is original  # the hook is restored
    assert [c["type"] for c in watch.caught] == ["ConnectionError", "RuntimeError"]
    assert watch.caught[1] == {"type": "RuntimeError", "message": CLOSED, "via": "cause"}
    assert (watch.claimed, watch.claim) == (3, "API call failed after 3 retries")


def test_a_failed_turn_reports_the_caught_chain_and_the_attempts_claimed_over_all_turns():
    def turn(index: int, **fields: Any) -> dict[str, Any]:
        out = {
            "index": index,
            "text": "fine.",
            "completed": True,
            "failed": False,
            "partial": False,
            "turn_exit_reason": "text_response(finish_reason=stop)",
            "error": None,
            "api_calls": 1,
            "exception": None,
            "rebuild": None,
        }
        return out | fields

    caught = [
        {"type": "APIConnectionError", "message": "Connection error.", "via": "raised"},
        {"type": "RuntimeError", "message": CLOSED, "via": "cause"},
    ]
    failed = turn(
        1,
        text="API call failed after 3 retries: Connection error.",
        failed=True,
        caught=caught,
        claimed_attempts=3,
        claim="API call failed after 3 retries",
    )
    report = protocol_result(
        {"hermes_version": "x", "api_mode": "chat_completions", "turns": [turn(0), failed]}
    )
    assert report["status"] == "returned"
    assert report["attempts"] == 1 + 3  # the healthy first call, then the 3 hermes claims
    assert report["details"]["caught"] == caught
    assert report["details"]["attempts_claimed_by"] == "hermes log: API call failed after 3 retries"
