"""The sentinel detector: every known failure text is caught wherever it hides, and
ordinary replies (even ones about connections, errors and timeouts) raise no alarm."""

from __future__ import annotations

import logging

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from harness.live.sentinels import (
    SENTINELS,
    Finding,
    check_reply,
    find_sentinels,
    scan_chunks,
    scan_error,
    scan_records,
)

# Ordinary assistant replies that must raise no sentinel. Many talk *about* connections,
# errors, timeouts and retries in prose or code, where a substring detector cries wolf.
ORDINARY_REPLIES = (
    "kamirute4821",
    "Sure! Here is the word you asked for: zovapine1234",
    "Paris is the capital of France.",
    "Good error handling means catching the specific exceptions you expect and letting "
    "the rest propagate, so bugs are not hidden.",
    "If the connection drops, the client should reconnect with exponential backoff and "
    "jitter rather than hammering the server.",
    "A timeout of 30 seconds is a reasonable default for most HTTP calls, but streaming "
    "responses need an idle timeout instead of a total one.",
    "When a request timed out in my tests, it was usually because the proxy buffered the "
    "whole response before forwarding it.",
    "The connection error you saw yesterday was caused by a misconfigured DNS resolver.",
    "Connection errors are common on mobile networks, so design for them.",
    "Connection pooling reuses sockets across requests, which saves a TLS handshake each time.",
    "You can catch it like this:\n\n```python\ntry:\n    client.chat.completions.create(...)\n"
    "except openai.APIConnectionError:\n    log.warning('retrying')\n```",
    "Use `raise ReadTimeout('took too long')` only in tests; in production let httpx raise it.",
    "The server returned an internal server error once, then recovered on the next try.",
    "Rate limits are enforced per key; if the rate limit is exceeded you should wait for "
    "the time given in the Retry-After header.",
    "Error handling in Go is explicit: every function returns an error value you check.",
    "I retried the request three times and it worked on the second attempt.",
    "The API call failed, so I checked the logs and found a typo in the model name.",
    'Here is the JSON you asked for: {"name": "Ada", "errors": 0, "type": "user"}',
    'The response looks like {"id": "chatcmpl-1", "choices": [{"message": {"content": "hi"}}]}.',
    "HTTP status codes in the 5xx range mean the server failed; 4xx means the request was wrong.",
    "To debug a stalled stream, log the time of every chunk and look for the gap.",
    "A socket in CLOSE-WAIT means the peer closed its side and the local application has "
    "not called close yet.",
    "TCP keepalive sends probes after an idle period; with idle 30, interval 10 and count 3 "
    "a dead peer is noticed in about a minute.",
    "Timeouts: connect 10 s, read 60 s, write 10 s, pool 5 s.",
    "The error code is stored in the `status` field; check it before reading the body.",
    "Requests can time out for many reasons, for example a slow upstream or packet loss.",
    "1. Open the settings\n2. Choose Network\n3. Turn off the proxy\n4. Try the connection again",
    "Bonjour ! Voici la réponse : le serveur a bien répondu. 日本語のテキストも大丈夫です。",
    "The gateway forwards traffic to the service; a bad gateway configuration usually shows "
    "up as failed health checks.",
    "Your request was too large, so I summarised the document in three bullet points instead.",
    "No worries — the build passed, all 214 tests are green, and the deploy finished in 4 minutes.",
    "Desk-top task-based sk-learn pipelines are unrelated to API keys.",
)

EXAMPLES = [(s.name, s.anchored, e) for s in SENTINELS for e in s.examples]
WHITESPACE_RUNS = [" ", "  ", "\t", "\n", " \n  ", "\r\n", "\u00a0"]


@st.composite
def embedded_sentinel(draw: st.DrawFn) -> tuple[str, str, int, int]:
    """(name, text, start, end): a sentinel example in random case, its spaces widened
    to random whitespace runs, between arbitrary prefix and suffix text."""
    name, anchored, example = draw(st.sampled_from(EXAMPLES))
    flips = draw(st.lists(st.booleans(), min_size=len(example), max_size=len(example)))
    cased = "".join(c.upper() if f else c.lower() for c, f in zip(example, flips, strict=True))
    words = cased.split(" ")
    body = words[0]
    for word in words[1:]:
        body += draw(st.sampled_from(WHITESPACE_RUNS)) + word
    prefix = draw(st.text(max_size=60))
    suffix = draw(st.text(max_size=60))
    # The reply code mentions exception names after these keywords; they are not sentinels.
    assume(not prefix.rstrip().endswith(("except", "raise")))
    before = "\n" if anchored else draw(st.sampled_from([" ", "\n", ". ", "\t"]))
    after = draw(st.sampled_from([" ", "\n", ". ", " and more"]))
    text = prefix + before + body + after + suffix
    start = len(prefix) + len(before)
    return name, text, start, start + len(body)


@pytest.mark.timeout(60)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(embedded_sentinel())
def test_every_sentinel_is_caught_anywhere_in_any_case_and_spacing(case):
    name, text, start, end = case
    findings = find_sentinels(text)
    hits = [f for f in findings if f.sentinel == name]
    assert hits, f"{name} not found in {text!r}"
    assert any(start - 2 <= f.offset <= end for f in hits)


@pytest.mark.timeout(60)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(embedded_sentinel(), st.data())
def test_a_sentinel_split_across_stream_chunks_is_caught(case, data):
    name, text, start, end = case
    inside = data.draw(st.integers(min_value=start + 1, max_value=end - 1))
    more = data.draw(st.lists(st.integers(min_value=0, max_value=len(text)), max_size=8))
    cuts = sorted({0, inside, *more, len(text)})
    chunks = [text[a:b] for a, b in zip(cuts, cuts[1:], strict=False)]
    assert "".join(chunks) == text

    findings = [f for f in scan_chunks(chunks) if f.sentinel == name]

    assert findings, f"{name} not found in chunks {chunks!r}"
    for f in findings:
        assert f.where == "chunks"
        assert chunks[f.chunk] and sum(map(len, chunks[: f.chunk])) <= f.offset


@pytest.mark.parametrize("reply", ORDINARY_REPLIES)
def test_ordinary_replies_raise_no_alarm(reply):
    assert find_sentinels(reply) == []
    assert check_reply(reply, "stop") == []


def test_the_corpus_is_big_enough_and_talks_about_failures():
    assert len(ORDINARY_REPLIES) >= 30
    lowered = " ".join(ORDINARY_REPLIES).lower()
    for word in ("connection", "error handling", "timeout", "timed out", "internal server error"):
        assert word in lowered


def test_the_seed_symptom_is_flagged_even_though_the_reply_is_truthy():
    reply = "API call failed after 3 retries: Connection error."
    names = [f.sentinel for f in check_reply(reply, "stop")]
    assert names == ["api_call_failed", "connection_error"]


def test_offsets_point_at_the_match():
    text = "Here you go.\n\nRequest timed out."
    (finding,) = find_sentinels(text)
    assert finding.sentinel == "request_timed_out"
    assert text[finding.offset :].lstrip().lower().startswith("request timed out")
    assert "Request timed out" in finding.excerpt


@pytest.mark.parametrize("text", ["", "   ", "\n\t", None])
def test_an_empty_reply_is_a_failure(text):
    names = [f.sentinel for f in check_reply(text, "stop")]
    assert names == ["empty_reply"]


@pytest.mark.parametrize("reason", [None, "content_filter", "tool_calls", "error", ""])
def test_a_finish_reason_other_than_stop_or_length_is_a_failure(reason):
    (finding,) = check_reply("fine", reason)
    assert finding == Finding("bad_finish_reason", "finish_reason", None, repr(reason))


@pytest.mark.parametrize("reason", ["stop", "length"])
def test_stop_and_length_are_accepted(reason):
    assert check_reply("fine", reason) == []


def test_check_reply_names_the_chunk_when_deltas_differ_from_the_text():
    chunks = ["All good. Connec", "tion error", "."]
    findings = check_reply("All good.", "stop", chunks=chunks)
    assert [(f.sentinel, f.where, f.chunk) for f in findings] == []  # mid-line: not a message
    chunks = ["All good.\nConnec", "tion error", "."]
    findings = check_reply("All good.", "stop", chunks=chunks)
    assert [(f.sentinel, f.where, f.chunk) for f in findings] == [("connection_error", "chunks", 0)]


def test_raised_errors_are_scanned_through_their_cause_chain():
    try:
        try:
            raise RuntimeError("Cannot send a request, as the client has been closed.")
        except RuntimeError as inner:
            raise ConnectionError("Connection error.") from inner
    except ConnectionError as exc:
        findings = scan_error(exc)
    names = {f.sentinel for f in findings}
    assert {"client_closed", "connection_error"} <= names
    assert all(f.where == "error" for f in findings)


def test_log_records_are_scanned_with_args_and_exception_text():
    plain = logging.LogRecord(
        "httpx",
        logging.INFO,
        __file__,
        1,
        'HTTP Request: %s "%s"',
        ("POST /v1/chat/completions", "HTTP/1.1 502 Bad Gateway"),
        None,
    )
    try:
        raise OSError("[Errno 104] Connection reset by peer")
    except OSError as exc:
        with_exc = logging.LogRecord(
            "harness.client",
            logging.WARNING,
            __file__,
            2,
            "attempt %d failed",
            (1,),
            (type(exc), exc, exc.__traceback__),
        )
    healthy = logging.LogRecord(
        "httpx", logging.INFO, __file__, 3, "HTTP Request: POST %s", ('"HTTP/1.1 200 OK"',), None
    )

    findings = scan_records([plain, with_exc, healthy])

    assert [(f.sentinel, f.where, f.chunk) for f in findings] == [
        ("http_status_line", "log", 0),
        ("connection_reset", "log", 1),
    ]


def test_an_unknown_where_is_rejected_with_the_allowed_values():
    with pytest.raises(ValueError, match="where: 'body'.*reply, chunks, error, log"):
        find_sentinels("x", where="body")


def test_every_sentinel_is_documented_in_the_module_docstring():
    import harness.sentinels as module

    for sentinel in SENTINELS:
        assert sentinel.name in module.__doc__
        assert sentinel.examples and sentinel.description


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300), st.sampled_from(["reply", "chunks", "error", "log"]))
def test_any_text_gives_well_formed_findings(text, where):
    for f in find_sentinels(text, where=where):
        assert f.where == where
        assert 0 <= f.offset < len(text)
        assert f.excerpt
