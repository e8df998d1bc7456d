"""Cassettes as the fault server's reply source: byte-exact replay with faults.

:class:`ReplaySource` plugs into the fault server (``FaultServer(reply_source=...)``,
``harness serve --cassette FILE``). Each request is answered from the cassette
recorded for its path (one cassette answers every path; several for one path answer
its attempts in turn, cycling): the recorded status and headers after the recorded
first-response delay, then the recorded chunks, chunk for chunk, each due at
``t0 + offset_ms * time_scale`` against the absolute clock (``t0``: request read), so
pauses are replayed without drift. The script's rules fire as on synthetic replies:
``event:N`` / ``bytes:N`` count the recorded stream's SSE events and bytes
(:mod:`harness.record.cursor`), ``accept``/``request`` faults are the server's.

A request whose path has no cassette gets a 404 naming the recorded paths.

Not here: the cassette format (``cassette.py``), the writer (``writer.py``).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import h11

from harness.record.cassette import Cassette, read_cassettes
from harness.record.cursor import StreamCursor
from harness.record.writer import ResponseHead, write_stream
from harness.server.apis import error_body
from harness.server.wire import Exchange, write_simple

__all__ = ["ReplaySource", "load_replay_source", "replay_length"]


class ReplaySource:
    """Reply source answering from cassettes; see the module docstring."""

    def __init__(self, cassettes: Sequence[Cassette], *, time_scale: float = 1.0) -> None:
        if not cassettes:
            raise ValueError("cassettes: none given; allowed: one or more cassettes")
        if not time_scale > 0:
            raise ValueError(f"time_scale: {time_scale!r} is not valid; allowed: a number > 0")
        self.cassettes = tuple(cassettes)
        self.time_scale = time_scale
        self._turns: dict[str, itertools.cycle[Cassette]] = {}

    def pick(self, path: str) -> Cassette | None:
        """The cassette answering the next request to ``path``, or None."""
        if path not in self._turns:
            mine = [c for c in self.cassettes if c.path == path]
            if not mine and len(self.cassettes) == 1:
                mine = list(self.cassettes)
            if not mine:
                return None
            self._turns[path] = itertools.cycle(mine)
        return next(self._turns[path])

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
                truncate=ex.fault is not None and ex.fault.action.name == "truncate",
            )
        return await write_stream(
            ex,
            ResponseHead(cassette.status, cassette.response_headers),
            _due(cassette, t0, k),
            declared=declared,
        )


def load_replay_source(paths: Sequence[str | Path], *, time_scale: float = 1.0) -> ReplaySource:
    """Read cassette files and directories; CassetteError (a ValueError) names the file."""
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


async def _due(
    cassette: Cassette, t0: float, k: float
) -> AsyncIterator[tuple[float | None, bytes]]:
    for chunk in cassette.chunks:
        yield t0 + chunk.offset_ms * k, chunk.data
