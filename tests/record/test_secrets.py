"""A marker key sent through `harness record`, `harness proxy` and `harness live` never
appears in a cassette, a timeline, a report or a log (while still reaching the upstream)."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from harness.faults import script_from_dict
from harness.live.dry_run import DRY_RUN_API_KEY
from harness.server import FaultServer
from tests.ports import refused_port
from tests.record.processes import harness
from tests.record.support import StubUpstream, fetch

if TYPE_CHECKING:
    from tests.conftest import DryRun

pytestmark = pytest.mark.timeout(120)

MARKER = f"sk-or-v1-MARKER{secrets.token_hex(16)}"
BODY = {
    "model": "m",
    "stream": True,
    "messages": [{"role": "user", "content": "hi"}],
    "api_key": MARKER,
}
HEADERS = [("authorization", f"Bearer {MARKER}"), ("x-api-key", MARKER)]


def _everything(tmp: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in tmp.rglob("*") if p.is_file())


def test_record_keeps_no_key_even_when_the_upstream_echoes_it(tmp_path: Path) -> None:
    out = tmp_path / "tapes"
    chunks = [(0.0, f'data: {{"echo": "{MARKER}"}}\n\n'.encode()), (0.0, b"data: [DONE]\n\n")]
    with StubUpstream(chunks) as stub:
        with harness("record", "--upstream", stub.base_url, "--out", str(out)) as rec:
            got = fetch(rec.base_url, f"/chat/completions?key={MARKER}", BODY, headers=HEADERS)
        upstream_saw = b"".join(stub.requests)
    assert MARKER.encode() in upstream_saw  # forwarded: the upstream needs the key
    assert MARKER.encode() in got.body  # the client gets the real bytes
    text = _everything(out)
    assert "request: POST /v1/chat/completions" in text
    assert MARKER not in text and MARKER not in rec.stderr
    assert "*" * len(MARKER) in text  # the echo is masked, same length


def test_proxy_timeline_requests_and_log_keep_no_key(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(
        json.dumps(
            {
                "rules": [
                    {"match": {"attempts": [1]}, "fault": {"phase": "event:2", "action": "fin"}}
                ]
            }
        )
    )
    with FaultServer(
        script_from_dict(
            {
                "rules": [
                    {
                        "match": {"attempts": [2]},
                        "fault": {
                            "phase": "request",
                            "action": "status",
                            "code": 401,
                            "message": f"Incorrect API key provided: {MARKER}",
                        },
                    }
                ]
            }
        )
    ) as up:
        with harness(
            "proxy",
            "--upstream",
            up.base_url,
            "--script",
            str(script),
            "--out",
            str(tmp_path / "t"),
        ) as px:
            fetch(px.base_url, body=BODY, headers=HEADERS)
            fetch(px.base_url, body=BODY, headers=HEADERS)
            origin = px.base_url.rsplit("/v1", 1)[0]
            timeline = httpx.get(origin + "/_harness/timeline").text
            requests = httpx.get(origin + "/_harness/requests").text
    assert '"fault"' in timeline
    for text in (timeline, requests, px.stderr, _everything(tmp_path / "t")):
        assert MARKER not in text


def test_proxy_to_a_dead_upstream_logs_no_key() -> None:
    with (
        refused_port() as port,
        harness("proxy", "--upstream", f"http://127.0.0.1:{port}/v1") as px,
    ):
        got = fetch(px.base_url, body=BODY, headers=HEADERS)
    assert got.status == 502
    assert MARKER.encode() not in got.body and MARKER not in px.stderr


@pytest.mark.timeout(450)  # the shared run's setup: every built-in target (~80-150 s)
def test_live_dry_run_with_record_and_the_fault_check_keeps_no_key(
    live_dry_run_every_target: DryRun,
) -> None:
    # the dry run sends its fixed marker key, and one case has the server echo it back
    run = live_dry_run_every_target
    done = run.done
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(run.report.read_text())
    names = {c["name"]: c for c in report["cases"]}
    assert names["fault/stall-mid-stream"]["ok"] and names["fault/fin-mid-stream"]["ok"]
    assert len(list(run.tapes.glob("*.cassette"))) >= 10
    for text in (_everything(run.out), done.stdout, done.stderr):
        assert DRY_RUN_API_KEY not in text
