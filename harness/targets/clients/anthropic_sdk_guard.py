"""``anthropic-sdk+guard``: the Anthropic SDK at its defaults, plus ``harness.guard``.

``anthropic.Anthropic(base_url=..., api_key=..., http_client=guard.http_client(anthropic,
...))``: the Messages API, streamed (``messages.create(stream=True)``, every event
consumed, the text of ``text_delta`` blocks joined) or not. The job's calls, the client
reuse and rebuild are the ``openai-sdk`` target's loop; only the client and the one call
differ. Errors the guard raised are reported by their typed cause (``guard_common``).

Not here: the guard (``harness.guard``); the bare SDK (the ``anthropic-sdk`` target).
"""

from __future__ import annotations

from typing import Any

from harness.replies import render_tool_calls
from harness.targets.base import CallResult, EventLog, Job, follow_up
from harness.targets.clients.anthropic_sdk import create_message, message_kwargs
from harness.targets.clients.guard_common import guard_settings, reraise_typed
from harness.targets.clients.openai_sdk import OpenAISDKTarget

__all__ = ["AnthropicSDKGuardTarget"]


class AnthropicSDKGuardTarget(OpenAISDKTarget):
    name = "anthropic-sdk+guard"
    apis = ("messages",)

    def prepare(self) -> None:
        import anthropic  # noqa: F401 - imported before the leak baseline

        from harness import guard  # noqa: F401

        super().prepare()  # the Messages warm-up calls, through the guard

    def make_client(self, job: Job) -> Any:
        import anthropic

        from harness import guard

        http = guard.http_client(anthropic, settings=guard_settings(job))
        root = job.base_url.removesuffix("/v1")  # the SDK adds /v1/messages itself
        return anthropic.Anthropic(base_url=root, api_key=job.api_key, http_client=http)

    def call(self, job: Job, log: EventLog) -> CallResult:
        try:
            return super().call(job, log)
        except Exception as exc:
            reraise_typed(exc, log)

    def before_close(self, client: Any, job: Job, log: EventLog) -> None:
        # The contract's alive_after probe on the Messages API (the inherited one would
        # send the openai-sdk's Responses call): one non-streamed message, same pool.
        def call(url: str) -> str:
            same = client.with_options(base_url=url.removesuffix("/v1"))
            return create_message(same, message_kwargs(job), log).text

        follow_up(job, log, call)

    def one_call(self, client: Any, job: Job, log: EventLog) -> CallResult:
        kwargs = message_kwargs(job)
        if not job.stream:
            return create_message(client, kwargs, log)
        parts: list[str] = []
        calls: dict[int, list[str]] = {}  # block index -> [tool name, partial JSON...]
        finish = None
        stream = client.messages.create(stream=True, **kwargs)
        log.mark("headers")
        with stream:
            for event in stream:
                kind = getattr(event, "type", "")
                if kind == "content_block_start" and event.content_block.type == "tool_use":
                    calls[event.index] = [event.content_block.name]
                elif kind == "content_block_delta" and event.delta.type == "text_delta":
                    parts.append(event.delta.text)
                    log.mark("delta", f"{len(event.delta.text)} chars")
                elif kind == "content_block_delta" and event.delta.type == "input_json_delta":
                    calls.setdefault(event.index, [""]).append(event.delta.partial_json)
                elif kind == "message_delta" and event.delta.stop_reason:
                    finish = event.delta.stop_reason
        log.mark("stream_end", f"finish_reason={finish}")
        rendered = render_tool_calls(calls)
        return CallResult(text="".join(parts) + rendered, finish_reason=finish)
