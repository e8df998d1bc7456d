"""What the recorder removes from a request before it is written anywhere."""

from __future__ import annotations

import json

import pytest

from harness.record.redact import (
    is_secret_name,
    mask_secrets,
    redact_body,
    redact_headers,
    redact_target,
    secrets_of,
)

pytestmark = pytest.mark.timeout(30)
KEY = "sk-or-v1-MARKER0123456789abcdef"


@pytest.mark.parametrize(
    "name",
    [
        "Authorization",
        "x-api-key",
        "api-key",
        "api_key",
        "apiKey",
        "access_token",
        "X-Goog-Api-Key",
        "cookie",
        "client_secret",
    ],
)
def test_credential_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name", ["max_tokens", "content-type", "anthropic-version", "author", "model", "prompt_tokens"]
)
def test_ordinary_names(name: str) -> None:
    assert not is_secret_name(name)


def test_headers_lose_credentials_and_key_shapes() -> None:
    headers = [
        ("authorization", f"Bearer {KEY}"),
        ("x-api-key", KEY),
        ("accept", "*/*"),
        ("x-note", f"k={KEY}"),
    ]
    kept = dict(redact_headers(headers, secrets_of(headers)))
    assert set(kept) == {"accept", "x-note"}
    assert KEY not in json.dumps(kept)


def test_json_fields_are_removed_at_any_depth_and_the_rest_kept() -> None:
    body = json.dumps(
        {"model": "m", "max_tokens": 5, "api_key": KEY, "extra": {"token": KEY, "x": [KEY]}}
    ).encode()
    out = json.loads(redact_body(body, secrets_of([], body)))
    assert out == {"model": "m", "max_tokens": 5, "extra": {"x": ["[REDACTED]"]}}


def test_a_body_without_credentials_keeps_its_exact_bytes() -> None:
    body = b'{"model":  "m",\n "stream": true}'
    assert redact_body(body) == body


def test_query_parameters() -> None:
    assert redact_target(f"/v1/x?key={KEY}&alt=sse") == "/v1/x?alt=sse"


def test_masking_keeps_lengths_and_boundaries_even_across_chunks() -> None:
    chunks = [b"data: " + KEY[:10].encode(), KEY[10:].encode() + b"\n\n"]
    out = mask_secrets(chunks, [KEY])
    assert [len(c) for c in out] == [len(c) for c in chunks]
    assert KEY.encode() not in b"".join(out) and b"*" * len(KEY) in b"".join(out)
