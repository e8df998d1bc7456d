"""Secret redaction for everything the live tier writes: output, logs, reports, errors.

A :class:`Redactor` holds the run's secrets and replaces them, and anything shaped like a
key or a credential, through the one text redactor every path shares
(:func:`harness.redaction.redact_text`: the record tier's cassettes and the run reports use
the same one, so a secret one path redacts no other path can miss).
:class:`RedactingFilter` is a ``logging.Filter`` that rewrites a
record in place (message, args, formatted exception and stack text) so every handler after
it sees only the redacted text; :func:`redacted_logging` installs the same rewrite for
*every* record created while it is active (a record factory), because a filter on a
logger does not see records propagated from its children.

Not here: deciding whether a call failed (``sentinels``), or where the key comes from
(``config``). Redaction is a last line of defence: the tier also never puts the key in
a message on purpose.
"""

from __future__ import annotations

import contextlib
import logging
import traceback
from collections.abc import Iterable, Iterator

from harness.redaction import MIN_SECRET_CHARS, REDACTED, redact_text

__all__ = [
    "REDACTED",
    "RedactingFilter",
    "Redactor",
    "redacted_logging",
]


class Redactor:
    """Replaces configured secrets and key-shaped tokens with :data:`REDACTED`."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        # Longest first, so a secret that contains another is replaced whole.
        self._secrets = tuple(
            sorted({s for s in secrets if s and len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True)
        )

    def __repr__(self) -> str:
        return f"Redactor(<{len(self._secrets)} secret(s)>)"

    def redact(self, text: object) -> str:
        """``str(text)`` with every secret and key-shaped token replaced."""
        return redact_text(text if isinstance(text, str) else str(text), self._secrets)

    def error_text(self, exc: BaseException) -> str:
        """``"Type: message"`` of ``exc`` and of its causes, redacted, for reports."""
        parts = []
        seen: set[int] = set()
        current: BaseException | None = exc
        while current is not None and id(current) not in seen and len(parts) < 8:
            seen.add(id(current))
            parts.append(f"{type(current).__name__}: {current}")
            current = current.__cause__ or current.__context__
        return self.redact(" <- ".join(parts))

    def filter(self) -> RedactingFilter:
        return RedactingFilter(self)


class RedactingFilter(logging.Filter):
    """Rewrites each record so that no handler after it can see a secret. Never drops one."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        _redact_record(record, self.redactor)
        return True


@contextlib.contextmanager
def redacted_logging(redactor: Redactor) -> Iterator[None]:
    """Redact every log record created in this block, whichever logger made it and
    whichever handler (pytest's caplog included) receives it. Restores the previous
    record factory on exit."""
    previous = logging.getLogRecordFactory()

    def factory(*args: object, **kwargs: object) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        _redact_record(record, redactor)
        return record

    logging.setLogRecordFactory(factory)
    try:
        yield
    finally:
        logging.setLogRecordFactory(previous)


def _redact_record(record: logging.LogRecord, redactor: Redactor) -> None:
    if getattr(record, "_harness_redacted", False):
        return
    try:
        message = record.getMessage()
    except (TypeError, ValueError) as exc:  # a bad %-format: keep the evidence, redacted
        message = f"{record.msg!r} % {record.args!r} ({exc})"
    record.msg = redactor.redact(message)
    record.args = None
    if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
        record.exc_text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
    if record.exc_text:
        record.exc_text = redactor.redact(record.exc_text)
    # Handlers such as rich's render exc_info themselves (with locals): keep only the text.
    record.exc_info = None
    if record.stack_info:
        record.stack_info = redactor.redact(record.stack_info)
    record._harness_redacted = True
