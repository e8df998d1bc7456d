"""The cassette text format: lossless, line-based, strict on bad input."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.record.cassette import (
    Cassette,
    CassetteError,
    Chunk,
    decode_payload,
    dumps,
    encode_payload,
    loads,
    read_cassettes,
    write_cassette,
)

pytestmark = pytest.mark.timeout(60)


@given(
    st.binary(max_size=400)
    | st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass"))
)
def test_payloads_round_trip_and_stay_on_one_line(data: bytes) -> None:
    text = encode_payload(data)
    assert "\n" not in text and "\r" not in text
    assert text == text.rstrip() or text == "t "
    assert decode_payload(text) == data


cassettes = st.builds(
    Cassette,
    method=st.sampled_from(["POST", "GET"]),
    target=st.sampled_from(["/v1/chat/completions", "/api/v1/responses?x=1"]),
    status=st.integers(100, 599),
    chunks=st.lists(
        st.builds(Chunk, st.floats(0, 1e6).map(lambda f: round(f, 3)), st.binary(max_size=200)),
        max_size=6,
    ).map(tuple),
    request_headers=st.lists(
        st.tuples(st.sampled_from(["accept", "x-a"]), st.text("abc ;=/", max_size=10))
    ).map(tuple),
    request_body=st.binary(max_size=100),
    response_headers=st.lists(st.tuples(st.just("content-type"), st.just("text/event-stream"))).map(
        tuple
    ),
    response_at_ms=st.floats(0, 1e5).map(lambda f: round(f, 3)),
)


@given(cassettes)
def test_cassettes_round_trip(c: Cassette) -> None:
    back = loads(dumps(c))
    # header values are stored as their text, which loses nothing for these
    assert back.chunks == c.chunks and back.request_body == c.request_body
    assert (back.method, back.target, back.status) == (c.method, c.target, c.status)
    assert back.response_headers == c.response_headers
    assert back.response_at_ms == c.response_at_ms


def test_a_chunk_is_one_diffable_line() -> None:
    c = Cassette("POST", "/v1/chat/completions", 200, (Chunk(1.5, b'data: {"a": "\xc3\xa9"}\n\n'),))
    text = dumps(c)
    assert text.splitlines()[0] == "harness-cassette: 1"
    assert '1.500 t data: {"a": "é"}\\n\\n' in text.splitlines()


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("nope\n", "is not a cassette header"),
        ("harness-cassette: 1\nstatus: 200\nbody:\n", "field 'request' is missing"),
        ("harness-cassette: 1\nrequest: POST /x\nstatus: 200\n", "no 'body:' line"),
        ("harness-cassette: 1\nrequest: POST /x\nstatus: 999\nbody:\n", "status: '999'"),
        ("harness-cassette: 1\nrequest: POST /x\nstatus: 200\nbody:\n-1 t x\n", "line 5 offset"),
        ("harness-cassette: 1\nrequest: POST /x\nstatus: 200\nbody:\n1.0 q x\n", "line 5"),
        (
            "harness-cassette: 1\nrequest: POST /x\nstatus: 200\nbody:\n1.0 t a\\qb\n",
            "stray backslash",
        ),
        ("harness-cassette: 1\nrequest: POST /x\nstatus: 200\noutcome: weird\nbody:\n", "outcome"),
    ],
)
def test_bad_cassettes_name_the_file_line_and_field(text: str, needle: str) -> None:
    with pytest.raises(CassetteError) as info:
        loads(text, source="tape.cassette")
    assert "tape.cassette" in str(info.value) and needle in str(info.value)


def test_read_a_directory_in_name_order(tmp_path: Path) -> None:
    for i in (2, 1):
        write_cassette(tmp_path / f"000{i}-x.cassette", Cassette("POST", f"/p{i}", 200))
    assert [c.target for c in read_cassettes([tmp_path])] == ["/p1", "/p2"]
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CassetteError, match="no \\*.cassette files"):
        read_cassettes([empty])
