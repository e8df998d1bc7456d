"""Redaction: the configured key and key-shaped tokens never survive into text or logs."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.live.redact import REDACTED, RedactingFilter, Redactor, redacted_logging

FAKE_KEY = "sk-or-v1-FAKEKEY-0123456789abcdef0123456789abcdef"
ODD_KEY = "not-shaped-like-a-key-but-configured-XYZ123"


@pytest.fixture
def redactor() -> Redactor:
    return Redactor([FAKE_KEY, ODD_KEY])


@pytest.mark.parametrize(
    "text",
    [
        f"key={FAKE_KEY}",
        f"Incorrect API key provided: {FAKE_KEY}.",
        f"{{'error': {{'message': 'bad key {FAKE_KEY}'}}}}",
        f"Authorization: Bearer {FAKE_KEY}",
        f"the configured one: {ODD_KEY} (not sk-shaped)",
        "another provider key sk-proj-AbCdEfGhIjKlMnOpQrStUv",
        "anthropic sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAA",
    ],
)
def test_keys_are_replaced(redactor, text):
    out = redactor.redact(text)
    assert REDACTED in out
    assert FAKE_KEY not in out and ODD_KEY not in out
    assert "sk-proj-AbCd" not in out and "sk-ant-api03-AAAA" not in out


@pytest.mark.parametrize(
    "header",
    [
        "Authorization: Bearer abc.def.ghi",
        "authorization: Basic dXNlcjpwYXNz",
        '{"Authorization": "Bearer abc.def.ghi"}',
        "Proxy-Authorization: Bearer abc.def.ghi",
    ],
)
def test_authorization_header_credentials_are_replaced(redactor, header):
    out = redactor.redact(header)
    assert "abc.def.ghi" not in out and "dXNlcjpwYXNz" not in out
    assert "uthorization" in out  # the header name stays: the reader knows what was hidden


@pytest.mark.parametrize(
    "text",
    [
        "desk-top task-based sk-learn",
        "The connection error was a timeout.",
        "kamirute4821",
        "Error code: 401 - {'error': {'message': 'No auth credentials found'}}",
    ],
)
def test_ordinary_text_is_left_alone(text):
    assert Redactor([FAKE_KEY]).redact(text) == text


@given(st.text(max_size=40), st.text(max_size=40))
def test_the_key_is_replaced_wherever_it_sits(before, after):
    out = Redactor([FAKE_KEY]).redact(before + FAKE_KEY + after)
    assert FAKE_KEY not in out


def test_short_secrets_are_not_used_verbatim():
    assert Redactor(["ab", None, ""]).redact("about a cab") == "about a cab"


def test_repr_hides_the_secrets(redactor):
    assert FAKE_KEY not in repr(redactor)
    assert "2 secret" in repr(redactor)


def test_error_text_walks_the_cause_chain(redactor):
    try:
        try:
            raise ValueError(f"bad key {FAKE_KEY}")
        except ValueError as inner:
            raise RuntimeError("call failed") from inner
    except RuntimeError as exc:
        text = redactor.error_text(exc)
    assert text.startswith("RuntimeError: call failed <- ValueError: bad key ")
    assert FAKE_KEY not in text


def test_the_filter_rewrites_message_args_and_exception_text(redactor):
    try:
        raise PermissionError(f"401 for {FAKE_KEY}")
    except PermissionError as exc:
        record = logging.LogRecord(
            "openai",
            logging.ERROR,
            __file__,
            1,
            "sending %s",
            (f"Bearer {FAKE_KEY}",),
            (type(exc), exc, exc.__traceback__),
        )
    assert RedactingFilter(redactor).filter(record) is True
    formatted = logging.Formatter().format(record)
    assert FAKE_KEY not in formatted
    assert "PermissionError" in formatted and "Traceback" in formatted
    assert record.exc_info is None  # handlers cannot re-render the exception with locals


def test_redacted_logging_covers_every_logger_and_handler(redactor, caplog):
    caplog.set_level(logging.DEBUG)
    with redacted_logging(redactor):
        logging.getLogger("openai._base_client").debug("headers %r", {"api_key": FAKE_KEY})
        logging.getLogger("some.child.logger").warning("key %s", ODD_KEY)
        try:
            raise RuntimeError(FAKE_KEY)
        except RuntimeError:
            logging.getLogger("harness.client").exception("failed")
    logging.getLogger("after").warning("restored %s", "factory")

    assert len(caplog.records) == 4
    assert FAKE_KEY not in caplog.text and ODD_KEY not in caplog.text
    for record in caplog.records:
        assert FAKE_KEY not in record.getMessage()
    assert caplog.records[-1].getMessage() == "restored factory"
