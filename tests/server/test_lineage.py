"""The pure lineage function (``harness.apis.lineage.place``) on hand-written bodies
of each API, read by the per-API readers."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.apis.lineage import Conversation, Lineage, place
from harness.server.apis import conversation_of

pytestmark = pytest.mark.timeout(60)

USER = {"role": "user", "content": "what is the weather?"}
CHAT_TOOLS = [{"type": "function", "function": {"name": "weather", "parameters": {}}}]
CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
    ],
}


def lineages(api: str, bodies: list[dict[str, Any]]) -> list[Lineage]:
    """Each body's lineage, placed after the ones before it (numbered from 1)."""
    out: list[Lineage] = []
    earlier: list[tuple[int, Conversation, int]] = []
    for i, body in enumerate(bodies, start=1):
        conv = conversation_of(api, body)
        lin = place(i, conv, earlier)
        out.append(lin)
        earlier.append((i, conv, lin.call))
    return out


def test_a_retry_ignores_everything_but_the_conversation_and_tools() -> None:
    first = {"model": "m", "messages": [USER], "tools": CHAT_TOOLS, "stream": True}
    again = {
        **first,
        "stream_options": {"include_usage": True},
        "metadata": {"attempt": "2"},
        "user": "x",
        "model": "other",
    }
    a, b = lineages("chat", [first, again])
    assert a == Lineage("new", call=1)
    assert b == Lineage("retry", call=1, of=1)


def test_other_tools_are_not_a_retry() -> None:
    first = {"messages": [USER], "tools": CHAT_TOOLS}
    other = {"messages": [USER]}
    assert [lin.kind for lin in lineages("chat", [first, other])] == ["new", "new"]


def test_a_retry_of_a_retry_belongs_to_the_first_call() -> None:
    body = {"messages": [USER]}
    assert [lin.call for lin in lineages("chat", [body, body, body])] == [1, 1, 1]
    assert lineages("chat", [body, body, body])[2].of == 2


def test_chat_tool_result_continues_the_call() -> None:
    first = {"messages": [USER], "tools": CHAT_TOOLS}
    second = {
        # a final-answer call that offers no tools is still a continuation
        "messages": [USER, CALL, {"role": "tool", "tool_call_id": "c1", "content": "sunny"}],
    }
    _, b = lineages("chat", [first, second])
    assert b == Lineage(
        "continuation", call=2, of=1, appended=("assistant:tool_call", "tool:tool_result")
    )


def test_text_observation_continues_the_call() -> None:
    first = {"messages": [USER]}
    second = {
        "messages": [
            USER,
            {"role": "assistant", "content": "Thought: I should look."},
            {"role": "user", "content": "Observation: sunny"},
        ]
    }
    _, b = lineages("chat", [first, second])
    assert (b.kind, b.of, b.appended) == ("continuation", 1, ("assistant:text", "user:text"))


def test_the_longest_earlier_prefix_is_the_one_continued() -> None:
    one = {"messages": [USER]}
    two = {"messages": [USER, CALL, {"role": "tool", "tool_call_id": "c1", "content": "a"}]}
    three = {"messages": [*two["messages"], {"role": "assistant", "content": "done"}, USER]}
    lins = lineages("chat", [one, two, three])
    assert [(lin.kind, lin.of) for lin in lins] == [
        ("new", None),
        ("continuation", 1),
        ("continuation", 2),
    ]


def test_responses_function_call_output_continues_the_call() -> None:
    first = {"input": "what is the weather?", "tools": [{"type": "function", "name": "weather"}]}
    second = {
        "input": [
            {"role": "user", "content": "what is the weather?"},
            {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
        ],
        "tools": [{"type": "function", "name": "weather"}],
    }
    _, b = lineages("responses", [first, second])
    assert b.kind == "continuation" and b.of == 1
    assert b.appended == ("assistant:tool_call", "tool:tool_result")


def test_responses_previous_response_id_continues_the_reply_it_names() -> None:
    first = {"input": "hi", "instructions": "be brief"}
    rid = conversation_of("responses", first).reply_id
    assert rid.startswith("resp_")
    second = {
        "previous_response_id": rid,
        "input": [{"type": "function_call_output", "call_id": "c1", "output": "sunny"}],
    }
    _, b = lineages("responses", [first, second])
    assert (b.kind, b.of, b.appended) == ("continuation", 1, ("tool:tool_result",))


def test_messages_tool_result_block_continues_the_call() -> None:
    tools = [{"name": "weather", "input_schema": {"type": "object"}}]
    first = {"system": "s", "messages": [USER], "tools": tools}
    second = {
        "system": "s",
        "messages": [
            USER,
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "weather", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "sunny"}],
            },
        ],
        "tools": tools,
    }
    _, b = lineages("messages", [first, second])
    assert b.appended == ("assistant:tool_call", "user:tool_result")
    conv = conversation_of("messages", second)
    assert conv.roles == ("system", "user", "assistant", "user")
    assert conv.tool_names == ("weather",)


def test_a_moved_cache_mark_is_not_a_change() -> None:
    plain = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}
    marked = {
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}],
            }
        ]
    }
    assert lineages("messages", [plain, marked])[1].kind == "retry"


def test_a_closing_call_under_its_own_system_prompt_continues_the_call() -> None:
    # smolagents' provide_final_answer: its own system turn, then the rest carried
    step = {"messages": [{"role": "system", "content": "you are an agent"}, USER]}
    said = {"role": "assistant", "content": "Calling tools: weather"}
    post = {"role": "user", "content": "give the final answer"}
    final = {"messages": [{"role": "system", "content": "answer now"}, USER, said, post]}
    a, b = lineages("chat", [step, final])
    assert (b.kind, b.of, b.call) == ("continuation", 1, 2)
    assert b.appended == ("assistant:text", "user:text") and b.replaced == ("system:text",)
    # Messages: the system is its own field; a replaced one is named the same way
    m_step = {"system": "you are an agent", "messages": [USER]}
    m_final = {"system": "answer now", "messages": [USER, said, post]}
    assert lineages("messages", [m_step, m_final])[1].replaced == ("system:text",)
    # the same system prompt is a plain continuation; nothing carried is new
    assert lineages("chat", [step, {"messages": [*step["messages"], said]}])[1].replaced == ()
    other = {"messages": [{"role": "system", "content": "answer now"}, post]}
    assert lineages("chat", [step, other])[1].kind == "new"


def test_another_prompt_is_a_new_conversation() -> None:
    a = {"messages": [USER]}
    b = {"messages": [{"role": "user", "content": "something else"}]}
    assert [lin.kind for lin in lineages("chat", [a, b])] == ["new", "new"]
    # an earlier, longer conversation is not continued by a shorter one
    assert lineages("chat", [{"messages": [USER, CALL]}, a])[1].kind == "new"


_message = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool"]), "content": st.text(max_size=8)}
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_message, min_size=1, max_size=6), st.lists(_message, min_size=1, max_size=4))
def test_extending_is_a_continuation_and_repeating_a_retry(
    base: list[dict[str, str]], more: list[dict[str, str]]
) -> None:
    """Property: a body that appends turns to an earlier one continues it with exactly
    those turns; the same body again is a retry of the call it belongs to."""
    first, longer = {"messages": base}, {"messages": base + more}
    a, b, c = lineages("chat", [first, longer, longer])
    assert a.kind == "new"
    assert b.kind == "continuation" and b.of == 1 and b.call == 2
    assert b.appended == tuple(
        f"{m['role']}:" + ("tool_result" if m["role"] == "tool" else "text") for m in more
    )
    assert (c.kind, c.call) == ("retry", 2)
