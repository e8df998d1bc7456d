"""Cassettes: one recorded HTTP exchange as versioned, diffable text, one body chunk a line.

A cassette holds the request (method, target, headers, body, all with credentials
removed by :mod:`harness.record.redact`), the response status and headers, and the
body as the exact byte chunks the upstream delivered, each with its monotonic offset
in milliseconds since the request was sent upstream. Format version 1::

    harness-cassette: 1
    upstream: https://openrouter.ai/api/v1
    recorded-at: 2026-12-01T12:00:00Z
    request: POST /api/v1/chat/completions
    request-header: content-type: application/json
    request-body: t {"model": "m", "stream": true}
    status: 200
    response-at-ms: 211.402
    response-header: content-type: text/event-stream
    outcome: complete
    body:
    212.010 t data: {"choices": [...]}\\n\\n
    240.733 t data: [DONE]\\n\\n

Every header line is ``name: value``; ``request-header`` and ``response-header`` repeat,
in order. After ``body:`` each line is ``<offset_ms> <kind> <payload>``: kind ``t`` is
escaped text (UTF-8 printable characters as they are; ``\\\\``, ``\\n``, ``\\r``,
``\\t`` and ``\\xHH`` for every other byte, including the bytes of a UTF-8 sequence a
chunk boundary split and a trailing space), kind ``b`` is base64 (bodies that are
mostly not text). ``outcome`` says how the body ended: ``complete``, ``client_gone``
(the client left first) or ``upstream_error: <one line>``. Lines starting with ``#``
and blank lines in the header block are ignored. Reading is strict: a bad line raises
:class:`CassetteError` naming the file, the line and what is allowed.

Not here: recording (``proxy.py``), replay (``replay.py``), redaction (``redact.py``).
"""

from __future__ import annotations

import base64
import binascii
import math
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "FORMAT_VERSION",
    "Cassette",
    "CassetteError",
    "Chunk",
    "decode_payload",
    "dumps",
    "encode_payload",
    "loads",
    "read_cassette",
    "read_cassettes",
    "write_cassette",
]

FORMAT_VERSION = 1
SUFFIX = ".cassette"
MAGIC = "harness-cassette"
#: Above this ratio of escaped text to raw bytes a chunk is stored as base64 instead.
TEXT_RATIO_MAX = 1.6
OUTCOMES = ("complete", "client_gone", "upstream_error")


class CassetteError(ValueError):
    """A cassette file is unreadable or malformed; the message names file, line and field."""


@dataclass(frozen=True)
class Chunk:
    """One body chunk as received, ``offset_ms`` after the request was sent upstream."""

    offset_ms: float
    data: bytes


@dataclass(frozen=True)
class Cassette:
    """One recorded exchange; see the module docstring for the file format."""

    method: str
    target: str
    status: int
    chunks: tuple[Chunk, ...] = ()
    request_headers: tuple[tuple[str, str], ...] = ()
    request_body: bytes = b""
    response_headers: tuple[tuple[str, str], ...] = ()
    response_at_ms: float = 0.0
    upstream: str = ""
    recorded_at: str = ""
    outcome: str = "complete"
    extra: tuple[tuple[str, str], ...] = field(default=())

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]

    @property
    def body(self) -> bytes:
        return b"".join(c.data for c in self.chunks)

    def header(self, name: str) -> str | None:
        """The first response header ``name`` (case-insensitive), or None."""
        name = name.lower()
        return next((v for k, v in self.response_headers if k.lower() == name), None)


def dumps(cassette: Cassette) -> str:
    """The cassette as format-1 text (ends with a newline)."""
    c = cassette
    lines = [f"{MAGIC}: {FORMAT_VERSION}"]
    if c.upstream:
        lines.append(f"upstream: {_one_line(c.upstream)}")
    if c.recorded_at:
        lines.append(f"recorded-at: {_one_line(c.recorded_at)}")
    lines.append(f"request: {_one_line(c.method)} {_one_line(c.target)}")
    lines += [f"request-header: {_one_line(k)}: {_one_line(v)}" for k, v in c.request_headers]
    if c.request_body:
        lines.append(f"request-body: {encode_payload(c.request_body)}")
    lines.append(f"status: {c.status}")
    lines.append(f"response-at-ms: {_ms(c.response_at_ms)}")
    lines += [f"response-header: {_one_line(k)}: {_one_line(v)}" for k, v in c.response_headers]
    lines += [f"{_one_line(k)}: {_one_line(v)}" for k, v in c.extra]
    lines.append(f"outcome: {_one_line(c.outcome)}")
    lines.append("body:")
    lines += [f"{_ms(ch.offset_ms)} {encode_payload(ch.data)}" for ch in c.chunks]
    return "\n".join(lines) + "\n"


def loads(text: str, *, source: str = "<cassette>") -> Cassette:
    """Parse format-1 text; :class:`CassetteError` names ``source``, the line and field."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines or lines[0].strip() != f"{MAGIC}: {FORMAT_VERSION}":
        first = lines[0] if lines else ""
        raise CassetteError(
            f"{source}:1: {first[:60]!r} is not a cassette header; allowed: "
            f"'{MAGIC}: {FORMAT_VERSION}'"
        )
    fields: dict[str, str] = {}
    req_headers: list[tuple[str, str]] = []
    resp_headers: list[tuple[str, str]] = []
    extra: list[tuple[str, str]] = []
    body_at = None
    for i, line in enumerate(lines[1:], start=2):
        if line == "body:":
            body_at = i
            break
        if not line.strip() or line.startswith("#"):
            continue
        name, sep, value = line.partition(": ")
        if not sep:
            raise CassetteError(f"{source}:{i}: {line[:60]!r} is not 'name: value'")
        if name in ("request-header", "response-header"):
            k, sep2, v = value.partition(": ")
            if not sep2:
                raise CassetteError(f"{source}:{i}: {name}: {value[:60]!r} is not 'name: value'")
            (req_headers if name == "request-header" else resp_headers).append((k, v))
        elif name in _FIELDS:
            fields[name] = value
        else:
            extra.append((name, value))
    if body_at is None:
        raise CassetteError(f"{source}: no 'body:' line; a cassette ends with body: and its chunks")
    chunks = [_chunk(line, source, i) for i, line in enumerate(lines[body_at:], start=body_at + 1)]
    for name in ("request", "status"):
        if name not in fields:
            raise CassetteError(f"{source}: field {name!r} is missing")
    method, sep, target = fields["request"].partition(" ")
    if not sep or not target.startswith("/"):
        raise CassetteError(
            f"{source}: request: {fields['request']!r} is not valid; allowed: METHOD /path"
        )
    status = _int(fields["status"], source, "status", 100, 599)
    outcome = fields.get("outcome", "complete")
    if outcome.split(":", 1)[0] not in OUTCOMES:
        raise CassetteError(
            f"{source}: outcome: {outcome!r} is not valid; allowed: {', '.join(OUTCOMES)}"
        )
    return Cassette(
        method=method,
        target=target,
        status=status,
        chunks=tuple(chunks),
        request_headers=tuple(req_headers),
        request_body=(
            _payload(fields["request-body"], source, "request-body")
            if "request-body" in fields
            else b""
        ),
        response_headers=tuple(resp_headers),
        response_at_ms=_offset(fields.get("response-at-ms", "0"), source, "response-at-ms"),
        upstream=fields.get("upstream", ""),
        recorded_at=fields.get("recorded-at", ""),
        outcome=outcome,
        extra=tuple(extra),
    )


def write_cassette(path: str | Path, cassette: Cassette) -> Path:
    """Write atomically (a temporary file renamed into place); returns the path."""
    p = Path(path)
    tmp = p.with_name(f".{p.name}.tmp")
    tmp.write_text(dumps(cassette), encoding="utf-8")
    os.replace(tmp, p)
    return p


def read_cassette(path: str | Path) -> Cassette:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CassetteError(f"{p}: cannot read cassette: {exc}") from exc
    return loads(text, source=str(p))


def read_cassettes(paths: Iterable[str | Path]) -> list[Cassette]:
    """Read files, and every ``*.cassette`` of a directory in name order."""
    out: list[Cassette] = []
    for path in paths:
        p = Path(path)
        if p.is_dir():
            files = sorted(p.glob(f"*{SUFFIX}"))
            if not files:
                raise CassetteError(f"{p}: no *{SUFFIX} files in this directory")
            out += [read_cassette(f) for f in files]
        else:
            out.append(read_cassette(p))
    return out


# --------------------------------------------------------------------------- payloads

_SIMPLE = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def encode_payload(data: bytes) -> str:
    """``t <escaped text>`` or ``b <base64>``, whichever reads better for ``data``."""
    text = _escape(data)
    if len(text) <= TEXT_RATIO_MAX * len(data) + 8:
        return f"t {text}"
    return f"b {base64.b64encode(data).decode('ascii')}"


def decode_payload(payload: str) -> bytes:
    """Inverse of :func:`encode_payload`; ValueError on a malformed payload."""
    kind, sep, rest = payload.partition(" ")
    if kind == "b" and sep:
        try:
            return base64.b64decode(rest, validate=True)
        except binascii.Error as exc:
            raise ValueError(f"not valid base64: {exc}") from None
    if kind == "t":  # "t" alone: an empty chunk whose trailing blank an editor stripped
        return _unescape(rest)
    raise ValueError(f"{payload[:20]!r}: allowed: 't <escaped text>' or 'b <base64>'")


def _escape(data: bytes) -> str:
    out = []
    for ch in data.decode("utf-8", "surrogateescape"):
        o = ord(ch)
        if ch in _SIMPLE:
            out.append(_SIMPLE[ch])
        elif 0xDC80 <= o <= 0xDCFF:  # a byte that is not part of valid UTF-8
            out.append(f"\\x{o - 0xDC00:02x}")
        elif ch.isprintable():
            out.append(ch)
        else:  # control and separator characters would break lines or hide in a diff
            out += [f"\\x{b:02x}" for b in ch.encode("utf-8")]
    if out and out[-1] == " ":
        out[-1] = "\\x20"  # editors strip trailing blanks
    return "".join(out)


def _unescape(text: str) -> bytes:
    out = bytearray()
    for m in _TOKEN.finditer(text):
        esc, plain = m.group(1), m.group(2)
        if esc is not None:
            out += bytes([int(esc[1:], 16)]) if esc[0] == "x" else _SIMPLE_BACK[esc]
        elif plain is not None:
            out += plain.encode("utf-8")
        else:
            raise ValueError(
                f"stray backslash at column {m.start() + 1}; allowed: \\\\ \\n \\r \\t \\xHH"
            )
    return bytes(out)


_SIMPLE_BACK = {"\\": b"\\", "n": b"\n", "r": b"\r", "t": b"\t"}
#: an escape, a run of plain characters, or (no group) a backslash that starts no escape
_TOKEN = re.compile(r"\\(x[0-9a-fA-F]{2}|[\\nrt])|([^\\]+)|\\")


# --------------------------------------------------------------------------- helpers

_FIELDS = (
    "upstream",
    "recorded-at",
    "request",
    "request-body",
    "status",
    "response-at-ms",
    "outcome",
)


def _chunk(line: str, source: str, lineno: int) -> Chunk:
    offset, sep, payload = line.partition(" ")
    if not sep:
        raise CassetteError(
            f"{source}:{lineno}: {line[:60]!r} is not a chunk; allowed: '<offset_ms> t|b <payload>'"
        )
    return Chunk(
        _offset(offset, source, f"line {lineno} offset"),
        _payload(payload, source, f"line {lineno}"),
    )


def _payload(payload: str, source: str, where: str) -> bytes:
    try:
        return decode_payload(payload)
    except ValueError as exc:
        raise CassetteError(f"{source}: {where}: {exc}") from None


def _offset(text: str, source: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise CassetteError(
            f"{source}: {where}: {text!r} is not valid; allowed: milliseconds >= 0 (e.g. 12.5)"
        )
    return value


def _int(text: str, source: str, where: str, lo: int, hi: int) -> int:
    if not text.isdigit() or not lo <= int(text) <= hi:
        raise CassetteError(f"{source}: {where}: {text!r} is not valid; allowed: {lo}..{hi}")
    return int(text)


def _ms(value: float) -> str:
    return f"{value:.3f}"


def _one_line(text: str) -> str:
    # header values never hold line breaks after h11, but a cassette must stay line-based
    return text.replace("\r", " ").replace("\n", " ")
