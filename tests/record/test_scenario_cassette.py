"""A scenario that names a cassette runs the catalog's machinery on recorded bytes."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.record.cassette import Cassette, Chunk, write_cassette
from harness.record.replay import reply_text
from harness.runner import RunSettings, run_case
from harness.scenario import ScenarioError, scenario_from_dict
from harness.server import FaultServer

pytestmark = pytest.mark.timeout(90)

#: OpenRouter-shaped bytes (a processing comment, CRLF-free events split mid-event and
#: inside a UTF-8 sequence), written as a recorder would write them.
CHUNKS = [
    b": OPENROUTER PROCESSING\n\n",
    b'data: {"id":"gen-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"caf\xc3',
    b'\xa9 "},"finish_reason":null}]}\n\ndata: {"id":"gen-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"au "},"finish_reason":null}]}\n\n',
    b'data: {"id":"gen-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"lait"},"finish_reason":null}]}\n\n',
    b'data: {"id":"gen-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
    b"data: [DONE]\n\n",
]


@pytest.fixture
def tape(tmp_path: Path) -> Path:
    cassette = Cassette(
        "POST",
        "/v1/chat/completions",
        200,
        tuple(Chunk(10.0 * i, c) for i, c in enumerate(CHUNKS)),
        response_headers=(("content-type", "text/event-stream"),),
        response_at_ms=5.0,
    )
    return write_cassette(tmp_path / "openrouter.cassette", cassette)


def _scenario(tape: Path, expected: str, **script: object) -> object:
    return scenario_from_dict(
        {
            "name": "cassette_case",
            "summary": "recorded bytes",
            "cassette": tape.name,
            "expected": {"reference": expected, "openai-sdk": expected},
            "script": script,
        },
        file=str(tape.parent / "cassette_case.toml"),
    )


def test_reply_text_of_the_recording() -> None:
    cassette = Cassette(
        "POST",
        "/v1/chat/completions",
        200,
        tuple(Chunk(0, c) for c in CHUNKS),
        response_headers=(("content-type", "text/event-stream"),),
    )
    assert reply_text(cassette) == "café au lait"


@pytest.mark.parametrize("target", ["reference", "openai-sdk"])
def test_healthy_cassette_reply_is_ok_for_both_targets(
    server: FaultServer, tape: Path, target: str
) -> None:
    result = run_case(
        _scenario(tape, "ok"), target, server=server, settings=RunSettings(time_scale=0.1)
    )
    assert result.outcome.kind == "ok", result.message
    server.reply_source = None


def test_a_stall_at_event_2_of_the_recording_is_caught_by_the_reference_stack(
    server: FaultServer, tape: Path
) -> None:
    scenario = _scenario(
        tape,
        "error(StreamIdleTimeout)",
        rules=[{"fault": {"phase": "event:2", "action": "hang"}}],
    )
    scenario = scenario.model_copy(
        update={"watchdog": scenario.watchdog.model_copy(update={"stream_idle_s": 1.0})}
    )
    result = run_case(scenario, "reference", server=server, settings=RunSettings(time_scale=0.1))
    server.reply_source = None
    assert result.outcome.kind == "error", result.message
    assert "StreamIdleTimeout" in (result.outcome.error or "") or "Stall" in str(result.outcome.mro)


def test_a_missing_cassette_names_the_scenario_file_and_field(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as info:
        _scenario(tmp_path / "nope.cassette", "ok")
    assert "cassette" in str(info.value) and "cassette_case.toml" in str(info.value)
