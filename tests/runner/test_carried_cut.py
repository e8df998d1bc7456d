"""A cut reply taken as whole shows in the agent's next model call: the continuation
carries the cut text as the assistant's turn. Judged ``truncated_as_complete`` though the
job's final answer (another call's) came back whole; a whole reply carried, a prefill
(the cut text as the last turn: "go on from here") or a rewritten text claims nothing.
The pure rule on records read by each API's own conversation reader, and a real OpenAI
SDK agent (smolagents' final-answer shape) against the embedded fault server."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.apis import api_for
from harness.apis.lineage import place
from harness.contract.carried import carried_cut
from harness.contract.observation import requests_of
from harness.runner import RunSettings, run_case
from harness.scenario import load_catalog

TESTS_DIR = str(Path(__file__).resolve().parents[1])
TARGET = "runner.agent_loop_targets:FinalAnswerAgent"
MEANT = "packet keeps flowing over the socket."
CUT = "packet keeps"


@dataclass
class Record:
    index: int
    expected_text: str
    conversation: Any
    lineage: dict[str, Any]


def _records(api: str, bodies: list[dict[str, Any]]) -> list[Record]:
    reader = api_for(api)
    out: list[Record] = []
    for i, body in enumerate(bodies):
        conv = reader.conversation(body, f"seed{i}")
        earlier = [(r.index, r.conversation, int(r.lineage["call"])) for r in out]
        out.append(Record(i, MEANT, conv, place(i, conv, earlier).to_dict()))
    return out


def _chat(*assistant: str, then: bool = True) -> list[dict[str, Any]]:
    first = [{"role": "user", "content": "hi"}]
    turns = [{"role": "assistant", "content": a} for a in assistant]
    more = [{"role": "user", "content": "final answer?"}] if then else []
    return [{"messages": first}, {"messages": first + turns + more}]


def _messages(text: str) -> list[dict[str, Any]]:
    first = [{"role": "user", "content": "hi"}]
    said = {"role": "assistant", "content": [{"type": "text", "text": text}]}
    nxt = {"role": "user", "content": [{"type": "text", "text": "final answer?"}]}
    return [{"messages": first}, {"messages": [*first, said, nxt]}]


def _responses(text: str) -> list[dict[str, Any]]:
    first = [{"role": "user", "content": "hi"}]
    said = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
    }
    return [{"input": first}, {"input": [*first, said, {"role": "user", "content": "more"}]}]


@pytest.mark.parametrize(
    ("api", "bodies"),
    [("chat", _chat(CUT)), ("messages", _messages(CUT)), ("responses", _responses(CUT))],
)
def test_a_continuation_carrying_a_cut_reply_in_any_api_s_form_is_named(api, bodies):
    why = carried_cut(requests_of(_records(api, bodies)))
    assert why == (
        f"request 1 carried request 0's reply cut at {len(CUT)} of {len(MEANT)} characters "
        "as the model's whole turn"
    )


@pytest.mark.parametrize(
    "bodies",
    [
        _chat(MEANT),  # the whole reply carried on
        _chat(MEANT + "\n"),  # whole, with the client's own whitespace
        _chat(CUT, then=False),  # a prefill: the model is asked to go on from the cut
        _chat(CUT + " [cut]"),  # rewritten: not what the server sent, no claim
        _chat(""),  # nothing carried
    ],
    ids=["whole", "whitespace", "prefill", "rewritten", "empty"],
)
def test_a_whole_reply_a_prefill_or_a_rewritten_text_claims_nothing(bodies):
    assert carried_cut(requests_of(_records("chat", bodies))) is None


def _settings() -> RunSettings:
    return RunSettings(environ={**os.environ, "PYTHONPATH": TESTS_DIR}, time_scale=0.1)


def _scenario(name: str) -> Any:
    (scenario,) = [s for s in load_catalog() if s.name == name]
    return scenario


@pytest.mark.timeout(90)
@pytest.mark.parametrize(
    ("target", "replaced"),
    [(TARGET, []), ("runner.agent_loop_targets:SwappedSystemFinalAgent", ["system:text"])],
    ids=["same-system", "swapped-system"],
)
def test_an_agent_that_went_on_from_a_cut_stream_is_truncated_as_complete(server, target, replaced):
    result = run_case(
        _scenario("chat_truncated_no_terminal"), target, server=server, settings=_settings()
    )
    # the final answer was whole: only the second call's body shows the first was cut
    assert result.outcome.kind == "truncated_as_complete", (result.outcome, result.message)
    assert "carried request" in result.outcome.detail and "cut at" in result.outcome.detail
    assert result.verdict == "fail" and "honest_reply" in result.failed_checks
    shapes = [e["detail"] for e in result.timeline if e["kind"] == "request_shape"]
    assert [s["lineage"] for s in shapes] == ["new", "continuation"]
    # a final call under a system prompt of its own still continues the step
    assert list(shapes[1]["replaced"]) == replaced


@pytest.mark.timeout(90)
def test_the_same_agent_on_a_whole_stream_passes(server):
    result = run_case(_scenario("chat_healthy_stream"), TARGET, server=server, settings=_settings())
    assert result.outcome.kind == "ok", (result.outcome, result.message)
    assert result.verdict == "pass", (result.failed_checks, result.evidence)
