"""The dry run (default CI): the live session code over real sockets against the embedded
fault server, with a recognisable fake key that must never surface anywhere."""

from __future__ import annotations

import argparse
import io
import json
import logging
import random
import xml.etree.ElementTree as ET

import pytest
from rich.console import Console

from harness.environment import Environment
from harness.live import cli_live
from harness.live.dry_run import dry_run_config, dry_run_plan, run_dry
from harness.live.redact import Redactor
from harness.live.report import render_console, to_junit, to_markdown, write_json
from harness.live.session import make_reference_client, run_tier

FAKE_KEY = "sk-or-v1-FAKEKEY-dryrun-5f3c9a0b7d1e2f4a6c8b0d2e4f6a8c0b"

pytestmark = pytest.mark.timeout(60)


class KeepEverything(Redactor):
    """Redacts nothing: shows that without redaction the key *would* leak."""

    def redact(self, text: object) -> str:
        return text if isinstance(text, str) else str(text)


@pytest.fixture(scope="module")
def dry_run(server):
    return run_dry(server=server, api_key=FAKE_KEY, seed=1234)


def by_name(run):
    return {case.name: case for case in run.cases}


def test_the_dry_run_passes_against_the_reference_client(dry_run):
    assert dry_run.ok, "\n".join(f"{c.name}: {c.summary()}" for c in dry_run.cases)
    assert dry_run.mode == "dry-run"
    assert len(dry_run.cases) == 11


def test_healthy_chats_echo_their_word_across_the_rebuild(dry_run):
    cases = by_name(dry_run)
    for mode in ("stream", "non-stream"):
        for i in (1, 2, 3):
            case = cases[f"{mode}/chat-{i}"]
            assert case.ok, case.summary()
            assert case.reply.strip() == case.expected_word
            assert case.finish_reason == "stop"
            assert case.stream is (mode == "stream")


def test_a_sentinel_injected_into_a_streamed_reply_is_flagged(dry_run):
    case = by_name(dry_run)["dry/sentinel-in-stream"]
    assert not case.ok and case.as_expected
    # The word is there: only the sentinel detector can fail this reply.
    assert case.expected_word in case.reply
    assert {(f.sentinel, f.where) for f in case.findings} == {
        ("api_call_failed", "reply"),
        ("connection_error", "reply"),
    }
    # The server sent one delta per word: the sentinel spans several stream chunks.
    first = min(case.findings, key=lambda f: f.offset)
    assert first.chunk is not None and first.chunk >= 1


def test_provider_error_json_in_a_non_streamed_reply_is_flagged(dry_run):
    case = by_name(dry_run)["dry/sentinel-in-reply"]
    assert not case.ok and case.as_expected
    assert [f.sentinel for f in case.findings] == ["provider_error_json"]


def test_a_reply_without_the_word_fails_the_echo_check(dry_run):
    case = by_name(dry_run)["dry/wrong-word"]
    assert [f.sentinel for f in case.findings] == ["wrong_content"]


def test_a_401_raises_and_the_next_call_on_the_same_client_recovers(dry_run):
    cases = by_name(dry_run)
    failed = cases["dry/http-401-echoes-key"]
    assert not failed.ok and failed.findings[0].sentinel == "raised"
    assert "401" in failed.error
    assert cases["dry/recovers-after-401"].ok


def test_the_key_never_reaches_output_logs_reports_or_errors(server, caplog, capsys, tmp_path):
    caplog.set_level(logging.DEBUG)
    redactor = Redactor([FAKE_KEY])
    run = run_dry(server=server, api_key=FAKE_KEY, seed=99, redactor=redactor)
    console = Console(file=io.StringIO(), width=200)
    render_console(run, console, redactor=redactor)
    write_json(run, tmp_path / "live.json", redactor=redactor)
    captured = capsys.readouterr()

    texts = {
        "console": console.file.getvalue(),
        "stdout": captured.out,
        "stderr": captured.err,
        "logs": caplog.text,
        "log messages": "\n".join(r.getMessage() for r in caplog.records),
        "json": (tmp_path / "live.json").read_text(),
        "junit": to_junit(run, redactor=redactor),
        "markdown": to_markdown(run, redactor=redactor),
        "errors": "\n".join(c.error or "" for c in run.cases),
        "repr": repr(run),
    }
    for where, text in texts.items():
        assert FAKE_KEY not in text, f"key leaked into {where}"
    assert "[REDACTED]" in texts["errors"]  # the server echoed it: redaction did the work
    assert caplog.records, "the client made no log records: the log check proves nothing"


def test_without_redaction_the_echoed_key_would_leak(server):
    """The 401 path really carries the key, so the test above can fail."""
    plan = dry_run_plan(random.Random(5), api_key=FAKE_KEY)
    config = dry_run_config(server.base_url, api_key=FAKE_KEY)
    (case,) = [c for c in plan.sequences[-1] if c.name == "dry/http-401-echoes-key"]
    run = run_tier(
        config,
        [[case]],
        mode="dry-run",
        client_factory=make_reference_client,
        before_call=plan.loader(server),
        redactor=KeepEverything(),
    )
    assert FAKE_KEY in run.cases[0].error


def test_harness_live_dry_run_writes_every_report_and_exits_zero(tmp_path):
    real_looking = "sk-or-v1-REALLOOKING-0123456789abcdef0123456789"
    args = argparse.Namespace(
        dry_run=True,
        target=["reference"],
        model=None,
        max_tokens=16,
        call_ceiling=60.0,
        run_ceiling=300.0,
        seed=7,
        json=str(tmp_path / "r.json"),
        junit=str(tmp_path / "r.xml"),
        markdown=str(tmp_path / "r.md"),
    )
    out = io.StringIO()
    status = cli_live.run_live(
        args,
        environment=Environment(live_tests=True, openrouter_api_key=real_looking),
        console=Console(file=out, width=200),
        err_console=Console(file=out, width=200),
    )
    assert status == cli_live.EXIT_OK, out.getvalue()
    report = json.loads((tmp_path / "r.json").read_text())
    # through the reference target's child: 2 sequences of 3 chats + the flagged sentinel
    assert report["ok"] is True and report["mode"] == "dry-run" and len(report["cases"]) == 7
    assert report["targets"] == ["reference"]
    suite = ET.fromstring((tmp_path / "r.xml").read_text())
    assert suite.get("tests") == "7" and suite.get("failures") == "0"
    assert "PASS" in (tmp_path / "r.md").read_text()
    assert "7/7 cases as expected" in out.getvalue()
    for path in tmp_path.iterdir():
        assert real_looking not in path.read_text()


class SharedClosedTransportClient:
    """The #10933 regression over real sockets: one injected ``httpx.Client`` kept in
    shared kwargs, closed with the first SDK client and reused by the rebuilt one.
    ``as_agent`` turns errors into reply text, as the agent did."""

    def __init__(self, config, *, as_agent: bool = False) -> None:
        import httpx
        import openai

        self._openai = openai
        self.as_agent = as_agent
        self.kwargs = {
            "base_url": config.base_url,
            "api_key": config.api_key,
            "http_client": httpx.Client(),
            "max_retries": 0,
        }
        self.sdk = openai.OpenAI(**self.kwargs)

    def complete(self, messages, *, model, api, stream, max_tokens, on_delta=None):
        from types import SimpleNamespace

        try:
            if stream:
                parts, finish = [], None
                for chunk in self.sdk.chat.completions.create(
                    model=model, messages=messages, max_tokens=max_tokens, stream=True
                ):
                    for choice in chunk.choices:
                        if choice.delta.content:
                            parts.append(choice.delta.content)
                            on_delta(choice.delta.content)
                        finish = choice.finish_reason or finish
                return SimpleNamespace(text="".join(parts), finish_reason=finish, attempts=1)
            done = self.sdk.chat.completions.create(
                model=model, messages=messages, max_tokens=max_tokens
            )
            choice = done.choices[0]
            return SimpleNamespace(
                text=choice.message.content, finish_reason=choice.finish_reason, attempts=1
            )
        except self._openai.APIConnectionError as exc:
            if self.as_agent:
                return SimpleNamespace(
                    text=f"API call failed after 3 retries: {exc}", finish_reason="stop"
                )
            raise

    def rebuild(self) -> None:
        self.sdk.close()  # closes the shared http_client too
        self.sdk = self._openai.OpenAI(**self.kwargs)  # ... which is reused here: the bug

    def close(self) -> None:
        self.sdk.close()


@pytest.mark.parametrize("as_agent", [False, True], ids=["raises", "error-as-reply"])
def test_the_session_catches_the_closed_transport_regression_after_the_rebuild(server, as_agent):
    plan = dry_run_plan(random.Random(21), api_key=FAKE_KEY)
    config = dry_run_config(server.base_url, api_key=FAKE_KEY)
    run = run_tier(
        config,
        plan.sequences[:2],
        mode="dry-run",
        client_factory=lambda c: SharedClosedTransportClient(c, as_agent=as_agent),
        before_call=plan.loader(server),
    )
    verdicts = {c.name: c.ok for c in run.cases}
    assert verdicts == {
        "stream/chat-1": True,
        "stream/chat-2": True,
        "stream/chat-3": False,
        "non-stream/chat-1": True,
        "non-stream/chat-2": True,
        "non-stream/chat-3": False,
    }
    third = {c.name: c for c in run.cases}["stream/chat-3"]
    names = {f.sentinel for f in third.findings}
    if as_agent:
        assert third.error is None  # it returned normally: only the detector catches it
        assert {"api_call_failed", "connection_error"} <= names
    else:
        assert {"raised", "connection_error", "client_closed"} <= names


def test_each_sequence_really_rebuilds_its_reference_client_once(server):
    clients = []

    def factory(config):
        clients.append(make_reference_client(config))
        return clients[-1]

    run = run_dry(server=server, api_key=FAKE_KEY, seed=3, client_factory=factory)
    assert run.ok
    # A fresh SDK client for the first call, another after the rebuild before chat-3.
    assert [c.builds for c in clients[:2]] == [2, 2]
