"""An agent for the per-model-call ceiling tests (imported in the child as
``runner.agent_loop_targets``): the real OpenAI SDK, one tool, a tool call answered with
its result in a second model call (chat ``role: tool``), as docs/targets.md's agent does."""

from __future__ import annotations

from harness.replies import tools_for_api
from harness.targets.base import CallResult, EventLog, Job, Target, run_calls


class ToolLoopAgent(Target):
    name = "tool-loop-agent"
    apis = ("chat",)

    def call(self, job: Job, log: EventLog) -> CallResult:
        import openai

        tools = tools_for_api(job.tools, "chat")
        client = openai.OpenAI(base_url=job.base_url, api_key=job.api_key, max_retries=0)

        def turn() -> str:
            messages = [dict(m) for m in job.messages]
            for _ in range(4):
                reply = client.chat.completions.create(
                    model=job.model, messages=messages, tools=tools, stream=False
                )
                message = reply.choices[0].message
                if not message.tool_calls:
                    return message.content or ""
                messages.append(message.model_dump(exclude_none=True))
                for tc in message.tool_calls:
                    messages.append({"role": "tool", "tool_call_id": tc.id, "content": "saved"})
            raise RuntimeError("no final answer after 4 model calls")

        try:
            texts = run_calls(job, log, turn)
        finally:
            client.close()
        return CallResult(text=texts[-1], texts=tuple(texts))


class FinalAnswerAgent(Target):
    """An agent loop as smolagents' ToolCallingAgent ends one: the step's model call
    streamed (the SDK takes a stream that simply ends as complete), then a non-streamed
    final-answer call that carries the step's text as the assistant's turn."""

    name = "final-answer-agent"
    apis = ("chat",)

    def call(self, job: Job, log: EventLog) -> CallResult:
        import openai

        client = openai.OpenAI(base_url=job.base_url, api_key=job.api_key, max_retries=0)

        def turn() -> str:
            messages = [dict(m) for m in job.messages]
            stream = client.chat.completions.create(model=job.model, messages=messages, stream=True)
            step = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
            messages += [
                {"role": "assistant", "content": step},
                {"role": "user", "content": "Now give your final answer."},
            ]
            final = client.chat.completions.create(model=job.model, messages=messages)
            return final.choices[0].message.content or ""

        try:
            texts = run_calls(job, log, turn)
        finally:
            client.close()
        return CallResult(text=texts[-1], texts=tuple(texts))


class AnswerToolAgent(Target):
    """An agent that takes its final answer from a tool call of its own (smolagents'
    ToolCallingAgent and its ``final_answer`` tool): the job's tools plus that one, the
    work tool's calls answered with a result, until the model calls ``final_answer``."""

    name = "answer-tool-agent"
    apis = ("chat",)
    answer_tool = "final_answer"

    def call(self, job: Job, log: EventLog) -> CallResult:
        import json

        import openai

        final = {
            "name": "final_answer",
            "description": "Give the final answer to the task.",
            "parameters": {"type": "object", "properties": {"answer": {"type": "string"}}},
        }
        tools = [*tools_for_api(job.tools, "chat"), *tools_for_api((final,), "chat")]
        client = openai.OpenAI(base_url=job.base_url, api_key=job.api_key, max_retries=0)
        answered_by: list[str] = []  # per model call: the tool it called, or "text"

        def turn() -> str:
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
                    if tc.function.name == "final_answer":
                        return str(json.loads(tc.function.arguments)["answer"])
                    messages.append({"role": "tool", "tool_call_id": tc.id, "content": "saved"})
            raise RuntimeError("no final answer after 4 model calls")

        try:
            texts = run_calls(job, log, turn)
        finally:
            client.close()
        details = {"answered_by": answered_by}
        return CallResult(text=texts[-1], texts=tuple(texts), details=details)
