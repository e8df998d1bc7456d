"""``command:PATH [ARGS...]``: any program, in any language, as a target.

The harness runs ``PATH`` (with ``ARGS``, split as a shell would: ``shlex``) once per call
with the prompt on stdin and this environment (on top of the child's scrubbed one)::

    OPENAI_BASE_URL      the fault server's OpenAI base URL (ends in /v1)
    ANTHROPIC_BASE_URL   the same server without /v1 (what the Anthropic SDKs expect)
    OPENAI_API_KEY, ANTHROPIC_API_KEY   a local test key (never a real secret)
    HARNESS_API          chat | responses | messages: the scenario's API
    HARNESS_STREAM       1 for a streamed call, 0 for one response body
    HARNESS_MODEL        the model name to send
    HARNESS_MAX_TOKENS   set only when the scenario sets it
    HARNESS_TIME_SCALE   the run's time scale
    HARNESS_FIRST_BYTE_S, HARNESS_STREAM_IDLE_S, HARNESS_STALE_CALL_S,
    HARNESS_HARD_CEILING_S, HARNESS_CONNECT_TIMEOUT_S, HARNESS_READ_TIMEOUT_S
                         the scenario's deadlines, scaled to real seconds (absent: off)

stdout is the reply (one trailing newline is dropped), except lines that start with
``HARNESS ``: the line protocol (``harness.targets.clients.command_protocol``) by which
the program reports its error kind (``HARNESS error Kind: message``, raised as class
``Kind``), a deadline of its own (``HARNESS deadline NAME``), its attempts (``HARNESS
attempts N``) and tool calls (``HARNESS tool_call {json}``). Exit status 0 with no error
line is success; any other status (or death by a signal) with no error line raises
:class:`CommandFailed`, whose message is the last line of stderr. A job of several
sequential calls runs the program once per call (a "rebuild" is then free: every call
is a new process, so nothing is pooled between calls).

Which APIs a program speaks is declared in the program itself, anywhere in the file
(a comment in a script, a string constant in a compiled program):
``harness-apis: chat, messages`` (default ``chat``). Scenarios of another API are
``not_applicable`` for it without running.

The process tree is the target's: the program starts in its own session (process
group), this child is a *subreaper* so that whatever the program forks and abandons
stays in the tree, and the runner's leak snapshot covers the whole tree
(:mod:`harness.leaks`). A program that returns while a descendant still holds a socket
shows that socket as a leak. When the runner kills this child at its ceiling, a small
guardian process (started before the leak baseline) sees its pipe close and SIGKILLs
every process group this child started, so nothing outlives the case. A descendant that
leaves its process group (``setsid``) escapes the guardian but not the leak count.

Shipped examples (``harness/targets/examples/``): ``curl_chat.sh`` (curl + jq, no SDK)
and ``node_chat.mjs`` (Node's built-in fetch).

Not here: the child protocol (``harness.targets.runtime.child``), leak counting (``harness.leaks``).
"""

from __future__ import annotations

import ctypes
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import ClassVar

from harness.apis import APIS
from harness.foreground import alive
from harness.replies import render_tool_call
from harness.targets.base import CallResult, EventLog, Job, Target, run_calls
from harness.targets.clients.command_protocol import CommandError, parse_output, timing_env
from harness.targets.prefixes import COMMAND_PREFIX

__all__ = [
    "DEFAULT_APIS",
    "CommandFailed",
    "CommandTarget",
    "declared_apis",
    "load_command_target",
    "program_env",
]

#: What a program that declares nothing is taken to speak.
DEFAULT_APIS: tuple[str, ...] = ("chat",)
#: ``harness-apis:`` is looked for in this much of the file (a compiled program keeps
#: its string constants anywhere in it).
_SCAN_BYTES = 256 << 20
_APIS_LINE = re.compile(rb"harness-apis:\s*([a-z ,]+)")
_PR_SET_CHILD_SUBREAPER = 36
#: The guardian: reads "+PGID" / "-PGID" lines; at EOF (its parent is gone, or is
#: exiting) it SIGKILLs every group still listed. Stdlib only, so it starts fast.
_GUARDIAN = """
import os, signal, sys
print("up", flush=True)
groups = set()
for line in sys.stdin:
    sign, pgid = line[:1], int(line[1:])
    (groups.add if sign == "+" else groups.discard)(pgid)
for pgid in groups:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
"""


class CommandFailed(Exception):
    """The program exited non-zero or was killed by a signal; the message is the last
    line of its stderr (``returncode`` is the status, negative for a signal)."""

    def __init__(self, message: str, *, returncode: int) -> None:
        super().__init__(message)
        self.returncode = returncode


def load_command_target(name: str) -> type[CommandTarget]:
    """The target class for ``command:PATH [ARGS...]``; ValueError names the problem."""
    try:
        argv = shlex.split(name[len(COMMAND_PREFIX) :])
    except ValueError as exc:  # an unbalanced quote
        raise ValueError(f"target {name!r}: {exc}") from None
    if not name.startswith(COMMAND_PREFIX) or not argv:
        raise ValueError(f"target {name!r} is not valid; allowed: command:PATH [ARGS...]")
    path = Path(argv[0]).expanduser()
    if not path.is_file():
        raise ValueError(f"target {name!r}: {path} is not a file")
    if not os.access(path, os.X_OK):
        raise ValueError(f"target {name!r}: {path} is not executable (chmod +x it)")
    apis = declared_apis(path)
    return type(
        "CommandTarget",
        (CommandTarget,),
        {
            "name": name,
            "path": str(path.resolve()),
            "args": tuple(argv[1:]),
            "apis": apis,
            "__module__": __name__,
        },
    )


def declared_apis(path: Path) -> tuple[str, ...]:
    """The APIs the program at ``path`` declares (``harness-apis: ...``), else the default;
    ValueError for a name that is not an API."""
    with open(path, "rb") as f:
        match = _APIS_LINE.search(f.read(_SCAN_BYTES))
    if match is None:
        return DEFAULT_APIS
    names = tuple(n for n in re.split(r"[ ,]+", match.group(1).decode().strip()) if n)
    bad = [n for n in names if n not in APIS]
    if bad or not names:
        raise ValueError(
            f"{path}: harness-apis: {bad[0] if bad else '(empty)'!r} is not an API; "
            f"allowed: {', '.join(APIS)}"
        )
    return names


class CommandTarget(Target):
    """Runs ``path`` once per call; subclassed per path by :func:`load_command_target`."""

    name = COMMAND_PREFIX
    path: ClassVar[str] = ""
    args: ClassVar[tuple[str, ...]] = ()
    apis: ClassVar[tuple[str, ...]] = DEFAULT_APIS
    reusable = True
    forkable = False  # the guardian process started in prepare() is this child's own
    posture_hold = True  # a program may be gone before a sample taken on request_read
    pools_connections = False  # every call is a new process

    def __init__(self) -> None:
        self._guardian: subprocess.Popen[bytes] | None = None

    @classmethod
    def command(cls) -> list[str]:
        # The class is made per path: the child rebuilds it from the name, not an import path.
        return [sys.executable, "-m", "harness.targets.runtime.child", cls.name]

    def prepare(self) -> None:
        # Orphans of the program re-parent to this process, so they stay in the tree the
        # runner counts, and this process can reap them.
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        self._guardian = subprocess.Popen(
            [sys.executable, "-I", "-c", _GUARDIAN],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
        )
        # Wait until it is up: the leak baseline must not catch it half-started.
        assert self._guardian.stdout is not None
        self._guardian.stdout.readline()
        self._guardian.stdout.close()

    def call(self, job: Job, log: EventLog) -> CallResult:
        # no rebuild: every call is a new process of the program
        said: list[int | None] = []

        def once() -> str:
            try:
                text, attempts = self._run_once(job, log)
            except CommandError as exc:  # its count covers the job's earlier calls too
                known = [a for a in said if a is not None]
                if exc.attempt is not None:
                    exc.attempt = exc.attempt + sum(known) if len(known) == len(said) else None
                raise
            said.append(attempts)
            return text

        texts = run_calls(job, log, once, label=f": {Path(self.path).name}")
        # the client's own count only where every call said it
        attempts = None if None in said else sum(a for a in said if a is not None)
        return CallResult(text=texts[-1], texts=tuple(texts), attempts=attempts)

    def _run_once(self, job: Job, log: EventLog) -> tuple[str, int | None]:
        with (
            tempfile.TemporaryFile() as stdin,
            tempfile.TemporaryFile() as stdout,
            tempfile.TemporaryFile() as stderr,
        ):
            # A file, not a pipe: a program that never reads its stdin cannot block us,
            # and a descendant that keeps stdout open cannot hold up the result.
            stdin.write(_prompt(job).encode("utf-8"))
            stdin.seek(0)
            proc = subprocess.Popen(
                [self.path, *self.args],
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                env={**os.environ, **program_env(job)},
                start_new_session=True,
                close_fds=True,
            )
            self._tell_guardian(f"+{proc.pid}")
            log.mark("spawned", f"pid {proc.pid}")
            returncode = proc.wait()
            log.mark("exited", f"status {returncode}")
            self._reap_orphans()
            if alive(proc.pid, group=True):
                # Something the program started still runs: the guardian kills it when
                # this child goes; the runner counts it as a leak meanwhile.
                log.details["left_running"] = True
            else:  # an empty group's id may be reused: never kill it later
                self._tell_guardian(f"-{proc.pid}")
            stdout.seek(0)
            stderr.seek(0)
            out = stdout.read().decode("utf-8", "replace")
            err = stderr.read().decode("utf-8", "replace")
        said = parse_output(out)
        for bad in said.bad:
            log.mark("protocol_line_unread", bad[:200])
        if said.tool_calls:
            log.details.setdefault("tool_calls", []).extend(said.tool_calls)
        reported = said.exception(returncode)
        if reported is not None:  # the kind it printed, whatever its exit status
            raise reported
        if returncode != 0:
            last = next((ln for ln in reversed(err.splitlines()) if ln.strip()), "")
            how = f"signal {-returncode}" if returncode < 0 else f"status {returncode}"
            raise CommandFailed(last or f"exited with {how}", returncode=returncode)
        calls = "".join(render_tool_call(c["name"], c["arguments"]) for c in said.tool_calls)
        return said.reply + calls, said.attempts

    def _tell_guardian(self, line: str) -> None:
        if self._guardian is not None and self._guardian.stdin is not None:
            self._guardian.stdin.write(line.encode() + b"\n")
            self._guardian.stdin.flush()

    def _reap_orphans(self) -> None:
        """Collect exit statuses of orphans that already ended (never waits for a live one)."""
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return


def program_env(job: Job) -> dict[str, str]:
    """The variables the program gets (see the module docstring)."""
    openai_base = job.base_url.rstrip("/")
    env = {
        "OPENAI_BASE_URL": openai_base,
        "ANTHROPIC_BASE_URL": openai_base.removesuffix("/v1"),
        "OPENAI_API_KEY": job.api_key,
        "ANTHROPIC_API_KEY": job.api_key,
        "HARNESS_API": job.api,
        "HARNESS_STREAM": "1" if job.stream else "0",
        "HARNESS_MODEL": job.model,
    }
    if job.max_tokens is not None:
        env["HARNESS_MAX_TOKENS"] = str(job.max_tokens)
    env.update(timing_env(job.settings, job.time_scale))
    return env


def _prompt(job: Job) -> str:
    """The last user message (what a one-shot program is asked)."""
    users = [m.get("content", "") for m in job.messages if m.get("role") == "user"]
    return str(users[-1]) if users else ""
