"""Cassettes as the fault server's reply source: byte-exact replay with faults.

:class:`ReplaySource` plugs into the fault server (``FaultServer(reply_source=...)``,
``harness serve --cassette FILE``). Each request is answered from the cassette
recorded for its path (one cassette answers every path; several for one path answer
its attempts in turn, cycling): the recorded status and headers after the recorded
first-response delay, then the recorded chunks, chunk for chunk, each due at
``t0 + offset_ms * time_scale`` against the absolute clock (``t0``: request read), so
pauses are replayed without drift. The script's rules fire as on synthetic replies:
``event:N`` / ``bytes:N`` count the recorded stream's SSE events and bytes
(:mod:`harness.record.cursor`), ``accept``/``request`` faults are the server's; the
payload faults edit the recorded events (:mod:`harness.record.edits`).

A request whose path has no cassette gets a 404 naming the recorded paths.

Not here: the cassette format (``cassette.py``), the writer (``writer.py``).
"""

from __future__ import annotations

import asyncio
import collections
import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import h11

from harness.apis import API_BY_PATH
from harness.faults import FaultScript
from harness.record.cassette import Cassette, read_cassettes
from harness.record.cursor import StreamCursor
from harness.record.edits import check_script
from harness.record.writer import ResponseHead, write_stream
from harness.server.apis import error_body
from harness.server.wire import Exchange, write_simple
from harness.sse import Event, SSEDecoder

__all__ = ["ReplaySource", "load_replay_source", "replay_length", "reply_text"]


class ReplaySource:
    """Reply source answering from cassettes; see the module docstring."""

    def __init__(self, cassettes: Sequence[Cassette], *, time_scale: float = 1.0) -> None:
        if not cassettes:
            raise ValueError("cassettes: none given; allowed: one or more cassettes")
        if not time_scale > 0:
            raise ValueError(f"time_scale: {time_scale!r} is not valid; allowed: a number > 0")
        self.cassettes = tuple(cassettes)
        self.time_scale = time_scale
        self._turns: dict[str, _Turns] = {}

    def pick(self, path: str) -> Cassette | None:
        """The cassette answering the next request to ``path``, or None."""
        turns = self._turns_for(path)
        return None if turns is None else turns.popleft_and_cycle()

    def expected_text(self, path: str) -> str:
        """The reply text of the cassette the next request to ``path`` gets (the
        runner checks the client's text against it); "" when unknown."""
        turns = self._turns_for(path)
        return "" if turns is None else reply_text(turns.peek())

    def _turns_for(self, path: str) -> _Turns | None:
        if path not in self._turns:
            mine = [c for c in self.cassettes if c.path == path]
            if not mine and len(self.cassettes) == 1:
                mine = list(self.cassettes)
            if not mine:
                return None
            self._turns[path] = _Turns(mine)
        return self._turns[path]

    async def aclose(self) -> None:
        """Nothing to release (the fault server calls this on shutdown)."""

    async def reply(self, ex: Exchange, request: h11.Request, body: bytes) -> bool:
        target = request.target.decode("latin-1")
        cassette = self.pick(target.split("?", 1)[0])
        if cassette is None:
            paths = ", ".join(sorted({c.path for c in self.cassettes}))
            message = f"no cassette recorded for {target.split('?', 1)[0]}; recorded: {paths}"
            await write_simple(
                ex.conn,
                404,
                error_body(None, 404, message),
                keep_alive=ex.keep_alive,
                record=ex.record,
            )
            return ex.keep_alive
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        k = self.time_scale / 1000.0
        if not await ex.conn.sleep_until(t0 + cassette.response_at_ms * k):
            return False
        declared = None
        if ex.script.framing == "content-length":
            declared = replay_length(
                cassette,
                ex.fault.phase if ex.fault is not None else None,
                truncate=ex.fault is not None and ex.fault.action.ends_body_cleanly,
            )
        return await write_stream(
            ex,
            ResponseHead(cassette.status, cassette.response_headers),
            _due(cassette, t0, k),
            declared=declared,
            api=API_BY_PATH.get(cassette.path),
        )


def load_replay_source(
    paths: Sequence[str | Path], *, time_scale: float = 1.0, script: FaultScript | None = None
) -> ReplaySource:
    """Read cassette files and directories; CassetteError (a ValueError) names the file.
    ``script``, when given, is checked to apply to recorded streams (``check_script``)."""
    if script is not None:
        check_script(script)
    return ReplaySource(read_cassettes(paths), time_scale=time_scale)


def replay_length(cassette: Cassette, phase: object, *, truncate: bool) -> int:
    """The body length a ``content-length`` replay declares (cut short under ``truncate``)."""
    total = sum(len(c.data) for c in cassette.chunks)
    if not truncate or phase is None:
        return total
    if phase.kind == "headers":  # type: ignore[attr-defined]
        return 0
    cursor = StreamCursor(phase)  # type: ignore[arg-type]
    if cursor.fires_at_start:
        return 0
    before = 0
    for chunk in cassette.chunks:
        fed = cursor.feed(chunk.data)
        if fed.cut is not None:
            return before + fed.cut
        before += len(chunk.data)
    return total


def reply_text(cassette: Cassette) -> str:
    """The text a client should assemble from a recorded reply (chat, Responses or
    Messages; streamed or not); "" when the body is none of these."""
    body = cassette.body
    if "event-stream" in (cassette.header("content-type") or ""):
        decoder = SSEDecoder()
        items = decoder.feed(body) + decoder.flush()
        return "".join(_delta_text(i.data) for i in items if isinstance(i, Event))
    try:
        doc = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return ""
    if not isinstance(doc, dict):
        return ""
    if doc.get("choices"):
        return (doc["choices"][0].get("message") or {}).get("content") or ""
    parts = doc.get("output") or [doc]
    return "".join(
        c.get("text", "")
        for p in parts
        if isinstance(p, dict)
        for c in p.get("content") or []
        if isinstance(c, dict) and c.get("type") in ("output_text", "text")
    )


def _delta_text(data: str) -> str:
    try:
        doc = json.loads(data)
    except json.JSONDecodeError:
        return ""  # [DONE] and the like
    if not isinstance(doc, dict):
        return ""
    if doc.get("choices"):
        return (doc["choices"][0].get("delta") or {}).get("content") or ""
    if doc.get("type") == "response.output_text.delta":
        return doc.get("delta") or ""
    if doc.get("type") == "content_block_delta":
        delta = doc.get("delta") or {}
        return delta.get("text") or "" if delta.get("type") == "text_delta" else ""
    return ""


class _Turns:
    """Cassettes for one path, answered in turn, cycling."""

    def __init__(self, cassettes: Sequence[Cassette]) -> None:
        self._queue = collections.deque(cassettes)

    def peek(self) -> Cassette:
        return self._queue[0]

    def popleft_and_cycle(self) -> Cassette:
        self._queue.rotate(-1)
        return self._queue[-1]


async def _due(
    cassette: Cassette, t0: float, k: float
) -> AsyncIterator[tuple[float | None, bytes]]:
    for chunk in cassette.chunks:
        yield t0 + chunk.offset_ms * k, chunk.data
