"""The live-with-a-fault check, run against the local fault server (its dry run)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest

from harness.live.dry_run import DRY_RUN_API_KEY, dry_run_config
from harness.live.fault_check import run_fault_check
from harness.live.redact import Redactor
from harness.server import FaultServer

pytestmark = pytest.mark.timeout(60)


class NaiveClient:
    """A real SDK client written the naive way: on a broken stream it returns what it has."""

    def __init__(self, base_url: str, api_key: str, read_s: float) -> None:
        self._sdk = openai.OpenAI(
            base_url=base_url,
            api_key=api_key,
            max_retries=0,
            timeout=openai.Timeout(10, read=read_s),  # the SDK's own (httpx2's under 3.x)
        )

    def complete(
        self, messages: Any, *, model: str, on_delta: Callable[[str], None], **_: Any
    ) -> Any:
        text = ""
        try:
            for chunk in self._sdk.chat.completions.create(
                model=model, messages=messages, stream=True
            ):
                if chunk.choices and chunk.choices[0].delta.content:
                    text += chunk.choices[0].delta.content
                    on_delta(chunk.choices[0].delta.content)
        except (httpx.HTTPError, openai.APIError):
            pass  # the bug this check exists to catch
        return type("Reply", (), {"text": text, "finish_reason": "stop"})()

    def close(self) -> None:
        self._sdk.close()


class UntypedClient(NaiveClient):
    """Raises the SDK's own errors instead of the reference stack's typed ones."""

    def complete(
        self, messages: Any, *, model: str, on_delta: Callable[[str], None], **_: Any
    ) -> Any:
        for _chunk in self._sdk.chat.completions.create(
            model=model, messages=messages, stream=True
        ):
            pass
        raise AssertionError("unreachable: the stream is broken")


@pytest.fixture
def config() -> Any:
    with FaultServer() as upstream:
        yield dry_run_config(upstream.base_url)


def test_the_reference_client_raises_typed_errors_in_time(config: Any) -> None:
    results = run_fault_check(config, redactor=Redactor([DRY_RUN_API_KEY]), stall_idle_s=0.5)
    assert [r.name for r in results] == ["fault/stall-mid-stream", "fault/fin-mid-stream"]
    assert all(r.ok for r in results), [r.summary() for r in results]
    assert "StreamIdleTimeout" in (results[0].error or "")


def test_a_client_returning_partial_text_is_flagged(config: Any) -> None:
    results = run_fault_check(
        config,
        redactor=Redactor([DRY_RUN_API_KEY]),
        stall_idle_s=0.5,
        client_factory=lambda c, idle: NaiveClient(c.base_url, c.api_key, idle),
    )
    for r in results:
        assert not r.ok and {f.sentinel for f in r.findings} == {"returned_partial_text"}


def test_a_client_raising_untyped_errors_is_flagged(config: Any) -> None:
    results = run_fault_check(
        config,
        redactor=Redactor([DRY_RUN_API_KEY]),
        stall_idle_s=0.5,
        client_factory=lambda c, idle: UntypedClient(c.base_url, c.api_key, idle),
    )
    for r in results:
        assert not r.ok and "untyped_error" in {f.sentinel for f in r.findings}
