"""The one redactor of text: every path that writes text a secret could reach (live
reports and logs, cassettes and the fault proxy's records, cause chains and replies in
run reports, errors) replaces secrets with :data:`REDACTED` through :func:`redact_text`.

Replaced, in any text:

- every given secret verbatim (the API key in use, credentials a request carried), when
  at least :data:`MIN_SECRET_CHARS` long (replacing "ab" everywhere would shred the text,
  and a key that short is not a real key anyway);
- anything shaped like a provider key: ``sk-`` and 8 or more key characters (``sk-...``,
  ``sk-or-v1-...``, ``sk-proj-...``, ``sk-ant-...``);
- the credential of an ``Authorization:`` header or a ``Bearer`` token, and the value of
  an ``api_key=`` / ``api-key:`` / ``"api_key": "..."`` pair.

Not here: which request headers and body fields are credentials
(``harness.record.redact``), the live tier's logging filter (``harness.live.redact``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["KEY_SHAPES", "MIN_SECRET_CHARS", "REDACTED", "redact_text"]

REDACTED = "[REDACTED]"
#: Secrets shorter than this are not replaced verbatim (see the module docstring).
MIN_SECRET_CHARS = 8

KEY_SHAPES = re.compile(
    r"""
    \bsk-[A-Za-z0-9][A-Za-z0-9_\-]{7,}                      # sk-..., sk-or-v1-..., sk-proj-...
    | (?<=\b[Bb]earer\ )\s*[^\s"',;]+                       # Bearer <token>
    | (?i:(?<=authorization:\ )|(?<=authorization":\ "))[^\r\n"',]+  # Authorization: <x>
    | (?i:(?<=api_key=)|(?<=api-key:\ )|(?<=api_key":\ ")|(?<=api_key':\ '))[^\s"',&]+
    """,
    re.VERBOSE,
)


def redact_text(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every secret (longest first, so one that contains another goes whole)
    and every key-shaped token replaced by :data:`REDACTED`."""
    for secret in sorted(
        {s for s in secrets if s and len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True
    ):
        text = text.replace(secret, REDACTED)
    return KEY_SHAPES.sub(REDACTED, text)
