"""``langchain-openai`` and ``openai-agents``, each in its venv, on the fault server.

One run per target in a module fixture (a reused child: the imports cost seconds); each
test asserts one case. They skip without the venvs (``HARNESS_EXTRA_TARGETS=1 bash
ci/setup``) and fail instead when ``CI`` and ``HARNESS_EXTRA_TARGETS=1`` are set.
"""

from __future__ import annotations

import pytest

from harness.runner import RunSettings, run_cases
from harness.scenario import scenario_from_dict
from harness.targets import load_target
from tests.targets.ci_required import fail_if_required

FAST = 0.05
TRUNCATE_AT_3 = {"rules": [{"fault": {"phase": "event:3", "action": "truncate"}}]}
CASES = {
    "langchain-openai": {
        "stream": {"api": "chat", "stream": True},
        "invoke": {"api": "chat", "stream": False},
        "truncated": {"api": "chat", "script": TRUNCATE_AT_3},
        "tool_stream": {"api": "chat", "stream": True, "script": {"reply": "tool_call"}},
        "tool_invoke": {"api": "chat", "stream": False, "script": {"reply": "tool_call"}},
    },
    "openai-agents": {
        "chat_stream": {"api": "chat", "stream": True},
        "chat_run": {"api": "chat", "stream": False},
        "responses_stream": {"api": "responses", "stream": True},
        "responses_run": {"api": "responses", "stream": False},
        "tool_call": {"api": "chat", "script": {"reply": "tool_call"}},
        "tool_call_cut": {
            "api": "chat",
            "script": {
                "reply": "tool_call",
                "rules": [
                    {"fault": {"phase": "event:0", "action": "cut_tool_call", "at": "string"}}
                ],
            },
        },
    },
}


@pytest.fixture(scope="module")
def results():
    out = {}
    for target, cases in CASES.items():
        reason = load_target(target).unavailable()
        if reason is not None:
            fail_if_required(target, reason)
            continue
        scenarios = [
            scenario_from_dict({"name": n, "summary": n, "expected": {target: "ok"}, **f})
            for n, f in cases.items()
        ]
        done = run_cases(
            [(s, target) for s in scenarios],
            settings=RunSettings(time_scale=FAST, jobs=1, wait_lanes=0),
        )
        out.update({(target, r.scenario): r for r in done})
    return out


def _case(results, target: str, name: str):
    if (target, name) not in results:
        pytest.skip(f"{target}: {load_target(target).unavailable()}")
    return results[(target, name)]


@pytest.mark.timeout(400)
@pytest.mark.parametrize(
    ("target", "name"),
    [
        ("langchain-openai", "stream"),
        ("langchain-openai", "invoke"),
        ("openai-agents", "chat_stream"),
        ("openai-agents", "chat_run"),
        ("openai-agents", "responses_stream"),
        ("openai-agents", "responses_run"),
    ],
)
def test_healthy_call_returns_the_full_reply(results, target, name):
    result = _case(results, target, name)
    assert result.outcome.kind == "ok", result.message
    assert result.requests == 1


@pytest.mark.timeout(400)
@pytest.mark.parametrize("name", ["tool_stream", "tool_invoke"])
def test_langchain_reads_a_tool_call_reply_whole(results, name):
    # read as content only, a tool-call reply was empty text: truncated_as_complete
    result = _case(results, "langchain-openai", name)
    assert result.outcome.kind == "ok", result.message


@pytest.mark.timeout(400)
def test_langchain_stream_without_done_comes_back_as_complete(results):
    result = _case(results, "langchain-openai", "truncated")
    assert result.outcome.kind == "truncated_as_complete", result.message


@pytest.mark.timeout(400)
def test_openai_agents_runs_the_fault_servers_tool_and_answers_after_it(results):
    result = _case(results, "openai-agents", "tool_call")
    assert result.outcome.kind == "ok", result.message
    assert result.requests == 2  # the tool ran: a second model call carried its result


@pytest.mark.timeout(400)
def test_openai_agents_never_executes_a_tool_call_with_cut_arguments(results):
    """Measured with openai-agents 0.24: the SDK's schema check keeps cut arguments from
    the function (the tool would report executed_truncated_tool_call)."""
    result = _case(results, "openai-agents", "tool_call_cut")
    assert result.outcome.kind != "executed_truncated_tool_call", result.message
