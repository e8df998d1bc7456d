"""``anthropic-sdk``: the official Anthropic Python SDK at its defaults, Messages API.

``Anthropic(base_url=..., api_key=...)`` with nothing else, so the SDK's documented
defaults apply (``anthropic/_constants.py``): ``DEFAULT_TIMEOUT = Timeout(600, connect=5)``
(a 10-minute read timeout between bytes), ``DEFAULT_MAX_RETRIES = 2`` with exponential
backoff from ``INITIAL_RETRY_DELAY = 0.5`` s to ``MAX_RETRY_DELAY = 8`` s (honouring
``retry-after``). No watchdog, no truncation guard of ours.

A streamed call uses the SDK's documented helper, ``client.messages.stream(...)``,
reading ``text_stream`` to its end and then ``get_final_message()`` for the stop
reason and the ``tool_use`` blocks (as an agent loop reads the tools to run); a call without a stream is ``client.messages.create(...)``. Sequential calls
share one client; a rebuild closes it and makes a new one. The client is closed before
returning, so leaks count what the SDK left behind.

Not here: any protection (``anthropic-sdk+guard`` wraps this SDK in ``harness.guard``).
"""

from __future__ import annotations

import json
from typing import Any

from harness.replies import render_tool_call, tools_for_api
from harness.targets.base import CallResult, EventLog, Job
from harness.targets.runtime.warmup import warm_up_target
from harness.targets.sdk_client import SDKClientTarget

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "AnthropicSDKTarget",
    "anthropic_base_url",
    "create_message",
    "message_kwargs",
    "tool_uses",
]

#: The Messages API requires ``max_tokens``; used when the scenario does not set one.
DEFAULT_MAX_TOKENS = 1024


class AnthropicSDKTarget(SDKClientTarget):
    name = "anthropic-sdk"
    apis = ("messages",)
    reusable = True

    def prepare(self) -> None:
        # The first SDK call of a process pays for lazy imports and model building: pay
        # it here, before the runner's baseline (see harness.targets.runtime.warmup).
        warm_up_target(self, apis=self.apis)

    def make_client(self, job: Job) -> Any:
        import anthropic

        return anthropic.Anthropic(base_url=anthropic_base_url(job.base_url), api_key=job.api_key)

    def one_call(self, client: Any, job: Job, log: EventLog) -> CallResult:
        return _messages(client, job, log)


def anthropic_base_url(openai_base_url: str) -> str:
    """The Anthropic SDKs add ``/v1/messages`` themselves: the server URL without ``/v1``."""
    return openai_base_url.rstrip("/").removesuffix("/v1")


def message_kwargs(job: Job) -> dict[str, Any]:
    """The job's ``messages.create`` keywords (the guarded twin sends the same)."""
    kwargs: dict[str, Any] = {
        "model": job.model,
        "messages": [dict(m) for m in job.messages],
        "max_tokens": job.max_tokens or DEFAULT_MAX_TOKENS,
    }
    if job.tools:
        kwargs["tools"] = tools_for_api(job.tools, "messages")
    return kwargs


def create_message(client: Any, kwargs: dict[str, Any], log: EventLog) -> CallResult:
    """One call without a stream: the text blocks of the reply joined."""
    message = client.messages.create(**kwargs)
    log.mark("response")
    text = "".join(b.text for b in message.content if getattr(b, "type", "") == "text")
    return CallResult(text=text + tool_uses(message.content), finish_reason=message.stop_reason)


def tool_uses(content: Any) -> str:
    """A message's ``tool_use`` blocks rendered as the targets report tool calls; the SDK
    hands back the parsed ``input``, written again as the provider wrote it (json.dumps,
    key order kept)."""
    return "".join(
        render_tool_call(b.name, json.dumps(b.input, ensure_ascii=False))
        for b in content
        if getattr(b, "type", "") == "tool_use"
    )


def _messages(client: Any, job: Job, log: EventLog) -> CallResult:
    kwargs = message_kwargs(job)
    if not job.stream:
        return create_message(client, kwargs, log)
    parts: list[str] = []
    with client.messages.stream(**kwargs) as stream:
        log.mark("headers")
        for text in stream.text_stream:
            parts.append(text)
            log.mark("delta", f"{len(text)} chars")
        final = stream.get_final_message()
    log.mark("stream_end", f"stop_reason={final.stop_reason}")
    return CallResult(
        text="".join(parts) + tool_uses(final.content), finish_reason=final.stop_reason
    )
