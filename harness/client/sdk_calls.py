"""The request one attempt sends, through the real ``openai`` SDK's raw-response path.

Each API's module holds its call shape (``harness.apis``: chat and responses go through
``with_streaming_response.create``, the SDK builds and sends the request and we read the
raw body, so SSE comments stay visible; Anthropic messages through ``sdk.post`` with the
SDK's raw-response switch). The
same builders serve the sync and the async client: only whether the result is
awaited differs.

Not here: reading the body (``attempt.py``), deadlines, retries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.apis import api_for
from harness.apis.base import tool_opts
from harness.client.compat import httpx
from harness.client.settings import ClientSettings

if TYPE_CHECKING:
    from harness.client.attempt import Call

__all__ = ["request_options", "sdk_request", "tool_opts"]


def request_options(settings: ClientSettings, connect_s: float | None) -> dict[str, Any]:
    """Per-request SDK options: httpx timeouts with the attempt's connect timeout."""
    s = settings
    timeout = httpx.Timeout(
        connect=connect_s, read=s.read_timeout_s, write=s.read_timeout_s, pool=connect_s
    )
    return {"timeout": timeout}


def sdk_request(sdk: Any, call: Call, api_key: str, extra: dict[str, Any]) -> Any:
    """The SDK's request for ``call``, in its API's call shape
    (:meth:`harness.apis.base.Api.sdk_request`)."""
    return api_for(call.api).sdk_request(
        sdk, call, api_key=api_key, extra=extra, response_type=httpx.Response
    )
