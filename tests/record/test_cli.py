"""`harness record`, `harness proxy` and `harness serve --cassette` as processes."""

from __future__ import annotations

import tomllib
from pathlib import Path

import httpx
import pytest

from harness.record.cassette import read_cassettes
from harness.server import FaultServer
from tests.record.processes import harness, run_harness
from tests.record.support import StubUpstream, fetch

pytestmark = pytest.mark.timeout(90)


def test_a_stream_recorded_with_harness_record_replays_byte_identically_from_serve(
    tmp_path: Path,
) -> None:
    body = b'data: {"choices":[{"index":0,"delta":{"content":"caf\xc3'
    chunks = [
        (0.01, body),
        (0.01, b'\xa9"}}]}\n\n'),
        (0.02, b": ping\n\n"),
        (0.0, b"data: [DONE]\n\n"),
    ]
    with StubUpstream(chunks) as stub:
        with harness(
            "record", "--upstream", stub.base_url, "--out", str(tmp_path), "--port", "0"
        ) as rec:
            assert rec.base_url.startswith("http://127.0.0.1:") and rec.base_url.endswith("/v1")
            live = fetch(rec.base_url)
    assert live.chunks == [c for _, c in chunks]
    [cassette] = read_cassettes([tmp_path])
    assert [c.data for c in cassette.chunks] == live.chunks

    with harness("serve", "--cassette", str(tmp_path), "--time-scale", "0.5") as srv:
        replayed = fetch(srv.base_url)
    assert replayed.complete
    assert replayed.body == live.body
    assert replayed.chunks == live.chunks


def test_harness_proxy_hangs_at_event_3_and_serves_its_timeline(tmp_path: Path) -> None:
    script = tmp_path / "hang.toml"
    script.write_text('[[rules]]\nfault = {phase = "event:3", action = "hang", duration_s = 0.3}\n')
    with FaultServer() as upstream:
        with harness("proxy", "--upstream", upstream.base_url, "--script", str(script)) as px:
            got = fetch(px.base_url, body={"model": "m", "stream": True, "messages": []})
            origin = px.base_url.rsplit("/v1", 1)[0]
            timeline = httpx.get(origin + "/_harness/timeline").json()["events"]
    assert len(got.chunks) == 3 and not got.complete
    faults = [e for e in timeline if e["kind"] == "fault"]
    assert faults and faults[0]["detail"] == {"action": "hang", "phase": "event:3"}


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["proxy", "--upstream", "ftp://host"], ["--upstream", "http(s)"]),
        (["proxy", "--upstream", "http://127.0.0.1:9", "--port", "70000"], ["--port", "0..65535"]),
        (["proxy", "--upstream", "http://127.0.0.1:9", "--time-scale", "0"], ["--time-scale"]),
        (["record", "--upstream", "http://u:p@127.0.0.1:9", "--out", "x"], ["credentials"]),
        (["serve", "--cassette", "/nonexistent/tape.cassette"], ["tape.cassette", "cannot read"]),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], needles: list[str]) -> None:
    done = run_harness(*args)
    assert done.returncode == 2 and done.stdout == ""
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    for needle in needles:
        assert needle in done.stderr


def test_a_bad_script_names_file_field_and_allowed(tmp_path: Path) -> None:
    script = tmp_path / "bad.toml"
    script.write_text('[[rules]]\nfault = {phase = "event:3", action = "explode"}\n')
    tomllib.loads(script.read_text())
    done = run_harness("proxy", "--upstream", "http://127.0.0.1:9", "--script", str(script))
    assert done.returncode == 2
    assert "bad.toml" in done.stderr and "action" in done.stderr and "hang" in done.stderr


def test_a_broken_cassette_names_the_line(tmp_path: Path) -> None:
    tape = tmp_path / "t.cassette"
    tape.write_text("harness-cassette: 1\nrequest: POST /v1/x\nstatus: 200\nbody:\nsoon t x\n")
    done = run_harness("serve", "--cassette", str(tape))
    assert done.returncode == 2 and "t.cassette" in done.stderr and "line 5" in done.stderr
