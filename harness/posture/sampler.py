"""Sample a target's client-socket posture while a case runs, at the moments that matter.

The fault server calls :meth:`PostureSampler.notify` (through its timeline watch) when
it has read a request -- by then the client has set every option it sets at connect
time, which it may not have at ``accepted`` (httpx sets its ``socket_options`` just
after ``connect`` returns) -- and when a fault fires (the connection is now held open
or cut). The runner calls :meth:`PostureSampler.sample` once more at the end of the
case, before it reads leaks or kills a hung child: the held connection as it is after
the wait (keepalive timer, probes, retransmissions). The reads happen on the
sampler's own thread (a read walks /proc: milliseconds), never on the server's loop;
the thread blocks on its queue, nothing polls.

Each socket is one connection, numbered in the order first seen (where the target
talks to the fault server directly this is the server's own accept order too). A
socket that closed between samples keeps its last sample.

Not here: reading (``harness.posture.reader``) or judging (``harness.contract.dead_peer``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import queue
import threading
import time
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from harness.posture.facts import SocketPosture
from harness.posture.reader import Reading, read_tree

__all__ = [
    "MAX_SAMPLES",
    "SAMPLED_KINDS",
    "Posture",
    "PostureSampler",
    "dial_port",
    "sampling",
]

#: Server timeline kinds that prompt a sample.
SAMPLED_KINDS = ("request_read", "fault")
#: A bound on the reads of one case (a retry storm must not make the runner walk /proc
#: hundreds of times).
MAX_SAMPLES = 24

_STOP = object()


@dataclass(frozen=True)
class Posture:
    """The posture of one case: each connection's newest sample; when nothing could be
    read at all, ``readable`` False and ``reason`` says why."""

    connections: tuple[SocketPosture, ...] = ()
    readable: bool = True
    reason: str = ""

    def to_list(self) -> list[dict[str, Any]]:
        return [c.to_dict() for c in self.connections]


class PostureSampler:
    """Samples ``pid``'s tree's sockets to ``dial_ports``; see the module docstring."""

    def __init__(
        self,
        pid: int,
        *,
        dial_ports: Collection[int],
        reader: Callable[..., Reading] = read_tree,
        max_samples: int = MAX_SAMPLES,
        also: Callable[[], None] | None = None,
    ) -> None:
        self.pid = pid
        self.dial_ports = tuple(dial_ports)
        self._reader = reader
        self._max = max_samples
        self._also = also  # read beside each sample, at the same moments (the run queue)
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._by_inode: dict[int, SocketPosture] = {}
        self._samples = 0
        self._reason = ""
        self._readable = True
        self._thread: threading.Thread | None = None

    def start(self) -> PostureSampler:
        self._thread = threading.Thread(target=self._run, name=f"posture:{self.pid}", daemon=True)
        self._thread.start()
        return self

    def notify(self, conn: int, kind: str) -> None:
        """Ask for a sample (any thread; returns at once)."""
        self._queue.put(kind)

    def sample(self, why: str) -> None:
        """Take a sample now, in the caller's thread (not counted against the bound)."""
        self._take(why, bounded=False)

    def close(self) -> Posture:
        """Stop the thread (after the samples already asked for) and return the posture."""
        if self._thread is not None:
            self._queue.put(_STOP)
            self._thread.join()
            self._thread = None
        return self.result()

    def result(self) -> Posture:
        with self._lock:
            conns = tuple(self._by_inode.values())
            return Posture(
                connections=conns, readable=self._readable or bool(conns), reason=self._reason
            )

    # ------------------------------------------------------------------ thread

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            whys = [item]
            with contextlib.suppress(queue.Empty):  # one read serves every queued ask
                while True:
                    whys.append(self._queue.get_nowait())
            asked = [str(w) for w in whys if w is not _STOP]
            if asked:
                self._take(*dict.fromkeys(asked))
            if any(w is _STOP for w in whys):
                return

    def _take(self, *whys: str, bounded: bool = True) -> None:
        with self._lock:
            if bounded and self._samples >= self._max:
                return
            self._samples += bounded
        if self._also is not None:
            self._also()
        began = time.monotonic()  # on the server's clock: tie() compares it with heads
        reading = self._reader(self.pid, remote_ports=self.dial_ports)
        with self._lock:
            if not reading.readable:
                self._readable, self._reason = False, reading.reason
                return
            for found in reading.sockets:
                read = found.posture
                if read.source == "getsockopt":
                    read = dataclasses.replace(read, read_t=began)
                self._merge(found.inode, read, whys)

    def _merge(self, inode: int, new: SocketPosture, whys: tuple[str, ...]) -> None:
        old = self._by_inode.get(inode)
        at = tuple(dict.fromkeys((*(old.sampled_at if old else ()), *whys)))
        if old is None:
            conn = len(self._by_inode) + 1
            self._by_inode[inode] = dataclasses.replace(new, conn=conn, sampled_at=at)
            return
        kernel = {
            k: getattr(new, k)
            for k in ("state", "timer", "timer_s", "retransmits", "probes", "tx_queue", "rx_queue")
        }
        if new.source != "getsockopt" and old.source == "getsockopt":
            # The options read earlier stay; only the kernel's view is newer.
            self._by_inode[inode] = dataclasses.replace(old, sampled_at=at, **kernel)
        else:
            self._by_inode[inode] = dataclasses.replace(new, conn=old.conn, sampled_at=at)


def dial_port(base_url: str) -> int:
    """The port a target is told to dial (the scheme's default when the URL has none)."""
    parts = urlsplit(base_url)
    return parts.port or (443 if parts.scheme == "https" else 80)


@contextlib.contextmanager
def sampling(
    pid: int, server: Any, base_url: str, *, also: Callable[[], None] | None = None
) -> Iterator[PostureSampler]:
    """A running sampler for ``pid``, prompted by ``server``'s timeline while inside;
    ``also`` runs at each of its samples (what else the moment should record)."""
    sampler = PostureSampler(pid, dial_ports=(dial_port(base_url),), also=also).start()
    watch = getattr(server, "watch", None)
    if watch is not None:
        watch(SAMPLED_KINDS, sampler.notify)
    try:
        yield sampler
    finally:
        if watch is not None:
            watch((), None)
        sampler.close()
