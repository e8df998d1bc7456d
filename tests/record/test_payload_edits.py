"""Payload faults (edit hooks) through `harness proxy` and through cassette replay.

The upstream is the independent stub of ``support.py`` (not the fault server): its
chat stream is cut into 7-byte pieces, so events straddle chunks. The openai SDK is
the oracle for what a client sees.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from harness.faults import FaultSpecError, script_from_dict
from harness.record.cassette import Cassette, read_cassette
from harness.record.front import FaultProxy, Recorder, replay_server
from tests.record.support import StubUpstream, fetch, sse_chunks

pytestmark = pytest.mark.timeout(120)

MESSAGES = [{"role": "user", "content": "hi"}]
WORDS = [f"w{i} " for i in range(6)]


def _body() -> bytes:
    texts = [f'{{"choices":[{{"index":0,"delta":{{"content":"{w}"}}}}]}}' for w in WORDS]
    return b"".join(sse_chunks(texts)) + b"data: [DONE]\n\n"


def _script(**fault: object) -> object:
    return script_from_dict({"rules": [{"fault": dict(fault)}]})


def _texts(base_url: str) -> tuple[list[str], BaseException | None]:
    """The SDK's deltas of one streamed chat request, and the error that ended it."""
    client = openai.OpenAI(
        base_url=base_url, api_key="sk-test-key", timeout=openai.Timeout(10.0), max_retries=0
    )
    texts: list[str] = []
    try:
        for chunk in client.chat.completions.create(model="m", messages=MESSAGES, stream=True):
            texts.append(chunk.choices[0].delta.content or "")
    except openai.APIError as exc:
        return texts, exc
    return texts, None


@pytest.fixture(scope="module")
def stub() -> Iterator[StubUpstream]:
    body = _body()
    pieces = [(0.0, body[i : i + 7]) for i in range(0, len(body), 7)]
    with StubUpstream(pieces) as up:
        yield up


@pytest.fixture(scope="module")
def cassette(stub: StubUpstream, tmp_path_factory: pytest.TempPathFactory) -> Cassette:
    with Recorder(stub.base_url, out_dir=tmp_path_factory.mktemp("tapes")) as rec:
        assert _texts(rec.base_url) == (WORDS, None)
        return read_cassette(rec.wait_written(1)[-1])


CASES = [
    # (fault, SDK texts, error message or None)
    ({"phase": "event:2", "action": "inband_error"}, WORDS[:2], "injected in-band error"),
    ({"phase": "event:2", "action": "drop_event"}, WORDS[:2] + WORDS[3:], None),
    ({"phase": "event:2", "action": "duplicate_event"}, WORDS[:3] + WORDS[2:], None),
    (
        {"phase": "event:2", "action": "swap_events"},
        [*WORDS[:2], WORDS[3], WORDS[2], *WORDS[4:]],
        None,
    ),
    ({"phase": "event:1", "action": "comment", "count": 3}, WORDS, None),
]


@pytest.mark.parametrize(("fault", "texts", "error"), CASES, ids=lambda c: str(c)[:40])
def test_payload_fault_through_the_proxy(
    stub: StubUpstream, fault: dict, texts: list[str], error: str | None
) -> None:
    with FaultProxy(stub.base_url, _script(**fault)) as proxy:
        got, exc = _texts(proxy.base_url)
        kinds = [e.kind for e in proxy.timeline()]
    assert got == texts
    assert (exc is None) == (error is None)
    if error is not None:
        assert error in str(exc)
    assert kinds.count("fault") == 1


@pytest.mark.parametrize(("fault", "texts", "error"), CASES, ids=lambda c: str(c)[:40])
def test_payload_fault_through_cassette_replay(
    cassette: Cassette, fault: dict, texts: list[str], error: str | None
) -> None:
    with replay_server([cassette], _script(**fault), time_scale=0.1) as srv:
        got, exc = _texts(srv.base_url)
    assert got == texts
    assert (exc is None) == (error is None)
    if error is not None:
        assert error in str(exc)


def test_the_edits_on_the_wire(stub: StubUpstream, cassette: Cassette) -> None:
    """Raw bytes: the comment lines are there; drop_event terminal leaves no [DONE];
    inband_error ends the body cleanly (chunked terminator) with the error event last."""
    with FaultProxy(stub.base_url, _script(phase="event:1", action="comment")) as proxy:
        body = fetch(proxy.base_url).body
    assert body.count(b": OPENROUTER PROCESSING\n") == 1
    assert body.replace(b": OPENROUTER PROCESSING\n\n", b"") == _body()
    script = _script(phase="event:0", action="drop_event", type="terminal")
    with replay_server([cassette], script, time_scale=0.1) as srv:
        got = fetch(srv.base_url)
    assert got.complete and got.body == _body().replace(b"data: [DONE]\n\n", b"")
    with FaultProxy(stub.base_url, _script(phase="event:2", action="inband_error")) as proxy:
        got = fetch(proxy.base_url)
    events = [e for e in got.body.split(b"\n\n") if e]
    assert got.complete and len(events) == 3
    assert json.loads(events[-1].removeprefix(b"data: "))["error"]["code"] == 529


def test_cut_tool_call_is_rejected_at_load_naming_rule_and_action(
    stub: StubUpstream, cassette: Cassette, tmp_path: Path
) -> None:
    script = script_from_dict(
        {
            "rules": [
                {"fault": {"phase": "event:1", "action": "drop_event"}},
                {"fault": {"phase": "event:1", "action": "cut_tool_call"}},
            ]
        }
    )
    with pytest.raises(FaultSpecError, match=r"rules\[1\]\.fault\.action: 'cut_tool_call'"):
        FaultProxy(stub.base_url, script)
    with pytest.raises(FaultSpecError, match=r"rules\[1\]\.fault\.action: 'cut_tool_call'"):
        replay_server([cassette], script)
    path = tmp_path / "cut.toml"
    path.write_text('[[rules]]\nfault = { phase = "event:1", action = "cut_tool_call" }\n')
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness",
            "proxy",
            "--upstream",
            stub.base_url,
            "--script",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "rules[0].fault.action: 'cut_tool_call'" in done.stderr
    assert str(path) in done.stderr and "Traceback" not in done.stderr
