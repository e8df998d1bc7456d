"""Scanning what a live call produced for error sentinels: its reply, streamed chunks,
raised errors and captured log records.

The sentinel list and the text matcher live one layer down in :mod:`harness.sentinels`
(the runner classifies outcomes with it too); they are re-exported here. This module
adds where to look: :func:`scan_chunks` (deltas joined first, so a sentinel split across
chunks is still caught), :func:`scan_error` (the error and its cause chain),
:func:`scan_records` (log records) and :func:`check_reply`, which adds two structural
findings: ``empty_reply`` (no non-whitespace text) and ``bad_finish_reason`` (anything
but a completed call's stop reason).

Not here: redaction (``redact``), what counts as the *right* answer (``session``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from harness.sentinels import EXCERPT_CHARS, SENTINELS, WHERE, Finding, Sentinel, find_sentinels

__all__ = [
    "DEFAULT_OK_FINISH_REASONS",
    "EXCERPT_CHARS",
    "SENTINELS",
    "WHERE",
    "Finding",
    "Sentinel",
    "check_reply",
    "error_text",
    "find_sentinels",
    "scan_chunks",
    "scan_error",
    "scan_records",
]

#: Finish reasons a completed call may report: OpenAI's, and Anthropic's stop reasons.
DEFAULT_OK_FINISH_REASONS: tuple[str, ...] = ("stop", "length", "end_turn", "max_tokens")


def scan_chunks(chunks: Sequence[str]) -> list[Finding]:
    """Scan streamed deltas as one text, so a sentinel split across chunks is caught.
    Each finding names the chunk its match starts in."""
    starts = _starts(chunks)
    findings = []
    for f in find_sentinels("".join(chunks), where="chunks"):
        index = _chunk_at(starts, f.offset or 0)
        findings.append(Finding(f.sentinel, f.where, f.offset, f.excerpt, index))
    return findings


def scan_error(exc: BaseException) -> list[Finding]:
    """Sentinels in a raised error: its type name and message and those of its cause chain
    (``__cause__`` / ``__context__``, bounded). One finding per sentinel (the first), as
    a chain repeats its causes' messages."""
    findings = []
    seen: set[str] = set()
    for f in find_sentinels(error_text(exc), where="error"):
        if f.sentinel not in seen:
            seen.add(f.sentinel)
            findings.append(f)
    return findings


def scan_records(records: Iterable[logging.LogRecord]) -> list[Finding]:
    """Sentinels in captured log records (message and formatted exception text). The
    offset is within the record's text; ``chunk`` is the record's index."""
    findings = []
    for i, record in enumerate(records):
        text = _record_text(record)
        for f in find_sentinels(text, where="log"):
            findings.append(Finding(f.sentinel, "log", f.offset, f.excerpt, i))
    return findings


def check_reply(
    text: str | None,
    finish_reason: str | None,
    *,
    chunks: Sequence[str] | None = None,
    ok_finish_reasons: Sequence[str] = DEFAULT_OK_FINISH_REASONS,
) -> list[Finding]:
    """Everything wrong with a call that *returned*: an empty reply, a finish reason
    other than ``ok_finish_reasons``, and sentinels in the text. When the stream's
    deltas are given as ``chunks``, each reply finding names the chunk it starts in;
    if the deltas do not add up to the text, they are scanned as well (``chunks``)."""
    findings = []
    if text is None or not text.strip():
        findings.append(Finding("empty_reply", "reply", None, ""))
    if finish_reason not in ok_finish_reasons:
        findings.append(Finding("bad_finish_reason", "finish_reason", None, repr(finish_reason)))
    in_text = find_sentinels(text, where="reply")
    if chunks is not None and "".join(chunks) == (text or ""):
        starts = _starts(chunks)
        in_text = [
            Finding(f.sentinel, f.where, f.offset, f.excerpt, _chunk_at(starts, f.offset or 0))
            for f in in_text
        ]
        findings.extend(in_text)
    else:
        findings.extend(in_text)
        if chunks is not None:
            findings.extend(scan_chunks(chunks))
    return findings


# --------------------------------------------------------------------------- helpers


def _starts(chunks: Sequence[str]) -> list[int]:
    starts = []
    pos = 0
    for chunk in chunks:
        starts.append(pos)
        pos += len(chunk)
    return starts


def _chunk_at(starts: list[int], offset: int) -> int:
    # Last chunk whose start is <= offset; empty chunks share a start, take the last.
    index = 0
    for i, start in enumerate(starts):
        if start <= offset:
            index = i
        else:
            break
    return index


_MAX_CHAIN = 8


def error_text(exc: BaseException) -> str:
    parts = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(parts) < _MAX_CHAIN:
        seen.add(id(current))
        parts.append(f"{type(current).__name__}: {current}")
        current = current.__cause__ or current.__context__
    return "\n".join(parts)


def _record_text(record: logging.LogRecord) -> str:
    text = record.getMessage()
    if record.exc_text:
        text += "\n" + record.exc_text
    elif record.exc_info and record.exc_info[1] is not None:
        text += "\n" + error_text(record.exc_info[1])
    return text
