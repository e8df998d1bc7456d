"""The session's judging logic, driven by small in-process clients (no sockets here;
the dry run in test_dry_run.py drives the same code over real sockets)."""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass

import pytest

from harness.live.config import LiveConfig
from harness.live.redact import Redactor
from harness.live.session import (
    ChatCase,
    Expectation,
    LiveRun,
    echo_prompt,
    plan_sequences,
    random_word,
    run_cases,
    run_tier,
)

FAKE_KEY = "sk-or-v1-FAKEKEY-session-0123456789abcdef"
CONFIG = LiveConfig(base_url="http://127.0.0.1:9/v1", api_key=FAKE_KEY, model="m")


@dataclass(frozen=True)
class FakeReply:
    text: str | None
    finish_reason: str | None = "stop"
    attempts: int = 1


ECHO = object()


class EchoClient:
    """Echoes the word at the end of the prompt; ``reply`` overrides the text."""

    def __init__(self, reply: object = ECHO, finish_reason: str | None = "stop") -> None:
        self.reply = reply
        self.finish_reason = finish_reason
        self.calls: list[tuple[str, bool]] = []
        self.rebuilds = 0
        self.closed = False

    def complete(self, messages, *, model, api, stream, max_tokens, on_delta=None):
        word = messages[-1]["content"].rsplit(" ", 1)[-1]
        self.calls.append((word, stream))
        text = word if self.reply is ECHO else self.reply
        if stream and on_delta is not None and text:
            for i in range(0, len(text), 5):  # deltas of 5 characters
                on_delta(text[i : i + 5])
        return FakeReply(text, self.finish_reason)

    def rebuild(self) -> None:
        self.rebuilds += 1

    def close(self) -> None:
        self.closed = True


class LeakedTransportClient(EchoClient):
    """The #10933 shape: after a rebuild every call fails as the closed client did."""

    def complete(self, messages, **kwargs):
        if self.rebuilds:
            raise RuntimeError("Cannot send a request, as the client has been closed.")
        return super().complete(messages, **kwargs)


class ErrorAsReplyClient(EchoClient):
    """The agent shape the seed test first missed: the failure text returned as a reply."""

    def complete(self, messages, **kwargs):
        if self.rebuilds:
            return FakeReply("API call failed after 3 retries: Connection error.")
        return super().complete(messages, **kwargs)


def _run(client, cases, **kwargs):
    return run_cases(cases, client=client, config=CONFIG, redactor=Redactor([FAKE_KEY]), **kwargs)


def test_the_plan_is_three_chats_per_stream_mode_with_a_rebuild_before_the_third():
    sequences = plan_sequences(random.Random(1))
    assert [[(c.name, c.stream, c.rebuild_before) for c in seq] for seq in sequences] == [
        [
            ("stream/chat-1", True, False),
            ("stream/chat-2", True, False),
            ("stream/chat-3", True, True),
        ],
        [
            ("non-stream/chat-1", False, False),
            ("non-stream/chat-2", False, False),
            ("non-stream/chat-3", False, True),
        ],
    ]
    words = [c.word for seq in sequences for c in seq]
    assert len(set(words)) == len(words)


def test_the_prompt_ends_with_the_exact_word():
    word = random_word(random.Random(7))
    assert echo_prompt(word).endswith(" " + word)
    assert word.isalnum()


def test_healthy_echoes_pass_and_the_client_is_rebuilt_once():
    client = EchoClient()
    (cases,) = plan_sequences(random.Random(2), streams=(True,))
    results = _run(client, cases)
    assert [r.ok for r in results] == [True, True, True]
    assert client.rebuilds == 1
    assert [stream for _, stream in client.calls] == [True, True, True]


def test_a_reused_closed_transport_fails_the_third_chat_and_names_the_sentinel():
    (cases,) = plan_sequences(random.Random(3), streams=(False,))
    results = _run(LeakedTransportClient(), cases)
    assert [r.ok for r in results] == [True, True, False]
    third = results[2]
    assert {f.sentinel for f in third.findings} >= {"raised", "client_closed"}
    assert third.error.startswith("RuntimeError: Cannot send a request")


def test_an_error_returned_as_the_reply_is_a_failure_even_though_it_is_truthy():
    (cases,) = plan_sequences(random.Random(4), streams=(True,))
    results = _run(ErrorAsReplyClient(), cases)
    third = results[2]
    assert not third.ok
    assert [(f.sentinel, f.where) for f in third.findings] == [
        ("api_call_failed", "reply"),
        ("connection_error", "reply"),
        ("wrong_content", "reply"),
    ]
    assert "failed after 3 retries" in third.summary()


@pytest.mark.parametrize(
    ("reply", "finish", "expected"),
    [
        ("", "stop", ["empty_reply"]),
        (None, "stop", ["empty_reply"]),
        ("WORD", "content_filter", ["bad_finish_reason"]),
        ("something else entirely", "stop", ["wrong_content"]),
        ("The word is: WORD.", "length", []),
    ],
)
def test_each_reply_check_names_its_finding(reply, finish, expected):
    case = ChatCase(name="c", word="kamirute1234", stream=False)
    text = None if reply is None else reply.replace("WORD", case.word)
    (result,) = _run(EchoClient(reply=text, finish_reason=finish), [case])
    assert [f.sentinel for f in result.findings] == expected
    assert result.ok is (expected == [])


def test_log_records_of_the_client_are_scanned_but_the_servers_are_not():
    class LoggingClient(EchoClient):
        def complete(self, messages, **kwargs):
            logging.getLogger("harness.server.wire").warning("injected 502 Bad Gateway")
            logging.getLogger("httpx").info(
                'HTTP Request: POST /v1 "HTTP/1.1 429 Too Many Requests"'
            )
            return super().complete(messages, **kwargs)

    (result,) = _run(LoggingClient(), [ChatCase(name="c", word="kamirute1234", stream=True)])
    assert [(f.sentinel, f.where) for f in result.findings] == [("http_status_line", "log")]
    assert logging.getLogger("httpx").level == logging.NOTSET  # restored


def test_no_call_starts_after_the_run_deadline():
    now = [0.0]

    class SlowClient(EchoClient):
        def complete(self, messages, **kwargs):
            now[0] += 10.0
            return super().complete(messages, **kwargs)

    (cases,) = plan_sequences(random.Random(5), streams=(True,))
    client = SlowClient()
    results = _run(client, cases, run_deadline=15.0, clock=lambda: now[0])
    assert [r.ok for r in results] == [True, True, False]
    assert results[2].findings[0].sentinel == "run_ceiling"
    assert len(client.calls) == 2


def test_expectations_decide_the_run_verdict():
    case = ChatCase(
        name="must-flag",
        word="kamirute1234",
        stream=True,
        expect=Expectation(False, ("api_call_failed",)),
    )
    (flagged,) = _run(EchoClient(reply="kamirute1234 API call failed after 2 retries"), [case])
    (missed,) = _run(EchoClient(), [case])
    assert flagged.as_expected and not flagged.ok
    assert not missed.as_expected and missed.ok


def test_run_tier_closes_every_client_and_reports_redacted_base_url():
    clients: list[EchoClient] = []

    def factory(config):
        clients.append(EchoClient())
        return clients[-1]

    config = LiveConfig(
        base_url=f"http://127.0.0.1:9/v1?key={FAKE_KEY}", api_key=FAKE_KEY, model="m"
    )
    run = run_tier(config, plan_sequences(random.Random(6)), client_factory=factory)
    assert isinstance(run, LiveRun) and run.ok and len(run.cases) == 6
    assert len(clients) == 2 and all(c.closed for c in clients)
    assert FAKE_KEY not in str(run.to_dict())


def test_a_client_that_cannot_be_built_fails_its_cases_with_a_redacted_reason():
    def factory(config):
        raise ValueError(f"bad settings for key {config.api_key}")

    run = run_tier(CONFIG, plan_sequences(random.Random(8)), client_factory=factory)
    assert not run.ok and len(run.cases) == 6
    for case in run.cases:
        assert case.findings[0].sentinel == "client_build_failed"
        assert FAKE_KEY not in case.error and "[REDACTED]" in case.error
