"""Target children forked from a warm copy instead of started from scratch.

A target child's start-up is its imports and warm-up: ~1.7 s of CPU for an SDK client,
paid again by every child the runner starts (a hung child is never reused). On a
2-core machine that was most of a catalog run's CPU (39 start-ups, ~66 of its ~70 CPU
seconds). A :class:`ForkServer` is one child, started the usual way, told at its first
``ready`` to become a fork server (``protocol._fork_server``); each further child of
the same command and environment is an ``os.fork`` of it, already warm, wired to pipes
of its own, so it speaks the protocol exactly as a started child does (same imports,
same warm-up, same baseline; nothing it does reaches the server or its siblings).

:func:`fork_child` returns a :class:`ForkedProcess` -- the part of ``subprocess.Popen``
that :class:`~harness.targets.runtime.process.TargetProcess` uses -- or None when forking does
not apply, and the caller starts the child as before: the target says it cannot be
copied (``Target.forkable``, e.g. hermes keeps a thread), the server refused
(``protocol.unforkable``: it names the thread or descriptor), or
``HARNESS_FORK_CHILDREN=0``. The servers live as long as the process that started them
(one per command and environment, shared by every run in it) and end when it does:
their socket closes.

A forked child is not the runner's child: it is waited for through a pidfd, and its
exit status comes from the server that reaped it, through a pipe of its own (a
segfault is named, not "code not known"). Linux only (pidfd, /proc); elsewhere nothing
is forked.

Not here: the server's side (``harness.targets.runtime.protocol``), starting a child
(``harness.targets.runtime.process``).
"""

from __future__ import annotations

import atexit
import collections
import json
import os
import select
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any

__all__ = [
    "DEFAULT_FORK_SERVER_START_S",
    "DEFAULT_MAX_FORK_SERVERS",
    "ForkServer",
    "ForkedProcess",
    "fork_child",
]

#: How long a fork server may take to start and answer (its imports and warm-up, on a
#: loaded machine); a server that misses it is not used.
DEFAULT_FORK_SERVER_START_S = 60.0
#: Fork servers one process keeps (the least recently used one beyond ends): a test
#: session makes many environments, each server holds a warm interpreter's memory.
DEFAULT_MAX_FORK_SERVERS = 8
#: How long one fork may take to be answered.
_FORK_ANSWER_S = 10.0
#: How long the server may take to report a gone child's exit code (it reaps at SIGCHLD).
_STATUS_WAIT_S = 2.0


class ForkedProcess:
    """A forked child as ``TargetProcess`` uses a ``Popen``: pid, pipes, poll, wait, kill.

    ``returncode`` is the exit code the server reaped (negative: the signal), or 0 with
    ``exit_known`` False when the server did not say in :data:`_STATUS_WAIT_S`."""

    def __init__(self, pid: int, stdin: IO[bytes], stdout: IO[bytes], status_fd: int) -> None:
        self.pid = pid
        self.stdin = stdin
        self.stdout = stdout
        self.returncode: int | None = None
        self.exit_known = False
        self._status_fd = status_fd
        try:
            self._pidfd: int | None = os.pidfd_open(pid)
        except ProcessLookupError:  # gone (and reaped) before we looked
            self._pidfd = None
            self._gone()

    def poll(self) -> int | None:
        return self._wait(0.0)

    def wait(self, timeout: float | None = None) -> int:
        code = self._wait(timeout)
        if code is None:
            raise subprocess.TimeoutExpired(f"forked child {self.pid}", timeout or 0.0)
        return code

    def kill(self) -> None:
        if self.returncode is None:
            # the pidfd names this process, never a later one with a reused pid
            assert self._pidfd is not None
            try:
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            except ProcessLookupError:
                pass  # exited meanwhile: wait() sees it

    def _wait(self, timeout: float | None) -> int | None:
        if self.returncode is None and self._pidfd is not None:
            ready, _, _ = select.select([self._pidfd], [], [], timeout)
            if ready:
                os.close(self._pidfd)
                self._pidfd = None
                self._gone()
        return self.returncode

    def _gone(self) -> None:
        """Read the exit code the server writes when it reaps the child (bounded: the
        server may itself be gone, then the pipe ends empty)."""
        data = b""
        deadline = time.monotonic() + _STATUS_WAIT_S
        while (remaining := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([self._status_fd], [], [], remaining)
            chunk = os.read(self._status_fd, 64) if ready else b""
            if not chunk:
                break
            data += chunk
        os.close(self._status_fd)
        text = data.decode("ascii", "replace").strip()
        self.exit_known = text.lstrip("-").isdigit()
        self.returncode = int(text) if self.exit_known else 0


class ForkServer:
    """One fork server: a started child turned server, and its socket (thread-safe)."""

    def __init__(self, sock: socket.socket, process: Any) -> None:
        self._sock = sock
        self._process = process  # the server's own TargetProcess
        self._lock = threading.Lock()

    @classmethod
    def start(
        cls, spawn: Callable[[Sequence[int]], Any], *, deadline: float
    ) -> tuple[ForkServer | None, str | None]:
        """Start a server with ``spawn(pass_fds)`` (a ``TargetProcess``); returns it, or
        None and why it cannot serve."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            process = spawn((theirs.fileno(),))
        finally:
            theirs_fd = theirs.fileno()
            theirs.close()
        try:
            process.wait_ready(deadline)
            process.send_command({"cmd": "fork_server", "fd": theirs_fd})
            hello = _receive(ours, deadline)
        except Exception as exc:  # noqa: BLE001 - any failure: start children as before
            process.kill()
            ours.close()
            return None, f"the fork server did not start: {exc}"
        problem = hello.get("problem") if hello is not None else "it closed its socket"
        if problem is not None:
            process.kill()
            ours.close()
            return None, str(problem)
        return cls(ours, process), None

    def fork(self, stderr: IO[bytes]) -> ForkedProcess:
        """A new child on fresh pipes, its stderr ``stderr``; raises OSError when the
        server is gone."""
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        status_r, status_w = os.pipe()
        try:
            with self._lock:
                socket.send_fds(self._sock, [b"fork"], [in_r, out_w, stderr.fileno(), status_w])
                answer = _receive(self._sock, time.monotonic() + _FORK_ANSWER_S)
        except BaseException:
            for fd in (in_w, out_r, status_r):
                os.close(fd)
            raise
        finally:
            os.close(in_r)
            os.close(out_w)
            os.close(status_w)
        if answer is None or not isinstance(answer.get("pid"), int):
            for fd in (in_w, out_r, status_r):
                os.close(fd)
            raise OSError(f"the fork server answered {answer!r}")
        return ForkedProcess(answer["pid"], os.fdopen(in_w, "wb"), os.fdopen(out_r, "rb"), status_r)

    def close(self) -> None:
        self._sock.close()  # the server's recv sees the end and it exits
        self._process.kill()


def _receive(sock: socket.socket, deadline: float) -> dict[str, Any] | None:
    """One JSON message from ``sock`` by ``deadline`` (TimeoutError), None at its end."""
    remaining = deadline - time.monotonic()
    ready, _, _ = select.select([sock], [], [], max(remaining, 0.0))
    if not ready:
        raise TimeoutError("no answer in time")
    data = sock.recv(4096)
    return json.loads(data) if data else None


class _Servers:
    """This process's fork servers by (command, environment); refusals remembered."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._servers: collections.OrderedDict[Any, ForkServer] = collections.OrderedDict()
        self._refused: dict[Any, str] = {}
        self._starting: dict[Any, threading.Event] = {}
        atexit.register(self.close_all)

    def get(self, key: Any, spawn: Callable[[Sequence[int]], Any]) -> ForkServer | None:
        with self._lock:
            if key in self._servers:
                self._servers.move_to_end(key)
                return self._servers[key]
            if key in self._refused:
                return None
            starting = self._starting.get(key)
            ours = starting is None
            if starting is None:
                starting = self._starting[key] = threading.Event()
        if not ours:
            # another thread is starting this one: its outcome is ours (None: refused, or
            # not done in time -- then this child starts as before)
            starting.wait(DEFAULT_FORK_SERVER_START_S)
            with self._lock:
                return self._servers.get(key)
        server: ForkServer | None = None
        problem: str | None = "its start raised"  # spawn() itself failing (no interpreter)
        try:
            server, problem = ForkServer.start(
                spawn, deadline=time.monotonic() + DEFAULT_FORK_SERVER_START_S
            )
        finally:  # waiters and later children must not wait on a start that raised
            evicted = self._settle(key, server, problem, starting)
        for old in evicted:
            old.close()
        return server

    def _settle(
        self,
        key: Any,
        server: ForkServer | None,
        problem: str | None,
        starting: threading.Event,
    ) -> list[ForkServer]:
        """Record how a start ended and wake its waiters; returns servers to close."""
        evicted: list[ForkServer] = []
        with self._lock:
            if server is not None:
                self._servers[key] = server
                while len(self._servers) > DEFAULT_MAX_FORK_SERVERS:
                    evicted.append(self._servers.popitem(last=False)[1])
            else:
                self._refused[key] = problem or "refused"
            del self._starting[key]
        starting.set()
        return evicted

    def drop(self, key: Any) -> None:
        with self._lock:
            server = self._servers.pop(key, None)
        if server is not None:
            server.close()

    def close_all(self) -> None:
        with self._lock:
            servers = list(self._servers.values())
            self._servers.clear()
        for server in servers:
            server.close()


SERVERS = _Servers()


def fork_child(
    command: Sequence[str],
    env: Mapping[str, str],
    stderr: IO[bytes],
    spawn: Callable[[Sequence[int]], Any],
) -> ForkedProcess | None:
    """A child of ``command`` in ``env`` forked from this process's server for them
    (started with ``spawn(pass_fds)`` on first use), or None: start it as before."""
    if not hasattr(os, "pidfd_open"):
        return None
    key = (tuple(command), tuple(sorted(env.items())))
    server = SERVERS.get(key, spawn)
    if server is None:
        return None
    try:
        return server.fork(stderr)
    except OSError:  # the server died: the next child starts a new one
        SERVERS.drop(key)
        return None
