"""The SSE-aware fault proxy on a live upstream: transparent when idle, event-precise faults.

Upstreams: the project's fault server, and an independent asyncio server (support.py).
Clients: the official OpenAI SDK, and a raw h11 client that sees chunk boundaries.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.faults import script_from_dict
from harness.record.front import FaultProxy
from harness.server import FaultServer
from tests.ports import refused_port
from tests.record.support import StubUpstream, fetch, sse_chunks

pytestmark = pytest.mark.timeout(120)

MESSAGES = [{"role": "user", "content": "hi"}]
#: the read timeout that turns "silence" into an observable error in these tests
SILENCE_S = 0.5


def _script(**fault: object) -> object:
    return script_from_dict({"rules": [{"fault": dict(fault)}]})


def _sdk(base_url: str, *, read_s: float = 10.0, retries: int = 0) -> openai.OpenAI:
    # the SDK's own Timeout (httpx's under openai 2.x, httpx2's under 3.x)
    timeout = openai.Timeout(10.0, read=read_s)
    return openai.OpenAI(
        base_url=base_url, api_key="sk-test-key", timeout=timeout, max_retries=retries
    )


def test_hang_at_event_3_shows_the_sdk_exactly_three_events_then_silence(
    server: FaultServer,
) -> None:
    with FaultProxy(server.base_url, _script(phase="event:3", action="hang")) as proxy:
        stream = _sdk(proxy.base_url, read_s=SILENCE_S).chat.completions.create(
            model="m", messages=MESSAGES, stream=True
        )
        seen = []
        with pytest.raises((httpx.ReadTimeout, openai.APITimeoutError)):
            for chunk in stream:
                seen.append(chunk)
        stream.close()
        proxy.wait_for("fault", timeout=5)
        kinds = [e.kind for e in proxy.timeline()]
    assert len(seen) == 3
    assert kinds.count("event_sent") == 3
    assert "response_done" not in kinds
    fault = next(e for e in proxy.timeline() if e.kind == "fault")
    assert fault.detail == {"action": "hang", "phase": "event:3"}


def test_hang_at_event_3_on_an_independent_upstream_splitting_events_across_chunks() -> None:
    body = b"".join(
        sse_chunks(
            [f'{{"choices":[{{"index":0,"delta":{{"content":"w{i} "}}}}]}}' for i in range(6)]
        )
    )
    body += b"data: [DONE]\n\n"
    pieces = [(0.0, body[i : i + 7]) for i in range(0, len(body), 7)]  # cuts events anywhere
    with (
        StubUpstream(pieces) as stub,
        FaultProxy(stub.base_url, _script(phase="event:3", action="hang")) as proxy,
    ):
        stream = _sdk(proxy.base_url, read_s=SILENCE_S).chat.completions.create(
            model="m", messages=MESSAGES, stream=True
        )
        texts = []
        with pytest.raises((httpx.ReadTimeout, openai.APITimeoutError)):
            for chunk in stream:
                texts.append(chunk.choices[0].delta.content)
        stream.close()
    assert texts == ["w0 ", "w1 ", "w2 "]


def test_empty_script_passes_the_upstreams_bytes_to_the_sdk(server: FaultServer) -> None:
    direct = _sdk(server.base_url).chat.completions.create(
        model="m", messages=MESSAGES, stream=True
    )
    want = [c.model_dump() for c in direct]
    with FaultProxy(server.base_url) as proxy:
        got = [
            c.model_dump()
            for c in _sdk(proxy.base_url).chat.completions.create(
                model="m", messages=MESSAGES, stream=True
            )
        ]
    assert got == want and len(got) > 3


chunkings = st.lists(
    st.tuples(
        st.sampled_from([0.0, 0.0, 0.002, 0.01]),
        st.one_of(
            st.binary(min_size=1, max_size=1500),
            st.text(min_size=1, max_size=200).map(lambda t: f"data: {t}\n\n".encode()),
        ),
    ),
    min_size=1,
    max_size=10,
)


@pytest.fixture(scope="module")
def stub_and_proxy() -> Iterator[tuple[StubUpstream, FaultProxy]]:
    with StubUpstream() as stub, FaultProxy(stub.base_url) as proxy:
        yield stub, proxy


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(chunks=chunkings)
def test_proxy_with_empty_script_is_transparent(
    stub_and_proxy: tuple[StubUpstream, FaultProxy], chunks: list[tuple[float, bytes]]
) -> None:
    stub, proxy = stub_and_proxy
    stub.chunks = chunks
    got = fetch(proxy.base_url)
    assert got.complete
    assert got.chunks == [data for _, data in chunks]  # same bytes, same order, same chunks
    assert got.headers["x-upstream"] == "stub"


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        (
            {"phase": "event:2", "action": "fin"},
            (httpx.RemoteProtocolError, openai.APIConnectionError),
        ),
        (
            {"phase": "event:2", "action": "rst"},
            (httpx.ReadError, httpx.RemoteProtocolError, openai.APIConnectionError),
        ),
        ({"phase": "request", "action": "status", "code": 429}, openai.RateLimitError),
        ({"phase": "accept", "action": "rst"}, openai.APIConnectionError),
    ],
)
def test_faults_on_the_live_stream_reach_the_sdk_as_errors(
    server: FaultServer, fault: dict[str, object], error: type[BaseException]
) -> None:
    with FaultProxy(server.base_url, _script(**fault)) as proxy:
        with pytest.raises(error):
            for _ in _sdk(proxy.base_url).chat.completions.create(
                model="m", messages=MESSAGES, stream=True
            ):
                pass


def test_truncate_ends_cleanly_without_the_terminal_marker(server: FaultServer) -> None:
    with FaultProxy(server.base_url, _script(phase="event:4", action="truncate")) as proxy:
        got = fetch(proxy.base_url, body={"model": "m", "stream": True, "messages": MESSAGES})
    assert got.complete
    assert got.body.count(b"\n\n") == 4 and b"[DONE]" not in got.body


def test_drip_sends_comments_and_no_content(server: FaultServer) -> None:
    script = _script(phase="event:2", action="drip", interval_s=0.02, duration_s=0.2)
    with FaultProxy(server.base_url, script) as proxy:
        got = fetch(proxy.base_url, body={"model": "m", "stream": True, "messages": MESSAGES})
        comments = [e for e in proxy.timeline() if e.kind == "comment_sent"]
    assert not got.complete
    assert len(comments) >= 3
    assert got.chunks[2:] == [b": keepalive\n\n"] * len(got.chunks[2:])


def test_faults_match_per_attempt_so_a_retry_reaches_the_real_upstream(
    server: FaultServer,
) -> None:
    script = script_from_dict(
        {
            "rules": [
                {
                    "match": {"attempts": [1]},
                    "fault": {"phase": "request", "action": "status", "code": 503},
                }
            ]
        }
    )
    with FaultProxy(server.base_url, script) as proxy:
        reply = _sdk(proxy.base_url, retries=1).chat.completions.create(
            model="m", messages=MESSAGES
        )
        attempts = [r.attempt for r in proxy.requests()]
    assert reply.choices[0].message.content
    assert attempts == [1, 2]


def test_an_unreachable_upstream_is_a_502_naming_it() -> None:
    with refused_port() as port, FaultProxy(f"http://127.0.0.1:{port}/v1") as proxy:
        got = fetch(proxy.base_url)
        errors = [e for e in proxy.timeline() if e.kind == "upstream_error"]
    assert got.status == 502
    assert b"upstream failed" in got.body and errors


def test_malformed_inserts_one_broken_line_and_the_stream_goes_on(server: FaultServer) -> None:
    with FaultProxy(
        server.base_url, _script(phase="event:1", action="malformed", payload='{"x": ')
    ) as proxy:
        got = fetch(proxy.base_url, body={"model": "m", "stream": True, "messages": MESSAGES})
    assert got.complete and got.body.endswith(b"data: [DONE]\n\n")
    assert got.chunks[1] == b'data: {"x": \n\n'


def test_slow_delays_every_following_chunk_on_the_servers_timeline(server: FaultServer) -> None:
    with FaultProxy(
        server.base_url, _script(phase="event:1", action="slow", delay_s=0.05)
    ) as proxy:
        got = fetch(proxy.base_url, body={"model": "m", "stream": True, "messages": MESSAGES})
        sent = [e for e in proxy.timeline() if e.kind == "event_sent"]
    assert got.complete
    due = [e.detail["scheduled"] for e in sent[1:]]
    # each chunk after the fault is due 0.05 s after the one before was due (an
    # absolute schedule: one late write does not delay the rest), and none goes early
    assert len(due) >= 5
    assert all(abs((b - a) - 0.05) < 1e-6 for a, b in zip(due[1:], due[2:], strict=False))
    assert all(e.t >= e.detail["scheduled"] for e in sent[1:])


def test_stall_upload_holds_the_request_body_then_forwards_all_of_it() -> None:
    script = _script(phase="accept", action="stall_upload", after_bytes=2048, duration_s=0.2)
    big = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "x" * 100_000}]}
    with StubUpstream([(0.0, b"data: ok\n\n")]) as stub, FaultProxy(stub.base_url, script) as proxy:
        got = fetch(proxy.base_url, body=big)
        kinds = [e.kind for e in proxy.timeline()]
        forwarded = stub.requests[-1]
    assert got.complete and got.body == b"data: ok\n\n"
    assert (
        kinds.index("upload_stalled")
        < kinds.index("upload_resumed")
        < kinds.index("upstream_status")
    )
    assert forwarded.endswith(b"x" * 100_000 + b'"}]}')
