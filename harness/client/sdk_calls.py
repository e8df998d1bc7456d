"""The request one attempt sends, through the real ``openai`` SDK's raw-response path.

chat and responses go through ``with_streaming_response.create`` (the SDK builds and
sends the request; we read the raw body, so SSE comments stay visible); Anthropic
messages through ``sdk.post("/messages")`` with the SDK's raw-response switch. The
same builders serve the sync and the async client: only whether the result is
awaited differs.

Not here: reading the body (``attempt.py``), deadlines, retries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.client.compat import httpx
from harness.client.settings import ClientSettings

if TYPE_CHECKING:
    from harness.client.attempt import Call

__all__ = ["post_messages", "request_options", "tool_opts", "typed_create"]

_RAW_HEADER = "X-Stainless-Raw-Response"  # the SDK's own switch for an unread raw response
_ANTHROPIC_VERSION = "2023-06-01"


def request_options(settings: ClientSettings, connect_s: float | None) -> dict[str, Any]:
    """Per-request SDK options: httpx timeouts with the attempt's connect timeout."""
    s = settings
    timeout = httpx.Timeout(
        connect=connect_s, read=s.read_timeout_s, write=s.read_timeout_s, pool=connect_s
    )
    return {"timeout": timeout}


def typed_create(sdk: Any, call: Call, extra: dict[str, Any]) -> Any:
    """The SDK's raw-response context manager for chat / responses."""
    if call.api == "chat":
        opts: dict[str, Any] = {"max_tokens": call.max_tokens} if call.max_tokens else {}
        return sdk.chat.completions.with_streaming_response.create(
            model=call.model,
            messages=call.messages,
            stream=call.stream,
            **opts,
            **tool_opts(call),
            **extra,
        )
    opts = {"max_output_tokens": call.max_tokens} if call.max_tokens else {}
    return sdk.responses.with_streaming_response.create(
        model=call.model,
        input=call.messages,
        stream=call.stream,
        **opts,
        **tool_opts(call),
        **extra,
    )


def post_messages(sdk: Any, call: Call, api_key: str, extra: dict[str, Any]) -> Any:
    """An Anthropic Messages request as an unread raw response (awaitable if async)."""
    headers = {
        _RAW_HEADER: "stream",
        "anthropic-version": _ANTHROPIC_VERSION,
        "x-api-key": api_key,
    }
    body = {
        "model": call.model,
        "messages": call.messages,
        "max_tokens": call.max_tokens or 1024,
        "stream": call.stream,
        **tool_opts(call),
    }
    return sdk.post(
        "/messages", cast_to=httpx.Response, body=body, options={"headers": headers, **extra}
    )


def tool_opts(call: Call) -> dict[str, Any]:
    """``tools`` / ``tool_choice`` request fields, only when the caller gave them."""
    opts: dict[str, Any] = {}
    if call.tools is not None:
        opts["tools"] = call.tools
    if call.tool_choice is not None:
        opts["tool_choice"] = call.tool_choice
    return opts
