"""Live upstream as the fault server's reply source: the fault proxy and the recorder.

:class:`ProxySource` plugs into the fault server (``FaultServer(reply_source=...)``),
so the server's request loop, rule matching per attempt, ``accept``/``request``-phase
faults (``status``, ``hang``, ``rst``...) and timeline all apply unchanged. For each
request that reaches it, it forwards the request to the :class:`Upstream`, and streams
the upstream's chunks to the client as they arrive through
:func:`harness.record.writer.write_stream`, which parses them into SSE events and fires
the body fault (``event:N``, ``bytes:N``, ``headers``) at the exact point. With a
:class:`CassetteRecorder`, every exchange is also written to a cassette, credentials
removed.

Timeline kinds added to the server's: ``upstream_status`` (detail ``code``,
``after_ms``), ``upstream_error`` (detail ``error``, one redacted line).

Not here: HTTP parsing of the client leg (``harness.server``), the outbound leg
(``upstream.py``), the cassette text (``cassette.py``).
"""

from __future__ import annotations

import asyncio
import datetime
import itertools
import logging
import re
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import h11

from harness.apis import API_BY_PATH
from harness.record.cassette import SUFFIX, Cassette, Chunk, write_cassette
from harness.record.redact import (
    mask_secrets,
    redact_body,
    redact_headers,
    redact_target,
    redact_text,
    secrets_of,
)
from harness.record.upstream import HOP_BY_HOP, Upstream, UpstreamError
from harness.record.writer import ResponseHead, UpstreamBroken, write_stream
from harness.server.apis import error_body
from harness.server.wire import Exchange, write_simple

__all__ = ["CassetteRecorder", "ProxySource"]

log = logging.getLogger(__name__)


class CassetteRecorder:
    """Writes one cassette per exchange into ``out_dir``: ``0001-chat-completions.cassette``."""

    def __init__(self, out_dir: str | Path, *, upstream: str = "") -> None:
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.upstream = upstream
        existing = [
            int(m.group(1)) for p in self.out_dir.glob(f"*{SUFFIX}") if (m := _NUMBER.match(p.name))
        ]
        self._numbers = itertools.count(max(existing, default=0) + 1)
        self._written: list[Path] = []
        self._cond = threading.Condition()

    @property
    def written(self) -> list[Path]:
        with self._cond:
            return list(self._written)

    def save(self, cassette: Cassette) -> Path:
        slug = re.sub(r"[^a-z0-9]+", "-", cassette.path.lower()).strip("-")[-40:] or "root"
        with self._cond:
            path = self.out_dir / f"{next(self._numbers):04d}-{slug}{SUFFIX}"
        write_cassette(path, cassette)
        with self._cond:
            self._written.append(path)
            self._cond.notify_all()
        return path

    def wait_written(self, count: int, *, timeout: float) -> list[Path]:
        """Block until ``count`` cassettes were written (the last one is saved after the
        client got its final byte); TimeoutError names how many were."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self._written) >= count, timeout):
                raise TimeoutError(f"{len(self._written)} of {count} cassettes after {timeout} s")
            return list(self._written)


class ProxySource:
    """Reply source that forwards to a live upstream; see the module docstring."""

    def __init__(self, upstream: Upstream, *, recorder: CassetteRecorder | None = None) -> None:
        self.upstream = upstream
        self.recorder = recorder

    async def aclose(self) -> None:
        await self.upstream.aclose()

    def expected_text(self, path: str) -> str:
        """Unknown before the upstream answers (the fault server's request record)."""
        return ""

    async def reply(self, ex: Exchange, request: h11.Request, body: bytes) -> bool:
        method = request.method.decode("latin-1")
        target = request.target.decode("latin-1")
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers]
        secrets = secrets_of(headers, body)
        tape = _Tape(method, target, headers, body, secrets) if self.recorder else None
        t0 = time.monotonic()
        try:
            async with self.upstream.open(method, target, headers, body) as resp:
                ex.record("upstream_status", code=resp.status, after_ms=_ms(time.monotonic() - t0))
                if tape is not None:
                    tape.response(resp.status, resp.headers, time.monotonic() - t0)
                chunks = _timed(resp.chunks(), t0, tape)
                try:
                    return await write_stream(
                        ex,
                        ResponseHead(resp.status, resp.headers),
                        chunks,
                        api=API_BY_PATH.get(target.split("?", 1)[0]),
                    )
                finally:
                    await chunks.aclose()
        except UpstreamError as exc:
            # before any response byte: answer 502 like a gateway, naming the cause
            message = redact_text(str(exc), secrets)
            ex.record("upstream_error", error=message)
            log.warning("upstream error: %s", message)
            if tape is not None:
                tape.outcome = f"upstream_error: {message}"
            if ex.conn.gone or ex.conn.closing:
                return False
            await write_simple(
                ex.conn,
                502,
                error_body(None, 502, f"harness proxy: upstream failed: {message}"),
                keep_alive=ex.keep_alive,
                record=ex.record,
            )
            return ex.keep_alive
        finally:
            if tape is not None and self.recorder is not None:
                await asyncio.to_thread(self.recorder.save, tape.cassette(self.recorder.upstream))


# --------------------------------------------------------------------------- helpers

_NUMBER = re.compile(r"^(\d+)-")


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


async def _timed(
    chunks: AsyncIterator[tuple[float, bytes]], t0: float, tape: _Tape | None
) -> AsyncIterator[tuple[float | None, bytes]]:
    """Live chunks for the writer (due None: as they come), recorded on the way."""
    try:
        async for at, data in chunks:
            if tape is not None:
                tape.chunks.append(Chunk(_ms(at - t0), data))
            yield None, data
        if tape is not None:
            tape.outcome = "complete"
    except UpstreamError as exc:
        if tape is not None:
            tape.outcome = f"upstream_error: {redact_text(str(exc), tape.secrets)}"
        raise UpstreamBroken(redact_text(str(exc), tape.secrets if tape else ())) from exc


class _Tape:
    """One exchange being recorded."""

    def __init__(
        self,
        method: str,
        target: str,
        headers: list[tuple[str, str]],
        body: bytes,
        secrets: list[str],
    ) -> None:
        self.secrets = secrets
        self.method = method
        self.target = redact_target(target, secrets)
        kept = [(k, v) for k, v in headers if k.lower() not in HOP_BY_HOP]
        self.request_headers = redact_headers(kept, secrets)
        self.request_body = redact_body(body, secrets)
        self.status = 0
        self.response_headers: tuple[tuple[str, str], ...] = ()
        self.response_at_ms = 0.0
        self.chunks: list[Chunk] = []
        self.outcome = "client_gone"
        self.recorded_at = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def response(self, status: int, headers: Any, after_s: float) -> None:
        self.status = status
        self.response_headers = redact_headers(
            [(k, v) for k, v in headers if k != "set-cookie"], self.secrets
        )
        self.response_at_ms = _ms(after_s)

    def cassette(self, upstream: str) -> Cassette:
        datas = mask_secrets([c.data for c in self.chunks], self.secrets)
        chunks = tuple(Chunk(c.offset_ms, d) for c, d in zip(self.chunks, datas, strict=True))
        return Cassette(
            method=self.method,
            target=self.target,
            status=self.status or 502,
            chunks=chunks,
            request_headers=self.request_headers,
            request_body=self.request_body,
            response_headers=self.response_headers,
            response_at_ms=self.response_at_ms,
            upstream=upstream,
            recorded_at=self.recorded_at,
            outcome=self.outcome,
        )
