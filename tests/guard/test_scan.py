"""The guard's one-event fast path (``scan.py``) answers what the full decoder and the
marker rules answer: per chunk, the same activity; at the end, the same event count and
completeness -- on generated streams of every line shape the decoder knows (CR, CRLF,
comments, ``id``/``retry``, two data lines, names and no names, the sentinel's
spellings), cut into chunks anywhere."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.client import ClientSettings
from harness.guard.scan import one_event
from harness.guard.watch import Watch

LINES = [
    b'data: {"type":"x"}',
    b"data: [DONE]",
    b"data:[DONE]",
    b"data:  [DONE]",
    b"data: [DONE]x",
    b'data: {"type":"response.completed"}',
    b'data: {"type":"message_stop"}',
    b'data: {"type":"ping"}',
    b"data:",
    b"data",
    b"event: response.completed",
    b"event: response.incomplete",
    b"event: message_stop",
    b"event: ping",
    b"event: content_block_delta",
    b"event: ",
    b"event:ping",
    b": keepalive",
    b":",
    b"id: 7",
    b"retry: 10",
    b"",
]
ENDS = [b"\n", b"\r\n", b"\r"]


def _reference(api: str) -> Watch:
    """A watch that never takes the fast path: the decoder and kind_of for every chunk."""
    watch = Watch(api, ClientSettings(), 1)
    watch.response(200, {"content-type": "text/event-stream"})
    watch._one = None  # the fast path off
    watch._fast = False
    return watch


def _fast(api: str) -> Watch:
    watch = Watch(api, ClientSettings(), 1)
    watch.response(200, {"content-type": "text/event-stream"})
    return watch


@st.composite
def streams(draw: st.DrawFn) -> tuple[str, list[bytes]]:
    api = draw(st.sampled_from(["chat", "responses", "messages"]))
    lines = draw(
        st.lists(
            st.tuples(st.sampled_from(LINES), st.sampled_from(ENDS), st.booleans()), max_size=30
        )
    )
    body = b"".join(line + end + (b"\n" if blank else b"") for line, end, blank in lines)
    cuts = sorted(draw(st.lists(st.integers(0, len(body)), max_size=12)))
    chunks, last = [], 0
    for cut in [*cuts, len(body)]:
        chunks.append(body[last:cut])
        last = cut
    whole = draw(st.booleans())  # also: one chunk per blank-line-ended event, as servers send
    if whole:
        chunks = [part + b"\n\n" for part in body.split(b"\n\n") if part]
    return api, chunks


@settings(max_examples=400, deadline=None)
@given(streams())
def test_the_fast_path_and_the_decoder_agree_on_every_chunk(stream) -> None:
    api, chunks = stream
    fast, ref = _fast(api), _reference(api)
    for chunk in chunks:
        assert fast.receive(chunk) == ref.receive(chunk), chunk
    assert (fast.events, fast.complete) == (ref.events, ref.complete)


def test_the_fast_path_is_taken_on_a_healthy_stream() -> None:
    """Not vacuous: the common chunk shapes are decided without the decoder."""
    cases = [
        ("chat", b'data: {"choices":[]}\n\n', "content"),
        ("chat", b"data: [DONE]\n\n", "terminal"),
        ("responses", b'event: response.completed\ndata: {"type":"x"}\n\n', "terminal"),
        ("responses", b"event: response.output_text.delta\ndata: {}\n\n", "content"),
        ("messages", b'event: ping\ndata: {"type": "ping"}\n\n', "comment"),
        ("messages", b": keepalive\n\n", "comment"),
    ]
    for api, chunk, kind in cases:
        assert one_event(api)(chunk) == kind, chunk
