"""One redactor for every path: a secret the live tier redacts, the record tier and the
run reports redact too (they once disagreed: ``sk-`` + 8 characters was redacted in
cassettes and left whole in live reports)."""

from __future__ import annotations

import pytest

from harness.contract.causes import cause_chain, reply_text
from harness.live.redact import Redactor
from harness.record import redact as record_redact
from harness.redaction import REDACTED, redact_text

#: The union of the key shapes either tier knew, each inside ordinary text.
SHAPES = [
    "sk-abcd1234",  # sk- + 8: the record tier's shortest
    "sk-or-v1-0123456789abcdef0123456789abcdef",  # OpenRouter
    "sk-proj-AbCdEfGhIjKlMnOpQrStUv",
    "sk-ant-api03-AAAABBBBCCCCDDDD",
]
CONTEXTS = [
    ("Bearer tok_9f8e7d6c5b4a", "tok_9f8e7d6c5b4a"),
    ("Authorization: Basic dXNlcjpwYXNz", "Basic dXNlcjpwYXNz"),
    ("api_key=abcdef123456&x=1", "abcdef123456"),
    ('{"api_key": "zyxw98765432"}', "zyxw98765432"),
]
CASES = [(f"call failed with key {k} here", k) for k in SHAPES] + [
    (f"request carried {text}", secret) for text, secret in CONTEXTS
]


def _paths():
    yield "harness.redaction", redact_text
    yield "record tier", record_redact.redact_text
    yield "live tier", Redactor().redact
    yield "record headers", lambda t: record_redact.redact_headers([("x-note", t)])[0][1]
    yield (
        "run report cause chain",
        lambda t: cause_chain({"status": "raised", "error": "E", "message": t})[0]["message"],
    )
    yield "run report reply", lambda t: reply_text({"status": "returned", "text": t})


@pytest.mark.parametrize("text,secret", CASES)
def test_every_path_redacts_every_key_shape(text, secret):
    for name, redact in _paths():
        out = redact(text)
        assert secret not in out, (name, out)
        assert REDACTED in out, (name, out)


def test_a_given_secret_is_redacted_verbatim_on_every_path_and_short_ones_are_not():
    secret = "plain-credential-0042"  # no key shape: only known as the run's secret
    text = f"upstream said {secret}!"
    assert secret not in redact_text(text, [secret])
    assert secret not in record_redact.redact_text(text, [secret])
    assert secret not in Redactor([secret]).redact(text)
    assert redact_text("ab cd", ["ab"]) == "ab cd"  # too short to be a key: text intact


def test_ordinary_text_is_left_alone():
    text = "max_tokens=64, the sky-blue model said sk-1 (no key) and a risk-averse thing"
    for name, redact in _paths():
        assert redact(text) == text, name
