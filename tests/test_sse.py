"""SSE encode/decode round trip under arbitrary chunk boundaries (Hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.sse import Comment, Event, SSEDecoder, encode_comment, encode_event

line_text = st.text(
    st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=30
)
data_text = st.text(
    st.characters(blacklist_characters="\r", blacklist_categories=("Cs",)), max_size=60
)
items = st.lists(
    st.one_of(
        st.builds(
            Event,
            data=data_text,
            event=st.none() | line_text.filter(bool),
            id=st.none() | line_text.filter(lambda t: "\0" not in t),
        ),
        st.builds(Comment, text=line_text),
    ),
    max_size=12,
)


def encode(item: Event | Comment) -> bytes:
    if isinstance(item, Comment):
        return encode_comment(item.text)
    return encode_event(item.data, event=item.event, id=item.id)


def expected(items: list[Event | Comment]) -> list[Event | Comment]:
    """What a decoder must dispatch: the last event ID persists across events (WHATWG)."""
    out: list[Event | Comment] = []
    last_id = None
    for item in items:
        if isinstance(item, Comment):
            out.append(item)
            continue
        if item.id is not None:
            last_id = item.id
        out.append(Event(data=item.data, event=item.event, id=last_id))
    return out


def split_feed(blob: bytes, cuts: list[int]) -> list[Event | Comment]:
    dec = SSEDecoder()
    out: list[Event | Comment] = []
    last = 0
    for cut in sorted({c % (len(blob) + 1) for c in cuts}):
        out += dec.feed(blob[last:cut])
        last = cut
    out += dec.feed(blob[last:])
    return out + dec.flush()


@settings(max_examples=200)
@given(
    items=items,
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=20),
    crlf=st.booleans(),
)
def test_round_trip_under_arbitrary_chunk_boundaries(
    items: list[Event | Comment], cuts: list[int], crlf: bool
) -> None:
    blob = b"".join(encode(i) for i in items)
    if crlf:
        blob = blob.replace(b"\n", b"\r\n")
    want = expected(items)
    assert split_feed(blob, cuts) == want


@given(items=items)
def test_byte_by_byte_feed_equals_one_feed(items: list[Event | Comment]) -> None:
    blob = b"".join(encode(i) for i in items)
    one = SSEDecoder().feed(blob)
    dec = SSEDecoder()
    many = [e for b in blob for e in dec.feed(bytes([b]))]
    assert one == many


def test_event_without_blank_line_at_end_is_discarded() -> None:
    dec = SSEDecoder()
    assert dec.feed(b"data: partial\n") == []
    assert dec.flush() == []
