"""Agents on the real OpenAI SDK (imported in the child as ``runner.agent_loop_targets``):

- ``ToolLoopAgent``: one tool, a tool call answered with its result in the next model
  call (chat ``role: tool``), as docs/targets.md's agent does (the per-model-call ceiling
  tests);
- ``FinalAnswerAgent``: smolagents' final-answer shape, a streamed step carried into a
  non-streamed final call (a cut reply carried on); ``SwappedSystemFinalAgent``: the same,
  its final call under a system prompt of its own (smolagents' ``provide_final_answer``);
- ``AnswerToolAgent``: an agent whose final answer is a call of its own tool
  (``Target.answer_tool``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import openai

from harness.replies import tools_for_api
from harness.targets.base import CallResult, EventLog, Job, Target, run_calls

#: The answer tool of ``AnswerToolAgent``, as smolagents offers its ``final_answer``.
FINAL_ANSWER = {
    "name": "final_answer",
    "description": "Give the final answer to the task.",
    "parameters": {"type": "object", "properties": {"answer": {"type": "string"}}},
}


def _on_one_client(
    job: Job, log: EventLog, turn: Callable[[Any], str], details: Mapping[str, Any] | None = None
) -> CallResult:
    """Each call of the job is ``turn(client)`` on one OpenAI client (no SDK retries)."""
    client = openai.OpenAI(base_url=job.base_url, api_key=job.api_key, max_retries=0)
    try:
        texts = run_calls(job, log, lambda: turn(client))
    finally:
        client.close()
    return CallResult(text=texts[-1], texts=tuple(texts), details=dict(details or {}))


def _tool_loop(
    client: Any, job: Job, tools: Sequence[Any], answered_by: list[str], answer_tool: str = ""
) -> str:
    """Model calls until one answers: with text, or with a call of ``answer_tool``
    (its ``answer``); every other tool call is answered "saved". ``answered_by`` gets
    what each call's reply was: the tools it called, or "text"."""
    messages = [dict(m) for m in job.messages]
    for _ in range(4):
        reply = client.chat.completions.create(
            model=job.model, messages=messages, tools=tools, stream=False
        )
        message = reply.choices[0].message
        answered_by.extend(tc.function.name for tc in message.tool_calls or ())
        if not message.tool_calls:
            answered_by.append("text")
            return message.content or ""
        messages.append(message.model_dump(exclude_none=True))
        for tc in message.tool_calls:
            if tc.function.name == answer_tool:
                return str(json.loads(tc.function.arguments)["answer"])
            messages.append({"role": "tool", "tool_call_id": tc.id, "content": "saved"})
    raise RuntimeError("no final answer after 4 model calls")


class ToolLoopAgent(Target):
    name = "tool-loop-agent"
    apis = ("chat",)

    def call(self, job: Job, log: EventLog) -> CallResult:
        tools = tools_for_api(job.tools, "chat")
        return _on_one_client(job, log, lambda client: _tool_loop(client, job, tools, []))


class FinalAnswerAgent(Target):
    """An agent loop as smolagents' ToolCallingAgent ends one: the step's model call
    streamed (the SDK takes a stream that simply ends as complete), then a non-streamed
    final-answer call that carries the step's text as the assistant's turn."""

    name = "final-answer-agent"
    apis = ("chat",)
    #: the system prompts of the step and of the final call (None: the job's own)
    step_system: str | None = None
    final_system: str | None = None

    def call(self, job: Job, log: EventLog) -> CallResult:
        def under(system: str | None, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return (
                messages if system is None else [{"role": "system", "content": system}, *messages]
            )

        def turn(client: Any) -> str:
            messages = [dict(m) for m in job.messages]
            stream = client.chat.completions.create(
                model=job.model, messages=under(self.step_system, messages), stream=True
            )
            step = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
            messages += [
                {"role": "assistant", "content": step},
                {"role": "user", "content": "Now give your final answer."},
            ]
            final = client.chat.completions.create(
                model=job.model, messages=under(self.final_system, messages)
            )
            return final.choices[0].message.content or ""

        return _on_one_client(job, log, turn)


class SwappedSystemFinalAgent(FinalAnswerAgent):
    """smolagents' ``provide_final_answer``: the final call swaps the step's system
    prompt for its own and carries the rest of the conversation."""

    name = "swapped-system-final-agent"
    step_system = "You are an agent; call tools to solve the task."
    final_system = "An agent tried to answer the task below. Give its final answer."


class AnswerToolAgent(Target):
    """An agent that takes its final answer from a tool call of its own (smolagents'
    ToolCallingAgent and its ``final_answer`` tool): the job's tools plus that one, the
    work tool's calls answered with a result, until the model calls ``final_answer``."""

    name = "answer-tool-agent"
    apis = ("chat",)
    answer_tool = "final_answer"

    def call(self, job: Job, log: EventLog) -> CallResult:
        tools = [*tools_for_api(job.tools, "chat"), *tools_for_api((FINAL_ANSWER,), "chat")]
        answered_by: list[str] = []  # per model call: the tools it called, or "text"
        return _on_one_client(
            job,
            log,
            lambda client: _tool_loop(client, job, tools, answered_by, "final_answer"),
            {"answered_by": answered_by},
        )


def _streamed_answer(client: Any, job: Job, tools: Sequence[Any]) -> str:
    """One streamed model call; a ``final_answer`` call's arguments, glued from their
    fragments, are its answer -- parsed where they parse, else handed on as they came
    (smolagents' ``parse_json_if_needed``: a cut call's raw arguments become the answer)."""
    stream = client.chat.completions.create(
        model=job.model, messages=[dict(m) for m in job.messages], tools=tools, stream=True
    )
    text, args = "", ""
    for chunk in stream:
        for choice in chunk.choices:
            text += choice.delta.content or ""
            for tc in choice.delta.tool_calls or ():
                args += (tc.function.arguments or "") if tc.function else ""
    if not args:
        return text
    try:
        return str(json.loads(args)["answer"])
    except (ValueError, KeyError, TypeError):
        return args


class LenientAnswerToolAgent(Target):
    """An agent whose streamed final answer comes as a ``final_answer`` call and that
    hands a call it cannot parse on as the answer (smolagents' ToolCallingAgent)."""

    name = "lenient-answer-tool-agent"
    apis = ("chat",)
    answer_tool = "final_answer"

    def call(self, job: Job, log: EventLog) -> CallResult:
        tools = tools_for_api((FINAL_ANSWER,), "chat")
        return _on_one_client(job, log, lambda client: _streamed_answer(client, job, tools))
