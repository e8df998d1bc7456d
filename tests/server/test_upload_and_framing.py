"""stall_upload (the client blocks in send) and response framing on the wire."""

from __future__ import annotations

import json
import socket

import pytest

from harness.faults import script_from_dict
from harness.server import FaultServer
from tests.server.rawhttp import read_until, request_bytes, send, sse_events

pytestmark = pytest.mark.timeout(20)


def big_request(size: int) -> bytes:
    filler = "x" * size
    return request_bytes(
        body={"model": "m", "stream": True, "messages": [{"role": "user", "content": filler}]}
    )


@pytest.mark.parametrize("size", [150 * 1024, 1024 * 1024])
def test_stall_upload_blocks_the_clients_send(server: FaultServer, size: int) -> None:
    server.load(
        script_from_dict({"rules": [{"fault": {"action": "stall_upload", "after_bytes": 1000}}]})
    )
    data = big_request(size)
    with socket.create_connection(("127.0.0.1", server.port)) as s:
        s.settimeout(0.5)
        with pytest.raises(TimeoutError):
            s.sendall(data)  # blocks: the server stopped reading, the buffers filled
        stalled = server.wait_for("upload_stalled", timeout=5)
    assert 1000 <= stalled.detail["body_bytes"] < 1000 + 1024
    assert not [e for e in server.timeline() if e.kind == "request_read"]
    # counted while the client is still blocked in send: a stall without end never
    # finishes the read, and the runner reads the count before the client gives up
    (record,) = server.requests()
    assert record.body_bytes == stalled.detail["body_bytes"] and record.expected_text == ""


def test_stall_upload_with_duration_resumes_and_answers(server: FaultServer) -> None:
    server.load(
        script_from_dict(
            {"rules": [{"fault": {"action": "stall_upload", "after_bytes": 0, "duration_s": 0.2}}]}
        )
    )
    data = big_request(150 * 1024)
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(data)
        payload, complete = read_until(s, 10, until=b"0\r\n\r\n").body()
    assert complete and sse_events(payload)[-1].data == "[DONE]"
    kinds = [e.kind for e in server.timeline()]
    assert (
        kinds.index("upload_stalled") < kinds.index("upload_resumed") < kinds.index("request_read")
    )
    assert server.requests()[0].body_bytes > 150 * 1024


def test_content_length_framing_declares_the_exact_body(server: FaultServer) -> None:
    server.load(script_from_dict({"framing": "content-length"}))
    with send(server.port) as s:
        got = read_until(s, 5, until=b"[DONE]\n\n")
    body, complete = got.body()
    assert complete and "transfer-encoding" not in got.headers
    assert int(got.headers["content-length"]) == len(got.raw_body) == len(body)


@pytest.mark.parametrize("phase", ["headers", "event:2", "bytes:100"])
def test_content_length_truncate_declares_the_truncated_length(
    server: FaultServer, phase: str
) -> None:
    server.load(
        script_from_dict(
            {
                "framing": "content-length",
                "rules": [{"fault": {"phase": phase, "action": "truncate"}}],
            }
        )
    )
    with send(server.port) as s:
        got = read_until(s, 5, complete=True)
        assert read_until(s, 0.1).ending == "open"  # a clean end: the connection stays usable
    declared = int(got.headers["content-length"])
    assert declared == len(got.raw_body)
    assert b"[DONE]" not in got.raw_body
    expected = {"headers": 0, "bytes:100": 100}.get(phase)
    if expected is not None:
        assert declared == expected
    else:
        assert len(sse_events(got.raw_body)) == 2


def test_close_delimited_framing_ends_with_fin(server: FaultServer) -> None:
    server.load(script_from_dict({"framing": "close"}))
    with send(server.port) as s:
        got = read_until(s, 5)
    assert got.ending == "eof" and got.headers["connection"] == "close"
    assert "content-length" not in got.headers and "transfer-encoding" not in got.headers
    assert sse_events(got.raw_body)[-1].data == "[DONE]"


def test_close_delimited_truncate_is_a_fin_without_done(server: FaultServer) -> None:
    server.load(
        script_from_dict(
            {"framing": "close", "rules": [{"fault": {"phase": "event:4", "action": "truncate"}}]}
        )
    )
    with send(server.port) as s:
        got = read_until(s, 5)
    assert got.ending == "eof" and len(sse_events(got.raw_body)) == 4


def test_chunked_truncate_at_bytes_ends_the_chunk_at_the_cut(server: FaultServer) -> None:
    server.load(
        script_from_dict({"rules": [{"fault": {"phase": "bytes:100", "action": "truncate"}}]})
    )
    with send(server.port) as s:
        got = read_until(s, 5, until=b"0\r\n\r\n")
    body, complete = got.body()
    assert complete and len(body) == 100


@pytest.mark.parametrize("framing", ["chunked", "content-length", "close"])
def test_non_stream_reply_under_each_framing(server: FaultServer, framing: str) -> None:
    server.load(script_from_dict({"framing": framing}))
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    with send(server.port, body=body) as s:
        got = read_until(s, 5, complete=True)
    doc, complete = got.body()
    assert complete
    assert json.loads(doc)["choices"][0]["message"]["content"] == server.requests()[0].expected_text
