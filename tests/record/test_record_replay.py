"""Record -> replay is byte-exact, chunk for chunk, against an independent upstream."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.faults import script_from_dict
from harness.record.cassette import Cassette, read_cassette
from harness.record.front import Recorder, replay_server
from tests.record.support import StubUpstream, fetch, sse_chunks

pytestmark = pytest.mark.timeout(120)

chunk_bytes = st.one_of(
    st.binary(min_size=1, max_size=2048),
    st.text(min_size=1, max_size=300).map(lambda t: f"data: {t}\n\n".encode()),
)
chunkings = st.lists(
    st.tuples(st.sampled_from([0.0, 0.0, 0.001, 0.005, 0.02]), chunk_bytes), min_size=1, max_size=12
)


@pytest.fixture(scope="module")
def stub() -> Iterator[StubUpstream]:
    with StubUpstream() as up:
        yield up


@pytest.fixture(scope="module")
def recorder(stub: StubUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorder]:
    with Recorder(stub.base_url, out_dir=tmp_path_factory.mktemp("tapes")) as rec:
        yield rec


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(chunks=chunkings)
def test_record_then_replay_gives_the_same_bytes_and_chunk_boundaries(
    stub: StubUpstream, recorder: Recorder, chunks: list[tuple[float, bytes]]
) -> None:
    stub.chunks = chunks
    expected = [data for _, data in chunks]
    before = len(recorder.written)
    through = fetch(recorder.base_url)
    assert through.complete and through.chunks == expected  # the recorder is transparent

    cassette = read_cassette(recorder.wait_written(before + 1)[-1])
    assert [c.data for c in cassette.chunks] == expected
    offsets = [c.offset_ms for c in cassette.chunks]
    assert offsets == sorted(offsets)

    with replay_server([cassette], time_scale=0.1) as srv:
        replayed = fetch(srv.base_url)
    assert replayed.status == 200
    assert replayed.complete
    assert replayed.chunks == expected
    assert replayed.headers["x-upstream"] == "stub"


def test_replay_keeps_recorded_pauses_against_absolute_deadlines(
    stub: StubUpstream, recorder: Recorder
) -> None:
    stub.chunks = [(0.05, b"data: a\n\n")] * 6
    cassette = _record(recorder)
    with replay_server([cassette], time_scale=1.0) as srv:
        fetch(srv.base_url)
        sent = [e.t for e in srv.timeline() if e.kind == "event_sent"]
        head = next(e.t for e in srv.timeline() if e.kind == "request_read")
    assert len(sent) == 6
    recorded = [c.offset_ms / 1000 for c in cassette.chunks]
    # each chunk leaves no earlier than recorded (lateness is bounded in the bench, not here)
    for t, due in zip(sent, recorded, strict=True):
        assert t - head >= due - 0.002


def test_replay_fires_event_fault_on_the_recorded_stream(
    stub: StubUpstream, recorder: Recorder
) -> None:
    # events split across chunks: event:3 must cut after the third event, not chunk
    stub.chunks = [
        (0.0, b"data: 1\n\nda"),
        (0.0, b"ta: 2\n"),
        (0.0, b"\ndata: 3\n\ndata: 4\n\n"),
        (0.0, b"data: [DONE]\n\n"),
    ]
    cassette = _record(recorder)
    script = script_from_dict({"rules": [{"fault": {"phase": "event:3", "action": "truncate"}}]})
    with replay_server([cassette], script) as srv:
        got = fetch(srv.base_url)
    assert got.complete  # truncate ends the body cleanly ...
    assert got.body == b"data: 1\n\ndata: 2\n\ndata: 3\n\n"  # ... right after event 3


def test_replay_fires_bytes_fault_inside_a_chunk(stub: StubUpstream, recorder: Recorder) -> None:
    stub.chunks = [(0.0, c) for c in sse_chunks(["héllo", "world"])]
    cassette = _record(recorder)
    script = script_from_dict({"rules": [{"fault": {"phase": "bytes:9", "action": "fin"}}]})
    with replay_server([cassette], script) as srv:
        got = fetch(srv.base_url)
        kinds = [e.kind for e in srv.timeline()]
    assert not got.complete
    assert got.body == cassette.body[:9]  # cuts inside the UTF-8 sequence of "é"
    assert "fault" in kinds


def test_replay_of_a_path_without_cassette_is_a_404_naming_the_recorded(
    stub: StubUpstream, recorder: Recorder
) -> None:
    stub.chunks = [(0.0, b"data: x\n\n")]
    a = _record(recorder, "/chat/completions")
    b = _record(recorder, "/responses")
    with replay_server([a, b]) as srv:
        got = fetch(srv.base_url, "/messages")
    assert got.status == 404
    assert b"/v1/chat/completions" in got.body and b"/v1/responses" in got.body


def _record(recorder: Recorder, path: str = "/chat/completions") -> Cassette:
    before = len(recorder.written)
    fetch(recorder.base_url, path)
    return read_cassette(recorder.wait_written(before + 1)[-1])
