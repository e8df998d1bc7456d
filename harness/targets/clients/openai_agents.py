"""``openai-agents``: the OpenAI Agents SDK ``Runner`` with one harmless tool, at its defaults.

An ``Agent`` with two harmless function tools (``current_time``: returns a constant;
``record_note``, the tool the fault server's tool calls name: records its arguments in
the job) runs one turn
through ``Runner.run`` or, for a streamed scenario, ``Runner.run_streamed`` (events
consumed to the end); the reply is ``result.final_output``. The model is the SDK's
``OpenAIResponsesModel`` for ``api = "responses"`` (the SDK's default API) and
``OpenAIChatCompletionsModel`` for ``api = "chat"``, on an ``AsyncOpenAI`` client with
the job's base URL, closed after the job. Tracing is disabled (it would export to the
internet). An agent loop: when the model asks for the tool, the Runner calls it and
makes a second model call with the result (``max_turns`` 10). A ``record_note`` call
the SDK ran with cut arguments (``hermes_tool.truncated``) is raised as
``ExecutedTruncatedToolCall`` after the turn (outcome ``executed_truncated_tool_call``);
arguments that are not JSON or miss a field never reach the function (the SDK
validates them against the tool's schema first).

Defaults (openai-agents 0.24, ``run_config.py`` / ``model_settings.py``):
``DEFAULT_MAX_TURNS = 10``; ``ModelSettings.retry = None`` (no runner-managed retries),
so the openai SDK's own defaults apply: 600 s timeout, 2 retries. Own venv
(``.cache/openai-agents-venv``): the SDK needs openai 3.x.

Not here: multi-agent handoffs, guardrails, sessions.
"""

from __future__ import annotations

from typing import Any

from harness.apis import chat, pick, responses
from harness.targets.base import (
    CallResult,
    EventLog,
    ExecutedTruncatedToolCall,
    Job,
    run_calls,
)
from harness.targets.hermes.in_venv.hermes_driver import tool as hermes_tool
from harness.targets.runtime.venv import VenvTarget

__all__ = ["OpenAIAgentsTarget", "TOOL_RESULT"]

#: What the harmless tool returns.
TOOL_RESULT = "12:00"


class OpenAIAgentsTarget(VenvTarget):
    name = "openai-agents"
    apis = ("chat", "responses")
    reusable = True
    venv = "openai-agents-venv"
    package = "agents"
    child_env = {"OPENAI_AGENTS_DISABLE_TRACING": "1"}

    def run(self, job: Job, log: EventLog) -> CallResult:
        return _run(job, log)


def _run(job: Job, log: EventLog) -> CallResult:
    """The job's calls (``run_calls``), each an agent turn on one event loop that lives
    for the job (``asyncio.Runner``: what ``asyncio.run`` is, kept across the calls)."""
    import asyncio

    from agents import (
        Agent,
        ModelSettings,
        OpenAIChatCompletionsModel,
        OpenAIResponsesModel,
        Runner,
        function_tool,
        set_tracing_disabled,
    )
    from openai import AsyncOpenAI

    set_tracing_disabled(True)

    @function_tool
    def current_time() -> str:
        """The current time (a constant: the tool is harmless)."""
        log.mark("tool", "current_time")
        return TOOL_RESULT

    executed: list[dict[str, Any]] = []

    @function_tool(name_override=hermes_tool.TOOL_NAME)
    def record_note(path: str, text: str) -> str:
        """Record a note (a test tool: it only records its arguments)."""
        log.mark("tool", hermes_tool.TOOL_NAME)
        executed.append({"path": path, "text": text})
        return "recorded"

    prompt = next((m["content"] for m in reversed(job.messages) if m["role"] == "user"), "")
    model_cls = pick(
        {chat.API: OpenAIChatCompletionsModel, responses.API: OpenAIResponsesModel},
        job.api,
        who="openai-agents",
    )

    async def new_client() -> Any:
        return AsyncOpenAI(base_url=job.base_url, api_key=job.api_key)

    with asyncio.Runner() as loop:
        client = loop.run(new_client())

        def rebuild() -> None:
            nonlocal client
            loop.run(client.close())
            client = loop.run(new_client())

        def one() -> str:
            settings = (
                ModelSettings(max_tokens=job.max_tokens) if job.max_tokens else ModelSettings()
            )
            agent = Agent(
                name="harness",
                instructions="Answer briefly.",
                tools=[current_time, record_note],
                model=model_cls(model=job.model, openai_client=client),
                model_settings=settings,
            )
            try:
                return loop.run(_turn(Runner, agent, prompt, job, log))
            finally:  # worse than whatever the turn raised: it replaces that
                _raise_if_cut(executed)

        try:
            label = f": api={job.api} stream={job.stream}"
            texts = run_calls(job, log, one, rebuild=rebuild, label=label)
        finally:
            loop.run(client.close())
    return CallResult(text=texts[-1], finish_reason="stop", texts=tuple(texts))


async def _turn(runner: Any, agent: Any, prompt: str, job: Job, log: EventLog) -> str:
    if not job.stream:
        result = await runner.run(agent, prompt)
    else:
        result = runner.run_streamed(agent, prompt)
        async for event in result.stream_events():
            if getattr(event, "type", "") == "raw_response_event":
                log.mark("event", type(getattr(event, "data", None)).__name__)
    log.mark("final", f"{len(result.raw_responses)} model call(s)")
    return str(result.final_output or "")


def _raise_if_cut(executed: list[dict[str, Any]]) -> None:
    cut = next((a for a in executed if hermes_tool.truncated(a)), None)
    if cut is not None:
        raise ExecutedTruncatedToolCall(
            f"the agent executed {hermes_tool.TOOL_NAME} with cut arguments {cut!r}"
        )
