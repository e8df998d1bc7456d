"""The parent side of the target protocol: start a child, feed it a job, read its result.

:class:`TargetProcess` wraps one ``python -m harness.targets.runtime.child NAME`` process.
Every wait takes an absolute ``time.monotonic()`` deadline and blocks in ``select`` on
the child's stdout, so a hung child costs nothing while the runner waits for it and is
stopped with SIGKILL at the runner's ceiling.

Not here: the protocol's child side (``harness.targets.runtime.child``) or outcomes.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.environment import read_environment, scrubbed
from harness.targets import load_target
from harness.targets.runtime.forking import ForkedProcess, fork_child
from harness.targets.runtime.preflight import child_python, with_python

__all__ = ["ChildFailed", "TargetProcess"]

_PACKAGE_ROOT = str(Path(__file__).resolve().parents[3])


class ChildFailed(RuntimeError):
    """The child died or broke the protocol; carries the tail of its stderr."""


class TargetProcess:
    """One target child. Use :meth:`spawn`, then ``wait_ready``, ``run``, ``wait_result``."""

    def __init__(
        self, target: str, popen: subprocess.Popen[bytes] | ForkedProcess, stderr_file: Any
    ) -> None:
        self.target = target
        self._popen = popen
        self._stderr = stderr_file
        self._buffer = b""
        self._selector = selectors.DefaultSelector()
        assert popen.stdout is not None
        self._selector.register(popen.stdout, selectors.EVENT_READ)
        self.ready_t: float | None = None
        #: "ready" read and no job sent since: a second wait_ready returns at once.
        self._is_ready = False

    @classmethod
    def spawn(
        cls,
        target: str,
        *,
        environ: Mapping[str, str],
        extra_env: Mapping[str, str] | None = None,
        command_prefix: Sequence[str] = (),
    ) -> TargetProcess:
        """Start the child for ``target`` with a scrubbed copy of ``environ`` plus ``extra_env``.

        ``command_prefix`` runs it through e.g. ``ip netns exec NS`` (which execs in place,
        so the pid is still the target's). Without one, a target that can be copied is
        forked from a warm server of its command and environment (``forking``)."""
        try:
            target_cls = load_target(target)
            python = read_environment(environ).target_python
            if python is not None and child_python(target_cls, target, python) == python:
                target_cls = with_python(target_cls, python)
            command = target_cls.command()
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"target {target!r} cannot be loaded: {exc}") from exc
        env = scrubbed(environ)
        env.update(extra_env or {})
        env["PYTHONUNBUFFERED"] = "1"
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
        stderr_file = tempfile.TemporaryFile()
        if not command_prefix and target_cls.forkable and read_environment(environ).fork_children:

            def start_server(pass_fds: Sequence[int]) -> TargetProcess:
                return cls._start(target, command, env, tempfile.TemporaryFile(), pass_fds)

            forked = fork_child(command, env, stderr_file, start_server)
            if forked is not None:
                return cls(target, forked, stderr_file)
        return cls._start(target, [*command_prefix, *command], env, stderr_file, ())

    @classmethod
    def _start(
        cls,
        target: str,
        command: Sequence[str],
        env: Mapping[str, str],
        stderr_file: Any,
        pass_fds: Sequence[int],
    ) -> TargetProcess:
        popen = subprocess.Popen(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr_file,
            env=dict(env),
            close_fds=True,
            pass_fds=tuple(pass_fds),
        )
        return cls(target, popen, stderr_file)

    def send_command(self, message: Mapping[str, Any]) -> None:
        """Write one command line to the child (``run`` has :meth:`run`)."""
        self._is_ready = False
        self._write(message)

    @property
    def pid(self) -> int:
        return self._popen.pid

    def wait_ready(self, deadline: float) -> None:
        if self._is_ready:
            return
        msg = self._expect(("ready",), deadline, what="ready")
        self.ready_t = float(msg["t"])
        self._is_ready = True

    def run(self, job: Mapping[str, Any]) -> None:
        self.send_command({"cmd": "run", "job": dict(job)})

    def wait_started(self, deadline: float) -> dict[str, Any]:
        """The ``started`` message, or an early ``result`` (a skipped job)."""
        return self._expect(("started", "result"), deadline, what="started")

    def wait_result(self, deadline: float) -> dict[str, Any] | None:
        """The ``result`` message, or None if ``deadline`` passed first (the call hung)."""
        try:
            return self._expect(("result",), deadline, what="result", timeout_ok=True)
        except TimeoutError:
            return None

    def finish(self, deadline: float) -> None:
        """Tell the child to exit and reap it; SIGKILL if it does not go by ``deadline``."""
        try:
            self._write({"cmd": "exit"})
        except ChildFailed:
            pass  # already gone: reaping below is all that is left
        try:
            self._popen.wait(timeout=max(deadline - time.monotonic(), 0.0))
        except subprocess.TimeoutExpired:
            self.kill()
        self._cleanup()

    def dump_stacks(self, *, wait_s: float = 0.2) -> str:
        """Ask a live child for every thread's stack (SIGUSR1) and return what it printed."""
        if self._popen.poll() is not None:
            return ""
        before = len(self.stderr_tail(1 << 20))
        os.kill(self._popen.pid, signal.SIGUSR1)
        time.sleep(wait_s)  # faulthandler writes from a signal handler: no event to wait on
        return self.stderr_tail(1 << 20)[before:]

    def kill(self) -> None:
        """SIGKILL and reap: the runner's outer ceiling."""
        if self._popen.poll() is None:
            self._popen.kill()
        self._popen.wait()
        self._cleanup()

    def stderr_tail(self, limit: int = 2000) -> str:
        try:
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(size - limit, 0))
            return self._stderr.read().decode("utf-8", "replace")
        except (ValueError, OSError):
            return ""

    # ----------------------------------------------------------------- helpers

    def _write(self, message: Mapping[str, Any]) -> None:
        assert self._popen.stdin is not None
        try:
            self._popen.stdin.write((json.dumps(message) + "\n").encode())
            self._popen.stdin.flush()
        except (BrokenPipeError, ValueError, OSError) as exc:
            raise ChildFailed(f"{self.target} child is gone: {self.stderr_tail()}") from exc

    def _expect(
        self, events: tuple[str, ...], deadline: float, *, what: str, timeout_ok: bool = False
    ) -> dict[str, Any]:
        while True:
            line = self._readline(deadline)
            if line is None:
                if timeout_ok:
                    raise TimeoutError(what)
                self.kill()
                raise ChildFailed(
                    f"{self.target} child sent no {what!r} in time: {self.stderr_tail()}"
                )
            try:
                msg = json.loads(line)
            except json.JSONDecodeError:
                continue  # not protocol: a library wrote to the real stdout fd
            if msg.get("event") == "fatal":
                self.kill()
                raise ChildFailed(
                    f"{self.target} child failed: {msg.get('error')}: {msg.get('message')}"
                )
            if msg.get("event") in events:
                return msg

    def _readline(self, deadline: float) -> bytes | None:
        assert self._popen.stdout is not None
        fd = self._popen.stdout.fileno()
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            if not self._selector.select(remaining):
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                self._popen.wait()
                code = (
                    "not known: forked"
                    if isinstance(self._popen, ForkedProcess)
                    else self._popen.returncode
                )
                raise ChildFailed(f"{self.target} child exited (code {code}): {self.stderr_tail()}")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _cleanup(self) -> None:
        self._selector.close()
        for stream in (self._popen.stdin, self._popen.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass  # broken pipe on a dead child: nothing left to flush
        self._stderr.close()
