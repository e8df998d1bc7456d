"""The in-process SDK targets read a parallel tool-call reply as the server wrote it:
each call rendered (``harness.replies.render_tool_calls``), in the server's order, streamed
or not -- the text the runner compares with the server's expected text."""

from __future__ import annotations

import pytest

from harness.faults import script_from_dict
from harness.replies import DEFAULT_TOOL_SPEC
from harness.targets import load_target
from harness.targets.base import EventLog, Job

pytestmark = pytest.mark.timeout(30)

USER = ({"role": "user", "content": "hi"},)


@pytest.mark.parametrize(
    ("target", "api"),
    [("openai-sdk", "chat"), ("openai-sdk", "responses"), ("anthropic-sdk+guard", "messages")],
)
@pytest.mark.parametrize("stream", [True, False])
def test_parallel_tool_calls_read_as_the_expected_text(fault_server, target, api, stream):
    fault_server.load(script_from_dict({"reply": "parallel_tool_calls", "events": 4}))
    sdk = load_target(target)()
    job = Job(
        base_url=fault_server.base_url,
        api=api,
        stream=stream,
        messages=USER,
        tools=(DEFAULT_TOOL_SPEC,),  # a model calls only a tool it was offered
    )
    result = sdk.call(job, EventLog())
    expected = fault_server.requests()[-1].expected_text
    assert expected.count("<tool_call ") == 2
    assert result.text == expected
