"""Credentials out of everything the recorder and the proxy keep: cassettes, timelines, logs.

What is removed from a recorded request:

* headers ``Authorization``, ``Proxy-Authorization``, ``x-api-key``, ``api-key``,
  ``Cookie`` and any header whose name looks like a credential (contains ``key``,
  ``token``, ``secret``, ``password``, ``auth`` or ``session`` as a word);
* in a JSON body, every field with such a name, at any depth (``max_tokens`` is not one:
  names are matched as whole words split on ``_``, ``-`` and case changes);
* in the query string, every parameter with such a name (``?key=...``);
* any remaining key-shaped value is replaced with :data:`REDACTED` by the one text
  redactor every path shares (:func:`harness.redaction.redact_text`).

The response body is kept byte-exact, except that any credential the request carried is
masked with ``*`` of the same length wherever it appears (:func:`mask_secrets`), so
offsets and chunk boundaries survive. :func:`secrets_of` collects those credentials.

Not here: the live tier's own redaction of reports (``harness.live.redact``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode

# the one text redactor (harness.redaction), re-exported: callers of this tier keep it
from harness.redaction import MIN_SECRET_CHARS, REDACTED, redact_text

__all__ = [
    "REDACTED",
    "is_secret_name",
    "mask_secrets",
    "redact_body",
    "redact_headers",
    "redact_target",
    "redact_text",
    "secrets_of",
]


_SECRET_WORDS = {"key", "apikey", "token", "secret", "password", "passwd", "auth", "session"}
_SECRET_HEADERS = {"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie"}
_WORD_SPLIT = re.compile(r"[_\-\s.]+|(?<=[a-z0-9])(?=[A-Z])")


def is_secret_name(name: str) -> bool:
    """True for names that carry credentials: ``api_key``, ``x-api-key``, ``apiKey``..."""
    lowered = name.lower()
    if lowered in _SECRET_HEADERS:
        return True
    words = [w.lower() for w in _WORD_SPLIT.split(name) if w]
    joined = "".join(words)
    return (
        any(w in _SECRET_WORDS for w in words)
        or joined in _SECRET_WORDS
        or "authorization" in words
    )


def redact_headers(
    headers: Iterable[tuple[str, str]], secrets: Iterable[str] = ()
) -> tuple[tuple[str, str], ...]:
    """Headers without credential headers; other values scrubbed of key shapes."""
    secrets = tuple(secrets)
    return tuple(
        (name, redact_text(value, secrets)) for name, value in headers if not is_secret_name(name)
    )


def redact_target(target: str, secrets: Iterable[str] = ()) -> str:
    """A request target without credential query parameters."""
    path, sep, query = target.partition("?")
    if not sep:
        return redact_text(path, secrets)
    kept = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if not is_secret_name(k)]
    out = path + ("?" + urlencode(kept) if kept else "")
    return redact_text(out, secrets)


def redact_body(body: bytes, secrets: Iterable[str] = ()) -> bytes:
    """A JSON body without credential fields (re-serialised compactly); any other body
    with secrets and key shapes replaced."""
    secrets = tuple(secrets)
    try:
        doc = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        text = body.decode("utf-8", "surrogateescape")
        return redact_text(text, secrets).encode("utf-8", "surrogateescape")
    scrubbed = _scrub(doc, secrets)
    if scrubbed == doc:
        return body  # nothing to remove: keep the client's exact bytes
    return json.dumps(scrubbed, ensure_ascii=False, separators=(",", ":")).encode()


def secrets_of(headers: Iterable[tuple[str, str]], body: bytes = b"") -> list[str]:
    """The credential values a request carries (header values, ``Bearer`` tokens, JSON
    credential fields), for :func:`mask_secrets` and log redaction."""
    found: list[str] = []
    for name, value in headers:
        if is_secret_name(name):
            found.append(value)
            scheme, _, token = value.partition(" ")
            if token and scheme.lower() in ("bearer", "basic", "token"):
                found.append(token)
    try:
        doc = json.loads(body.decode("utf-8")) if body else None
    except (UnicodeDecodeError, json.JSONDecodeError):
        doc = None
    found += _secret_fields(doc)
    return [s for s in found if len(s) >= MIN_SECRET_CHARS]


def mask_secrets(chunks: Sequence[bytes], secrets: Iterable[str]) -> list[bytes]:
    """``chunks`` with every occurrence of a secret (even across a chunk boundary)
    overwritten with ``*``; lengths and boundaries are unchanged."""
    needles = [s.encode() for s in secrets if len(s) >= MIN_SECRET_CHARS]
    body = bytearray(b"".join(chunks))
    hit = False
    for needle in needles:
        start = body.find(needle)
        while start != -1:
            body[start : start + len(needle)] = b"*" * len(needle)
            hit = True
            start = body.find(needle, start + len(needle))
    if not hit:
        return list(chunks)
    out, pos = [], 0
    for chunk in chunks:
        out.append(bytes(body[pos : pos + len(chunk)]))
        pos += len(chunk)
    return out


def _scrub(doc: Any, secrets: tuple[str, ...]) -> Any:
    if isinstance(doc, dict):
        return {k: _scrub(v, secrets) for k, v in doc.items() if not is_secret_name(str(k))}
    if isinstance(doc, list):
        return [_scrub(v, secrets) for v in doc]
    if isinstance(doc, str):
        return redact_text(doc, secrets)
    return doc


def _secret_fields(doc: Any) -> list[str]:
    if isinstance(doc, dict):
        out = []
        for k, v in doc.items():
            if is_secret_name(str(k)) and isinstance(v, str):
                out.append(v)
            else:
                out += _secret_fields(v)
        return out
    if isinstance(doc, list):
        return [s for v in doc for s in _secret_fields(v)]
    return []
