"""The parent side of the target protocol: start a child, feed it a job, read its result.

:class:`TargetProcess` wraps one ``python -m harness.targets.runtime.child NAME`` process.
Every wait takes an absolute ``time.monotonic()`` deadline and blocks in ``select`` on
the child's stdout, so a hung child costs nothing while the runner waits for it and is
stopped with SIGKILL at the runner's ceiling.

Each child runs in a cgroup of its own where the machine has them (``harness.cgroups``):
stopping it ends every process it started, however detached, and a child the kernel
killed at its memory limit fails as ``TargetResources``, not as a crash.

Not here: the protocol's child side (``harness.targets.runtime.child``) or outcomes.
"""

from __future__ import annotations

import errno
import json
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from typing import Any

from harness.cgroups import ChildGroup, shim
from harness.environment import read_environment, scrubbed
from harness.paths import PROJECT_ROOT
from harness.targets import load_target
from harness.targets.runtime.forking import ForkedProcess, fork_child
from harness.targets.runtime.preflight import child_python, with_python

__all__ = ["ChildFailed", "TargetProcess", "exit_text"]

_PACKAGE_ROOT = str(PROJECT_ROOT)


class ChildFailed(RuntimeError):
    """The child died or broke the protocol; carries the tail of its stderr.

    ``error`` names the failure for the case's report: ``TargetCrashed``, or
    ``TargetResources`` when the kernel killed the child at its memory limit."""

    def __init__(self, message: str, *, error: str = "TargetCrashed") -> None:
        super().__init__(message)
        self.error = error


def exit_text(returncode: int | None, *, known: bool = True) -> str:
    """How a child ended, for a message: ``code 3``, ``killed by SIGSEGV``."""
    if not known or returncode is None:
        return "code not known"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"code {returncode}"


class TargetProcess:
    """One target child. Use :meth:`spawn`, then ``wait_ready``, ``run``, ``wait_result``."""

    def __init__(
        self,
        target: str,
        popen: subprocess.Popen[bytes] | ForkedProcess,
        stderr_file: Any,
        group: ChildGroup | None = None,
    ) -> None:
        self.target = target
        self._popen = popen
        self._stderr = stderr_file
        #: the child's cgroup (None: none on this machine, or a fork server's own process)
        self.group = group
        self._buffer = b""
        self._selector = selectors.DefaultSelector()
        assert popen.stdout is not None
        self._selector.register(popen.stdout, selectors.EVENT_READ)
        self.ready_t: float | None = None
        #: When each of the running job's calls after the first began (its ``call``
        #: events, read as they come: known even if the child is killed before its result).
        self.call_starts: list[float] = []
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
        group = ChildGroup.create(target_cls.memory_max)
        try:
            if (
                not command_prefix
                and target_cls.forkable
                and read_environment(environ).fork_children
            ):

                def start_server(pass_fds: Sequence[int]) -> TargetProcess:
                    return cls._start(target, command, env, tempfile.TemporaryFile(), pass_fds)

                forked = fork_child(command, env, stderr_file, start_server)
                if forked is not None:
                    process = cls(target, forked, stderr_file, group)
                    try:
                        if group is not None:  # before its first job: nothing started yet
                            group.add(forked.pid)
                    except OSError:
                        process.kill()
                        raise
                    return process
            full = [*command_prefix, *command]
            if group is not None:
                # as Popen would: behind the shim a missing program is an exit code 127
                if shutil.which(full[0], path=env.get("PATH")) is None:
                    raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), full[0])
                full = shim(group.procs_files, full)
            return cls._start(target, full, env, stderr_file, (), group)
        except BaseException:
            if group is not None:
                group.end()
            raise

    @classmethod
    def _start(
        cls,
        target: str,
        command: Sequence[str],
        env: Mapping[str, str],
        stderr_file: Any,
        pass_fds: Sequence[int],
        group: ChildGroup | None = None,
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
        return cls(target, popen, stderr_file, group)

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
        self.call_starts = []
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
        self._end_group()  # what it started and left behind goes with it
        self._cleanup()

    def strays(self) -> set[int]:
        """The processes in the child's group besides the child (empty: no group)."""
        return set() if self.group is None else set(self.group.pids()) - {self.pid}

    def oom_kills(self) -> int:
        """Processes of the child's group the kernel killed at its memory limit."""
        return 0 if self.group is None else self.group.oom_kills()

    def dump_stacks(self, *, wait_s: float = 0.2) -> str:
        """Ask a live child for every thread's stack (SIGUSR1) and return what it printed."""
        if self._popen.poll() is not None:
            return ""
        before = len(self.stderr_tail(1 << 20))
        os.kill(self._popen.pid, signal.SIGUSR1)
        time.sleep(wait_s)  # faulthandler writes from a signal handler: no event to wait on
        return self.stderr_tail(1 << 20)[before:]

    def kill(self) -> None:
        """SIGKILL and reap, the child and every process in its group: the runner's
        outer ceiling."""
        self._end_group()
        if self._popen.poll() is None:
            self._popen.kill()
        self._popen.wait()
        self._cleanup()

    def _end_group(self) -> None:
        if self.group is not None:
            self.group.end()

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
            if msg.get("event") == "call":  # the job's next call began (run_calls)
                self.call_starts.append(float(msg["t"]))
                continue
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
                known = not isinstance(self._popen, ForkedProcess) or self._popen.exit_known
                how = exit_text(self._popen.returncode, known=known)
                kills = self.oom_kills()
                if kills and self.group is not None:
                    raise ChildFailed(
                        f"{self.target} child {how}: the kernel killed {kills} process(es) "
                        f"of it at its memory limit ({self.group.memory_max} bytes)",
                        error="TargetResources",
                    )
                raise ChildFailed(f"{self.target} child exited ({how}): {self.stderr_tail()}")
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
