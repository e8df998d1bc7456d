"""Server-Sent Events: one encoder and one incremental decoder, shared by server and client.

The decoder follows the WHATWG rules that matter on the wire: lines end in ``\\n``,
``\\r\\n`` or ``\\r``; a blank line dispatches an event; ``:`` starts a comment; a
field with no colon has an empty value; one leading space after the colon is
dropped; ``data`` lines are joined with ``\\n``. Bytes may arrive split anywhere,
including inside a UTF-8 sequence or between ``\\r`` and ``\\n``.

Comments are surfaced (as :class:`Comment`) rather than dropped, because "comment
only, no progress" is a fault this project detects.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Comment", "Event", "SSEDecoder", "encode_comment", "encode_event"]


@dataclass(frozen=True)
class Event:
    """One dispatched SSE event."""

    data: str
    event: str | None = None
    id: str | None = None
    retry: int | None = None


@dataclass(frozen=True)
class Comment:
    """One ``:`` comment line (keep-alive traffic, never content)."""

    text: str


def encode_event(data: str, *, event: str | None = None, id: str | None = None) -> bytes:
    """Encode one event; multi-line ``data`` becomes several ``data:`` lines."""
    out = []
    if event is not None:
        _check_line("event", event)
        out.append(f"event: {event}\n")
    if id is not None:
        _check_line("id", id)
        out.append(f"id: {id}\n")
    for line in data.split("\n"):
        out.append(f"data: {line}\n")
    out.append("\n")
    return "".join(out).encode("utf-8")


def encode_comment(text: str = "") -> bytes:
    """Encode one comment line followed by a blank line (so proxies flush it)."""
    _check_line("comment", text)
    return f": {text}\n\n".encode() if text else b":\n\n"


def _check_line(name: str, value: str) -> None:
    if "\n" in value or "\r" in value:
        raise ValueError(f"SSE {name} must be one line, got {value!r}")


class SSEDecoder:
    """Incremental decoder: ``feed(bytes)`` returns the events and comments completed so far."""

    def __init__(self) -> None:
        self._buf = b""
        self._data: list[str] = []
        self._event: str | None = None
        self._id: str | None = None
        self._retry: int | None = None
        self._has_fields = False

    @property
    def idle(self) -> bool:
        """Between events: no partial line buffered and no event half-read (a reader
        that recognises whole events itself may take over from here)."""
        return not self._buf and not self._has_fields and not self._data

    def feed(self, chunk: bytes) -> list[Event | Comment]:
        self._buf = self._buf + chunk if self._buf else chunk
        out: list[Event | Comment] = []
        if b"\r" not in self._buf:
            # Fast path (almost every stream): split on LF in C, and take the two common
            # lines (data, blank) without the general parser.
            *lines, self._buf = self._buf.split(b"\n")
            for raw in lines:
                if not raw:
                    item = self._dispatch() if self._data else self._reset()
                elif raw.startswith(b"data:"):
                    value = raw[6:] if raw.startswith(b"data: ") else raw[5:]
                    self._data.append(value.decode("utf-8", errors="replace"))
                    self._has_fields = True
                    continue
                else:
                    item = self._line(raw.decode("utf-8", errors="replace"))
                if item is not None:
                    out.append(item)
            return out
        while True:
            line, rest = self._take_line(self._buf)
            if line is None:
                break
            self._buf = rest
            item = self._line(line.decode("utf-8", errors="replace"))
            if item is not None:
                out.append(item)
        return out

    def flush(self) -> list[Event | Comment]:
        """End of stream: a trailing line without terminator is processed, but an
        event not followed by a blank line is discarded, as the spec says."""
        out: list[Event | Comment] = []
        if self._buf:
            item = self._line(self._buf.rstrip(b"\r").decode("utf-8", errors="replace"))
            self._buf = b""
            if isinstance(item, Comment):
                out.append(item)
        self._reset()
        return out

    @staticmethod
    def _take_line(buf: bytes) -> tuple[bytes | None, bytes]:
        # bytes.find, not a Python loop over bytes: this runs once per line on every
        # stream the fault proxy relays (a byte loop cost ~35 us per event there)
        lf = buf.find(b"\n")
        cr = buf.find(b"\r", 0, len(buf) if lf == -1 else lf)
        if cr == -1:
            return (None, buf) if lf == -1 else (buf[:lf], buf[lf + 1 :])
        if cr + 1 == len(buf):
            return None, buf  # a lone CR at the end may be half of CRLF
        end = cr + 2 if buf[cr + 1] == 0x0A else cr + 1
        return buf[:cr], buf[end:]

    def _line(self, line: str) -> Event | Comment | None:
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            text = line[1:]
            return Comment(text[1:] if text.startswith(" ") else text)
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._has_fields = True
        elif name == "event":
            self._event = value
            self._has_fields = True
        elif name == "id":
            if "\0" not in value:
                self._id = value
            self._has_fields = True
        elif name == "retry":
            if value.isdigit():
                self._retry = int(value)
            self._has_fields = True
        return None

    def _dispatch(self) -> Event | None:
        if not self._data:
            self._reset()
            return None
        data = self._data[0] if len(self._data) == 1 else "\n".join(self._data)
        ev = Event(data=data, event=self._event, id=self._id, retry=self._retry)
        self._reset()
        return ev

    def _reset(self) -> None:
        self._data = []
        self._event = None
        self._retry = None
        self._has_fields = False
