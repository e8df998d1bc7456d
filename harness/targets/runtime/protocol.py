"""The child side of the target protocol, written once (see :mod:`harness.targets.base`).

Every target child speaks it: ``harness.targets.runtime.child`` (any :class:`Target` in this
venv) and the ``hermes_driver`` package (hermes-agent's own venv). So this module imports only
the standard library and nothing from ``harness``: the hermes driver loads it by file
path, where the harness package is not importable.

What is fixed here, for every child:

* the events: ``ready`` (pid, t), ``started`` (t), ``call`` (t: the job's next call
  began, sent at once by ``run_calls``), ``result`` (status, t, events,
  events_dropped, details, the status's fields, and ``reuse: false`` when the child
  declines another job), ``fatal`` (the child cannot run);
* how an exception is reported (:func:`describe_exception`): ``error`` (class name, or
  ``Wrapper:Last`` for an error carrying ``attempts``), ``mro`` (class names without
  ``object`` and ``BaseException``), ``message`` (cut at :data:`MAX_MESSAGE_CHARS`),
  ``causes`` (``"Type: message"`` of the ``__cause__``/``__context__`` chain), ``chain``
  (:func:`describe_chain`: the same chain as ``{type, message, via}`` objects, the
  exception itself first);
* the command loop (:func:`serve`) and that the protocol owns the real stdout
  (:func:`claim_stdout`).

Not here: what a well-formed message is (``harness.targets.runtime.wellformed``);
building or running a target (``harness.targets.runtime.child``, the hermes driver) or
the parent side (``harness.targets.runtime.process``).
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import sys
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any, TextIO

__all__ = [
    "MAX_CAUSES",
    "MAX_CAUSE_CHARS",
    "MAX_MESSAGE_CHARS",
    "STATUSES",
    "claim_stdout",
    "describe_chain",
    "describe_exception",
    "fatal",
    "mro_names",
    "send",
    "serve",
    "unforkable",
]

#: Error messages are cut here: enough to recognise, never a whole response body.
MAX_MESSAGE_CHARS = 500
#: How much of an exception's cause chain is reported, and how much of each message.
MAX_CAUSES = 5
MAX_CAUSE_CHARS = 200
#: The protocol channel's descriptor (:func:`claim_stdout`), which a forked child
#: rewires to its own stdout.
_PROTO_FD = [1]
#: A result's ``status`` values.
STATUSES = ("returned", "raised", "skipped", "not_applicable")
#: Attributes of the reference client's errors carried into a raised result.
_ERROR_FIELDS = ("deadline", "attempt", "elapsed_s", "status_code")

#: ``handle(job, started)`` runs one job: it calls ``started()`` just before the call and
#: returns the result's fields (``status`` and the status's own; ``t``, ``events``,
#: ``events_dropped`` and ``details`` are filled in when missing).
Handler = Callable[[dict[str, Any], Callable[[], None]], dict[str, Any]]


def claim_stdout() -> TextIO:
    """The real stdout as the protocol's channel; fd 1 then points at stderr, so whatever
    the client prints (Python or C level) never breaks a protocol line."""
    sys.stdout.flush()
    _PROTO_FD[0] = os.dup(1)
    proto = os.fdopen(_PROTO_FD[0], "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    return proto


def send(proto: TextIO, message: Mapping[str, Any]) -> None:
    """Write one protocol line and flush it."""
    proto.write(json.dumps(message, default=str) + "\n")
    proto.flush()


def fatal(proto: TextIO, exc: BaseException | None = None, *, message: str = "") -> None:
    """Say the child cannot run (a broken target, a bad command line)."""
    send(proto, {"event": "fatal", **(describe_exception(exc) if exc else {"message": message})})


def serve(
    proto: TextIO,
    stdin: TextIO,
    handle: Handler,
    *,
    reuse: bool,
    before_fork: Callable[[], None] = lambda: None,
    after_fork: Callable[[], None] = lambda: None,
) -> int:
    """The command loop: ``ready``, a ``run`` command, ``result``; then ``ready`` again and
    the next command when ``reuse``, else wait for ``exit`` (the runner reads the child's
    leaks meanwhile). A handler declines reuse after one job by putting ``"reuse": False``
    in its report: the result carries it (the runner then sends ``exit``, never another
    job) and the child waits for ``exit``. Returns the exit status (0).

    Before each job the heap the child has so far is collected and frozen
    (``gc.freeze``): a full collection during a job then scans only that job's objects.
    Unfrozen, a warm child's ~10^5 objects (the client's imports) made the full
    collection that a reused child reaches every few jobs take 0.5-0.65 s of wall time
    on a loaded machine -- longer than a 0.25 s scaled first-byte deadline, which then
    fired with the reply already in the socket. The first freeze is before ``ready``
    (warm-up time); later ones after the ``run`` command and before ``started``, so the
    garbage of the previous job still holds its descriptors when the leaks are read.

    From the ``run`` command until the next command arrives the automatic collector is
    off (explicit collections, as the freeze's, still run): whether a socket a client
    dropped without closing was still open when the leaks were read must not depend on
    whether the job's allocations happened to cross a collection threshold. With it on,
    hermes-agent's Messages cases showed two such sockets in one run and none in the
    next (2026-12-04: ``messages_healthy_stream`` and five more flipped ``no_leaks``
    between two runs of one build; with a forced collection after each job, none held a
    socket). Off, a socket only the garbage holds is counted every time.

    Told to become a fork server, the child first calls ``before_fork`` (the target's
    ``Target.before_fork``); each forked copy calls ``after_fork`` before its ``ready``."""
    _freeze_heap()
    try:
        while True:
            send(proto, {"event": "ready", "pid": os.getpid(), "t": time.monotonic()})
            line = stdin.readline()
            if not line:
                return 0
            message = json.loads(line)
            gc.enable()  # the last job's leaks have been read
            if message.get("cmd") == "fork_server":
                # returns only in a forked child, wired to its own pipes (or here on a refusal)
                running = _thread_ids()
                before_fork()
                if not _fork_server(int(message["fd"]), stopped=running - _thread_ids()):
                    return 0
                stdin = os.fdopen(0, "r", encoding="utf-8", closefd=False)
                after_fork()
                _freeze_heap()
                continue
            if message.get("cmd") != "run":
                return 0
            _freeze_heap()
            gc.disable()  # until the next command: the leaks are read meanwhile (see above)
            report = handle(
                message["job"], lambda: send(proto, {"event": "started", "t": time.monotonic()})
            )
            send(proto, {"event": "result", **_complete(report)})
            if not reuse or report.get("reuse") is False:
                stdin.readline()  # "exit" or EOF
                return 0
    finally:
        gc.enable()  # back on for an in-process caller (a test)


def _thread_ids() -> set[int]:
    import threading  # noqa: PLC0415

    return {t.native_id for t in threading.enumerate() if t.native_id is not None}


def _freeze_heap() -> None:
    gc.collect()
    gc.freeze()


def _fork_server(fd: int, *, stopped: Collection[int] = ()) -> bool:
    """Become a fork server on the Unix socket ``fd`` (the ``fork_server`` command).

    A child at its first ``ready`` has paid its start-up (imports, warm-up: ~1.7 s of CPU
    for an SDK client) and holds nothing a copy could share by mistake. Each ``fork``
    message carries four descriptors (the new child's stdin, stdout, stderr and a status
    pipe); the forked copy puts the first three where a started child has its own and
    returns True into :func:`serve`, which says ``ready`` as any child would. The server
    answers ``{"pid": N}``; at ``SIGCHLD`` it reaps the child and writes its exit code
    (negative: a signal) into its status pipe: the runner, not its parent, learns a
    segfault only so. A child that cannot be copied safely (another thread, an open
    socket or event descriptor: :func:`unforkable`) says why and the server ends; so
    does the server when the runner closes its end. ``stopped``: the OS thread ids of the
    threads ``before_fork`` joined. Returns False in the server."""
    import signal  # noqa: PLC0415 - only a fork server needs these
    import socket  # noqa: PLC0415

    sock = socket.socket(fileno=fd)
    problem = unforkable(allowed={fd}, stopped=stopped)
    sock.send(json.dumps({"fork_server": os.getpid(), "problem": problem}).encode())
    if problem is not None:
        sock.close()
        return False
    statuses: dict[int, int] = {}  # forked pid -> its status pipe's write end

    def reap(_signum: int, _frame: Any) -> None:
        with contextlib.suppress(ChildProcessError):  # none left
            while (found := os.waitpid(-1, os.WNOHANG))[0]:
                if (status_fd := statuses.pop(found[0], None)) is not None:
                    with contextlib.suppress(OSError):  # the runner stopped asking
                        os.write(status_fd, str(os.waitstatus_to_exitcode(found[1])).encode())
                    os.close(status_fd)

    signal.signal(signal.SIGCHLD, reap)
    while True:
        try:
            data, fds, _flags, _addr = socket.recv_fds(sock, 4096, 4)
        except OSError:
            data, fds = b"", []
        if not data or len(fds) != 4:
            for extra in fds:
                os.close(extra)
            sock.close()
            return False
        # blocked until the pid is in ``statuses``: a child that exits at once is known
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
            sock.close()
            child_stdin, child_stdout, child_stderr, _status = fds
            os.dup2(child_stdin, 0)
            os.dup2(child_stderr, 2)
            os.dup2(child_stderr, 1)  # as claim_stdout left it: prints go to stderr
            os.dup2(child_stdout, _PROTO_FD[0])
            for extra in [*fds, *statuses.values()]:  # its siblings' status pipes too
                os.close(extra)
            return True
        statuses[pid] = fds[3]
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
        for extra in fds[:3]:
            os.close(extra)
        sock.send(json.dumps({"pid": pid}).encode())


def unforkable(*, allowed: Collection[int] = (), stopped: Collection[int] = ()) -> str | None:
    """Why a copy of this process (``os.fork``) would not be a clean child, or None: only
    the main thread runs, and every open descriptor is a file, a pipe of the protocol or
    in ``allowed`` -- a socket, epoll or event descriptor would be shared with the copy.

    ``stopped`` names the OS threads of Python threads that were joined just now: on
    Python < 3.13 ``Thread.join`` returns when the thread's interpreter state is gone,
    before its OS thread has left the kernel's task list (measured: 1,251 of 2,000 checks
    right after a join still listed it). Such a thread runs no Python code and holds no
    lock a copy keeps (CPython and glibc reset theirs in the child), so it is not counted."""
    import threading  # noqa: PLC0415

    if threading.active_count() > 1:
        names = ", ".join(t.name for t in threading.enumerate() if t is not threading.main_thread())
        return f"threads besides the main one: {names}"
    tasks = f"/proc/{os.getpid()}/task"
    others = _foreign_tasks(os.listdir(tasks), os.getpid(), stopped) if os.path.isdir(tasks) else 0
    if others:
        return f"{others + 1} OS threads ({others} not started by threading)"
    fd_dir = f"/proc/{os.getpid()}/fd"
    if not os.path.isdir(fd_dir):
        return "no /proc: cannot list the open descriptors"
    ours = {0, 1, 2, _PROTO_FD[0], *allowed}
    for name in os.listdir(fd_dir):
        fd = int(name)
        try:
            what = os.readlink(f"{fd_dir}/{name}")
        except OSError:
            continue  # the listing's own descriptor, closed by now
        if fd in ours or what.startswith("/"):
            continue
        return f"descriptor {fd} is {what}"
    return None


def _foreign_tasks(tasks: Collection[str], main: int, stopped: Collection[int]) -> int:
    """How many of the task ids listed (``/proc/PID/task``) are threads other than the
    main one and not among ``stopped``."""
    return sum(1 for tid in tasks if int(tid) != main and int(tid) not in stopped)


def describe_exception(exc: BaseException) -> dict[str, Any]:
    """Class name, MRO names, message, cause chain and the reference client's fields."""
    mro = mro_names(exc)
    name = type(exc).__name__
    causes: list[str] = []
    inner = exc.__cause__ or exc.__context__
    while inner is not None and len(causes) < MAX_CAUSES:
        causes.append(f"{type(inner).__name__}: {str(inner)[:MAX_CAUSE_CHARS]}")
        inner = inner.__cause__ or inner.__context__
    attempts = getattr(exc, "attempts", None)
    attempts = list(attempts) if isinstance(attempts, list | tuple) else None
    if attempts and isinstance(attempts[-1], BaseException):
        # RetriesExhausted: the last attempt's error says what actually went wrong, and a
        # scenario may expect it ("error:StreamIdleTimeout") or the wrapper.
        last = attempts[-1]
        name = f"{name}:{type(last).__name__}"
        mro += [n for n in mro_names(last) if n not in mro]
    out: dict[str, Any] = {
        "error": name,
        "mro": mro,
        "message": str(exc)[:MAX_MESSAGE_CHARS],
        "causes": causes,
        "chain": describe_chain(exc),
    }
    for attr in _ERROR_FIELDS:
        value = getattr(exc, attr, None)
        if value is None and attr == "deadline" and attempts:
            value = getattr(attempts[-1], "deadline", None)
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            out[attr] = value
    if attempts is not None:
        out["attempt_errors"] = [type(a).__name__ for a in attempts]
    return out


def describe_chain(exc: BaseException) -> list[dict[str, str]]:
    """``exc`` and what it came from: ``{"type", "message", "via"}`` per exception, ``via``
    ``raised`` (``exc`` itself), ``cause`` (``raise ... from``), ``context`` (raised while
    handling) or ``last attempt`` (a retrying error's final attempt, and its own chain).
    Bounded: at most :data:`MAX_CAUSES` after ``exc``, messages cut at
    :data:`MAX_CAUSE_CHARS`, each exception once (a chain can loop)."""
    out: list[dict[str, str]] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    via = "raised"
    while current is not None and id(current) not in seen and len(out) <= MAX_CAUSES:
        seen.add(id(current))
        out.append(
            {"type": type(current).__name__, "message": str(current)[:MAX_CAUSE_CHARS], "via": via}
        )
        attempts = getattr(current, "attempts", None)
        last = attempts[-1] if isinstance(attempts, list | tuple) and attempts else None
        if current.__cause__ is not None:
            current, via = current.__cause__, "cause"
        elif current.__context__ is not None and not current.__suppress_context__:
            current, via = current.__context__, "context"
        elif isinstance(last, BaseException):
            current, via = last, "last attempt"
        else:
            current = None
    return out


def mro_names(exc: BaseException) -> list[str]:
    """``type(exc).__mro__`` as names, without the two bases every exception has."""
    return [c.__name__ for c in type(exc).__mro__ if c not in (object, BaseException)]


def _complete(report: dict[str, Any]) -> dict[str, Any]:
    report.setdefault("t", time.monotonic())
    report.setdefault("events", [])
    report.setdefault("events_dropped", 0)
    report.setdefault("details", {})
    return report
