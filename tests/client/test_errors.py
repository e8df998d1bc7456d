"""The error tree and the one mapping boundary: classified by cause and errno."""

from __future__ import annotations

import errno
import json

import pytest

from harness.client import errors
from harness.client.compat import httpx, openai
from harness.client.errors import map_exception


def _wrapped(outer: BaseException, inner: BaseException) -> BaseException:
    outer.__cause__ = inner
    return outer


def test_tree_matches_the_design() -> None:
    e = errors
    for sub in (e.ConnectError, e.PeerClosed, e.PeerReset, e.DeadPeer):
        assert issubclass(sub, e.TransportError)
    for sub in (e.FirstByteTimeout, e.StreamIdleTimeout, e.StaleCall, e.HardCeiling):
        assert issubclass(sub, e.StallError)
    for sub in (e.TruncatedStream, e.MalformedEvent):
        assert issubclass(sub, e.ProtocolError)
    for sub in (
        e.TransportError,
        e.StallError,
        e.ProtocolError,
        e.ProviderError,
        e.RetriesExhausted,
    ):
        assert issubclass(sub, e.HarnessError)
    assert not e.HardCeiling.retryable and e.FirstByteTimeout.retryable


def test_every_kind_is_stable() -> None:
    # reports and expectations name errors by kind: a renamed class must not rename it
    kinds = {name: getattr(errors, name).kind for name in errors.__all__ if name[0].isupper()}
    assert kinds == {
        "ConnectError": "connect_error",
        "DeadPeer": "dead_peer",
        "FirstByteTimeout": "first_byte_timeout",
        "HardCeiling": "hard_ceiling",
        "HarnessError": "harness_error",
        "MalformedEvent": "malformed_event",
        "PeerClosed": "peer_closed",
        "PeerReset": "peer_reset",
        "ProtocolError": "protocol_error",
        "ProviderError": "provider_error",
        "RetriesExhausted": "retries_exhausted",
        "StaleCall": "stale_call",
        "StallError": "stall",
        "StreamIdleTimeout": "stream_idle_timeout",
        "TransportError": "transport_error",
        "TruncatedStream": "truncated_stream",
    }


def test_sync_read_timeout_with_kernel_etimedout_is_dead_peer() -> None:
    # sync httpx: socket.timeout is TimeoutError, and so is the kernel's ETIMEDOUT.
    exc = _wrapped(
        httpx.ReadTimeout("timed out"), TimeoutError(errno.ETIMEDOUT, "Connection timed out")
    )
    assert isinstance(map_exception(exc), errors.DeadPeer)


def test_async_read_error_with_kernel_etimedout_is_dead_peer() -> None:
    exc = _wrapped(httpx.ReadError(""), OSError(errno.ETIMEDOUT, "Connection timed out"))
    assert isinstance(map_exception(exc), errors.DeadPeer)


def test_plain_read_timeout_without_errno_is_an_idle_timeout_of_the_backstop() -> None:
    err = map_exception(_wrapped(httpx.ReadTimeout("timed out"), TimeoutError("timed out")))
    assert isinstance(err, errors.StreamIdleTimeout) and err.deadline == "read_timeout_s"


@pytest.mark.parametrize("code", [errno.ECONNRESET, errno.EPIPE])
def test_reset_errnos_are_peer_reset(code: int) -> None:
    assert isinstance(
        map_exception(_wrapped(httpx.ReadError(""), OSError(code, "x"))), errors.PeerReset
    )


def test_server_disconnect_is_peer_closed() -> None:
    exc = httpx.RemoteProtocolError("Server disconnected without sending a response.")
    assert isinstance(map_exception(exc), errors.PeerClosed)


def test_connect_refused_is_connect_error() -> None:
    exc = _wrapped(
        httpx.ConnectError("refused"), ConnectionRefusedError(errno.ECONNREFUSED, "refused")
    )
    assert isinstance(map_exception(exc), errors.ConnectError)


def test_sdk_connection_error_is_unwrapped_to_its_cause() -> None:
    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    sdk = openai.APIConnectionError(request=request)
    sdk.__cause__ = _wrapped(httpx.ReadError(""), OSError(errno.ECONNRESET, "reset"))
    assert isinstance(map_exception(sdk, attempt=2, elapsed_s=1.5), errors.PeerReset)


def test_closed_client_reuse_maps_to_transport_error() -> None:
    err = map_exception(RuntimeError("Cannot send a request, as the client has been closed."))
    assert type(err) is errors.TransportError


def test_status_error_carries_status_retry_after_and_provider_message() -> None:
    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx.Response(
        429,
        headers={"retry-after": "2"},
        content=json.dumps({"error": {"message": "slow down"}}).encode(),
        request=request,
    )
    sdk = openai.RateLimitError("rate limited", response=response, body=None)
    err = map_exception(
        sdk, attempt=1, elapsed_s=0.1, parse_retry_after=lambda v: float(v) if v else None
    )
    assert isinstance(err, errors.ProviderError)
    assert (err.status, err.retry_after_s, err.provider_message) == (429, 2.0, "slow down")
    assert err.is_retryable()
    assert "slow down" in str(err) and "attempt 1" in str(err)


def test_html_error_page_message_is_its_visible_text() -> None:
    html = "<html><head><style>x{}</style></head><body><h1>502 Bad Gateway</h1></body></html>"
    assert errors.provider_message(html, "text/html") == "502 Bad Gateway"


def test_non_retryable_statuses() -> None:
    assert not errors.ProviderError("x", status=400).is_retryable()
    assert errors.ProviderError("x", status=503).is_retryable()


def test_every_error_carries_attempt_elapsed_and_deadline() -> None:
    err = errors.FirstByteTimeout(
        "no first byte", attempt=2, elapsed_s=0.5, deadline="first_byte_s", deadline_s=0.3
    )
    assert err.to_dict()["deadline"] == "first_byte_s"
    assert "attempt 2" in str(err) and "first_byte_s=0.3 s" in str(err)


def test_retries_exhausted_lists_every_attempt() -> None:
    a = [errors.PeerReset("x", attempt=1), errors.PeerClosed("y", attempt=2)]
    err = errors.RetriesExhausted("gave up", attempts=a)
    assert err.attempts == a and err.last is a[-1]
    assert [d["kind"] for d in err.to_dict()["attempts"]] == ["peer_reset", "peer_closed"]


def test_already_mapped_errors_pass_through() -> None:
    err = errors.StaleCall("x")
    assert map_exception(err) is err


def test_a_failed_connect_is_connect_error_whatever_its_errno() -> None:
    exc = _wrapped(
        httpx.ConnectError("timed out"), OSError(errno.ETIMEDOUT, "Connection timed out")
    )
    assert isinstance(map_exception(exc), errors.ConnectError)
