"""``litellm``: ``litellm.completion`` in its own venv, both routes, on the fault server.

The cases run once in a module fixture on one reused child (importing litellm costs
seconds); each test asserts one case. They skip without ``.cache/litellm-venv`` and fail
instead when ``CI`` and ``HARNESS_EXTRA_TARGETS=1`` are set.
"""

from __future__ import annotations

import pytest

from harness.runner import RunSettings, run_cases
from harness.scenario import scenario_from_dict
from harness.targets.base import Job
from harness.targets.clients.litellm_sdk import litellm_unavailable, route
from tests.targets.ci_required import skip_or_fail

TARGET = "litellm"
FAST = 0.05
FIN_AT_3 = {"rules": [{"fault": {"phase": "event:3", "action": "fin"}}]}
CASES = {
    "chat_stream": {"api": "chat", "stream": True},
    "chat_body": {"api": "chat", "stream": False},
    "messages_stream": {"api": "messages", "stream": True},
    "messages_body": {"api": "messages", "stream": False},
    "chat_fin": {"api": "chat", "script": FIN_AT_3},
    "chat_truncated": {
        "api": "chat",
        "script": {"rules": [{"fault": {"phase": "event:3", "action": "truncate"}}]},
    },
    # a reply that is a tool call: the target reads its arguments, not only the text
    "chat_tool_stream": {"api": "chat", "stream": True, "script": {"reply": "tool_call"}},
    "chat_tool_body": {"api": "chat", "stream": False, "script": {"reply": "tool_call"}},
    "messages_tool_stream": {"api": "messages", "stream": True, "script": {"reply": "tool_call"}},
}


def test_route_sends_chat_to_the_openai_base_and_messages_to_the_server_root():
    job = Job(base_url="http://127.0.0.1:5000/v1", model="m")
    assert route(job) == {"model": "openai/m", "api_base": "http://127.0.0.1:5000/v1"}
    messages = Job(base_url="http://127.0.0.1:5000/v1", api="messages", model="m")
    assert route(messages) == {"model": "anthropic/m", "api_base": "http://127.0.0.1:5000"}


def test_the_proxy_is_unavailable_while_the_litellm_command_it_runs_cannot_run(tmp_path):
    # seen locally: litellm imported fine but exec of bin/litellm failed (ENOENT), and
    # the gateway then died at start-up instead of the target being skipped
    python = tmp_path / "bin" / "python"
    python.parent.mkdir()
    python.write_text("")
    python.chmod(0o755)
    package = tmp_path / "lib" / "python3.11" / "site-packages" / "litellm"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    assert litellm_unavailable(python) is None  # the SDK child needs only the interpreter
    reason = litellm_unavailable(python, proxy=True)
    assert reason is not None and str(tmp_path / "bin" / "litellm") in reason
    cli = tmp_path / "bin" / "litellm"
    cli.write_text(f"#!{python}\nimport litellm\n")
    assert litellm_unavailable(python, proxy=True) is not None  # not executable
    cli.chmod(0o755)
    assert litellm_unavailable(python, proxy=True) is None
    # a venv built elsewhere and moved: the script names an interpreter that is gone
    # (exec then fails with ENOENT, as if the script itself were missing)
    gone = "/nonexistent/litellm-venv/bin/python"
    cli.write_text(f"#!{gone}\nimport litellm\n")
    reason = litellm_unavailable(python, proxy=True)
    assert reason is not None and gone in reason


@pytest.fixture(scope="module")
def results():
    skip_or_fail("litellm", litellm_unavailable())
    scenarios = [
        scenario_from_dict({"name": name, "summary": name, "expected": {TARGET: "ok"}, **fields})
        for name, fields in CASES.items()
    ]
    done = run_cases(
        [(s, TARGET) for s in scenarios],
        settings=RunSettings(time_scale=FAST, jobs=1, wait_lanes=0),
    )
    return {r.scenario: r for r in done}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", ["chat_stream", "chat_body", "messages_stream", "messages_body"])
def test_healthy_call_on_either_route_returns_the_full_reply_with_no_leak(results, name):
    result = results[name]
    assert result.outcome.kind == "ok", result.message
    assert result.requests == 1
    assert result.leaks is not None and result.leaks.total == 0, result.leaks
    # The count is read just before the target closes LiteLLM's client cache. A body
    # call leaves its connection pooled there (measured: 1); a stream's is released when
    # the stream ends (measured: 0). No leak above says the close released the pooled one.
    cached = result.details["cached_connections"]
    if name.endswith("_body"):
        assert cached >= 1, result.details
    else:
        assert isinstance(cached, int), result.details


@pytest.mark.timeout(300)
def test_fin_mid_stream_raises_litellms_mid_stream_error(results):
    result = results["chat_fin"]
    assert result.outcome.kind == "error", result.message
    assert "MidStreamFallbackError" in result.outcome.mro


@pytest.mark.timeout(300)
def test_stream_without_done_comes_back_as_complete(results):
    assert results["chat_truncated"].outcome.kind == "truncated_as_complete"


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", ["chat_tool_stream", "chat_tool_body", "messages_tool_stream"])
def test_a_tool_call_reply_is_read_whole_not_as_empty_text(results, name):
    # read as content only, a tool-call reply was "0 of 94 characters": truncated_as_complete
    result = results[name]
    assert result.outcome.kind == "ok", result.message
