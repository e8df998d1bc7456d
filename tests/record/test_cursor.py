"""Where event:N and bytes:N fall in a chunked stream, against positions known by construction."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.faults import Phase
from harness.record.cursor import StreamCursor

pytestmark = pytest.mark.timeout(60)

EOLS = st.sampled_from(["\n", "\r\n", "\r"])


@st.composite
def streams(draw: st.DrawFn) -> tuple[bytes, list[int]]:
    """An SSE body and the offset right after each event's dispatching blank line."""
    body, ends = b"", []
    for _ in range(draw(st.integers(1, 8))):
        eol = draw(EOLS)
        if draw(st.booleans()):
            body += f": keepalive{eol}{eol}".encode()  # comments are never counted
        lines = draw(
            st.lists(
                st.text(
                    alphabet=st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=20
                ),
                min_size=1,
                max_size=3,
            )
        )
        event = "".join(f"data: {line}{eol}" for line in lines) + eol
        body += event.encode()
        ends.append(len(body))
    return body, ends


@st.composite
def cuts(draw: st.DrawFn, body: bytes) -> list[bytes]:
    points = sorted(set(draw(st.lists(st.integers(1, max(1, len(body) - 1)), max_size=12))))
    edges = [0, *[p for p in points if p < len(body)], len(body)]
    return [body[a:b] for a, b in zip(edges, edges[1:], strict=False) if b > a]


def _cut_at(phase: str, chunks: list[bytes]) -> int | None:
    cursor = StreamCursor(Phase.parse(phase))
    if cursor.fires_at_start:
        return 0
    before = 0
    for chunk in chunks:
        fed = cursor.feed(chunk)
        if fed.cut is not None:
            return before + fed.cut
        before += len(chunk)
    return None


@given(data=st.data())
def test_event_n_cuts_right_after_the_nth_event_however_the_stream_is_chunked(
    data: st.DataObject,
) -> None:
    body, ends = data.draw(streams())
    chunks = data.draw(cuts(body))
    n = data.draw(st.integers(1, len(ends)))
    got = _cut_at(f"event:{n}", chunks)
    end = ends[n - 1]
    if body[end - 1 : end] == b"\r" and end == len(body):
        assert got is None  # a final lone CR may be half a CRLF: fires at the end instead
    else:
        assert got == end


@given(data=st.data())
def test_bytes_n_cuts_after_exactly_n_bytes(data: st.DataObject) -> None:
    body, _ = data.draw(streams())
    chunks = data.draw(cuts(body))
    n = data.draw(st.integers(0, len(body)))
    assert _cut_at(f"bytes:{n}", chunks) == n


def test_positions_past_the_end_do_not_cut() -> None:
    assert _cut_at("event:5", [b"data: a\n\n"]) is None
    assert _cut_at("bytes:100", [b"data: a\n\n"]) is None


def test_events_are_counted_without_a_fault() -> None:
    cursor = StreamCursor(None)
    for chunk in (b"data: a\n", b"\n: c\n\ndata: b\n\nda", b"ta: c\n\n"):
        cursor.feed(chunk)
    assert cursor.events == 3 and cursor.bytes == 32
