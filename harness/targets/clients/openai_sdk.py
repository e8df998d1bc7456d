"""``openai-sdk``: the bare OpenAI SDK at its defaults -- what an unprotected agent does.

``OpenAI(base_url=..., api_key=...)`` with nothing else: 600 s read timeout, two
retries with the SDK's own backoff, no watchdog, no truncation guard. A stream is
consumed to its end and whatever text arrived is returned, the way a naive agent loop
does. Sequential calls share one client, as an agent does; a rebuild closes it and
makes a new one. Clients are closed before returning so leaks count what the SDK
left behind.

Not here: any protection (that is the ``reference`` target).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from harness.apis import chat, pick, responses
from harness.replies import render_tool_call, render_tool_calls
from harness.targets.base import CallResult, EventLog, Job, follow_up
from harness.targets.clients.chat_reply import message_text, read_chat_stream
from harness.targets.runtime.warmup import warm_up_target
from harness.targets.sdk_client import SDKClientTarget

__all__ = ["OpenAISDKTarget"]


class OpenAISDKTarget(SDKClientTarget):
    name = "openai-sdk"
    apis = ("chat", "responses")
    reusable = True
    follows_up = True

    def prepare(self) -> None:
        warm_up_target(self, apis=self.apis)

    def make_client(self, job: Job) -> Any:
        """The SDK client for one job (a subclass changes only this)."""
        import openai

        return openai.OpenAI(base_url=job.base_url, api_key=job.api_key)

    def one_call(self, client: Any, job: Job, log: EventLog) -> CallResult:
        """One call of the job on ``client``, consumed to its end."""
        return _call_for(job)(client, job, log)

    def before_close(self, client: Any, job: Job, log: EventLog) -> None:
        follow_up(job, log, lambda url: _follow_up_call(client, job, url, log))


def _follow_up_call(client: Any, job: Job, base_url: str, log: EventLog) -> str:
    """One non-streamed call of the job's API through ``client``'s own HTTP client."""
    same = client.with_options(base_url=base_url)  # shares the connection pool
    quiet = dataclasses.replace(job, stream=False)
    return _call_for(job)(same, quiet, log).text


def _call_for(job: Job) -> Callable[[Any, Job, EventLog], CallResult]:
    """The SDK surface that sends the job's API."""
    return pick({chat.API: _chat, responses.API: _responses}, job.api, who="openai-sdk")


def _chat(client: Any, job: Job, log: EventLog) -> CallResult:
    kwargs: dict[str, Any] = {"model": job.model, "messages": [dict(m) for m in job.messages]}
    if job.max_tokens is not None:
        kwargs["max_tokens"] = job.max_tokens
    if job.tools:
        kwargs["tools"] = chat.API.tools(job.tools)
    if not job.stream:
        resp = client.chat.completions.create(**kwargs)
        log.mark("response")
        choice = resp.choices[0]
        return CallResult(text=message_text(choice.message), finish_reason=choice.finish_reason)
    stream = client.chat.completions.create(stream=True, **kwargs)
    log.mark("headers")
    with stream:
        text, finish = read_chat_stream(stream, log)
    return CallResult(text=text, finish_reason=finish)


def _responses(client: Any, job: Job, log: EventLog) -> CallResult:
    kwargs: dict[str, Any] = {"model": job.model, "input": [dict(m) for m in job.messages]}
    if job.max_tokens is not None:
        kwargs["max_output_tokens"] = job.max_tokens
    if job.tools:
        kwargs["tools"] = responses.API.tools(job.tools)
    if not job.stream:
        resp = client.responses.create(**kwargs)
        log.mark("response")
        rendered = "".join(
            render_tool_call(item.name, item.arguments)
            for item in resp.output
            if item.type == "function_call"
        )
        return CallResult(text=(resp.output_text or "") + rendered, finish_reason=resp.status)
    parts: list[str] = []
    finish = None
    calls: dict[str, list[str]] = {}  # item id -> [name, arguments...]
    stream = client.responses.create(stream=True, **kwargs)
    log.mark("headers")
    with stream:
        for event in stream:
            kind = getattr(event, "type", "")
            if kind == "response.output_text.delta":
                parts.append(event.delta)
                log.mark("delta", f"{len(event.delta)} chars")
            elif kind == "response.output_item.added" and event.item.type == "function_call":
                calls[event.item.id] = [event.item.name]
            elif kind == "response.function_call_arguments.delta":
                calls.setdefault(event.item_id, [""]).append(event.delta)
            elif kind in ("response.completed", "response.incomplete", "response.failed"):
                finish = kind.rsplit(".", 1)[-1]
    log.mark("stream_end", f"finish_reason={finish}")
    rendered = render_tool_calls(calls, by_key=False)
    return CallResult(text="".join(parts) + rendered, finish_reason=finish)
