"""The target interface: make one call against a base URL and say what came back.

A target is a small class whose :meth:`Target.call` runs in a **child process**
(``python -m harness.targets.runtime.child NAME``), so the runner can stop a hung call with
SIGKILL and count the sockets, descriptors and threads it leaves behind. The child
speaks JSON lines on its stdout (its ``print`` output goes to stderr)::

    child  -> {"event": "ready", "pid": 123, "t": <monotonic>}     after Target.prepare()
    runner -> {"cmd": "run", "job": {...Job...}}
    child  -> {"event": "started", "t": ...}                        just before Target.call()
    child  -> {"event": "call", "t": ...}          as each call of the job after the first begins
    child  -> {"event": "result", "status": "returned", "text": ..., "finish_reason": ...,
               "attempts": 1, "t": ..., "events": [[t, kind, detail], ...]}
           or {"event": "result", "status": "raised", "error": "StreamIdleTimeout",
               "mro": ["StreamIdleTimeout", "StallError", ...], "message": ..., "deadline": ...}
           or {"event": "result", "status": "skipped", "message": ...}
           or {"event": "result", "status": "not_applicable", "message": ...}  (job.api not
              in Target.apis; the runner checks ``apis`` itself and never starts the call)
    child  -> {"event": "ready", ...}  again, then waits for the next command
    runner -> {"cmd": "run", ...}    another job, when the last one left no leak, or
              {"cmd": "exit"}        after it has read the child's leaks from /proc
                                     (always after a result with "reuse": false: the
                                     child declined another job)

A child is reused (``Target.reusable``) only after a case that returned or raised and left nothing behind
(no extra descriptor, thread or socket), so no state that matters carries over; the
baseline for leaks is re-read at every ``ready``.

``t`` values are ``time.monotonic()``: system-wide on Linux, so they compare with the
fault server's timeline. The child starts from a scrubbed environment (no proxy,
provider or ``HERMES_*`` variables) plus whatever the scenario's ``env`` sets.

How to add a target: docs/targets.md (``call`` and ``run_calls``, the class attributes,
another venv, tool calls and :class:`ExecutedTruncatedToolCall`, gating on expectations);
``harness run -t mypkg.target:MyTarget`` runs the whole catalog against it, every case
judged by its scenario's contract.

Not here: judging results (``harness.outcome``) or scheduling (``harness.runner``).
"""

from __future__ import annotations

import inspect
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, TypeVar

from harness.cgroups import DEFAULT_CHILD_MEMORY_MAX

__all__ = [
    "DEFAULT_API_KEY",
    "DEFAULT_START_ALLOWANCE_S",
    "CallResult",
    "EventLog",
    "ExecutedTruncatedToolCall",
    "Job",
    "Target",
    "TargetUnsupported",
    "follow_up",
    "pause_between_calls",
    "run_calls",
]

#: Any key is accepted by the fault server; never a real secret.
DEFAULT_API_KEY = "sk-harness-local-test"
#: Real seconds from ``started`` to a target's first request or result (its set-up in
#: ``call()``, never the case's time); past it the case is ``did_not_start``.
DEFAULT_START_ALLOWANCE_S = 30.0
T = TypeVar("T")


class ExecutedTruncatedToolCall(Exception):
    """The agent executed a tool call whose arguments were cut (docs/targets.md, "The
    interface"): raised from :meth:`Target.call`, even when the agent then returned a
    reply, it (or any exception with this class name in its MRO) makes the outcome
    ``executed_truncated_tool_call`` (``harness.outcome.EXECUTED_TRUNCATED``)."""


class TargetUnsupported(Exception):
    """The target cannot run this job (e.g. an API it does not speak); reported as skipped."""


@dataclass(frozen=True)
class Job:
    """One call to make.

    ``settings`` are the scenario's reference-client settings in scenario seconds;
    ``time_scale`` is the run's factor, which a target with its own deadlines applies
    to them (and to its defaults) so the whole call speeds up with the fault script.
    """

    base_url: str
    api: str = "chat"
    stream: bool = True
    messages: tuple[Mapping[str, str], ...] = ()
    model: str = "test-model"
    max_tokens: int | None = None
    calls: int = 1
    rebuild_after: int | None = None
    #: Pause between sequential calls in scenario seconds (times ``time_scale``).
    pause_s: float = 0.0
    #: An agent loop: after a reply with tool calls, run them and call the model again
    #: with their results, up to this many times per call (0: the first reply answers).
    tool_rounds: int = 0
    settings: Mapping[str, Any] = field(default_factory=dict)
    time_scale: float = 1.0
    api_key: str = field(default=DEFAULT_API_KEY, repr=False)
    #: A healthy server for one follow-up call through the same client after the job's
    #: calls (``follow_up``); None: make none. Set only for a ``Target.follows_up`` target.
    follow_up_url: str | None = None
    #: The tools every call offers, ``{name, description, parameters}`` (a JSON schema;
    #: each API's form: ``harness.replies.tools_for_api``); the fault server calls a tool
    #: only when offered one, and names one of these.
    tools: tuple[Mapping[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["messages"] = [dict(m) for m in self.messages]
        data["settings"] = dict(self.settings)
        data["tools"] = [dict(t) for t in self.tools]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Job:
        data = dict(data)
        data["messages"] = tuple(dict(m) for m in data.get("messages", ()))
        data["tools"] = tuple(dict(t) for t in data.get("tools", ()))
        return cls(**data)


@dataclass(frozen=True)
class CallResult:
    """What a job returned. ``attempts`` is the client's own count of the requests it
    made when it knows one (for several sequential calls, the total over all of them);
    the runner reports it next to the server's count.

    ``texts`` holds every call's text when the job made several sequential calls
    (``text`` is then the last one).
    """

    text: str
    finish_reason: str | None = None
    attempts: int | None = None
    texts: tuple[str, ...] = ()
    #: Extra JSON-able facts a target wants in the report (carried, never judged).
    details: Mapping[str, Any] = field(default_factory=dict)


class EventLog:
    """Client-side events for the timeline: ``mark(kind, detail)`` stamps ``time.monotonic()``."""

    #: Enough for a long stream's first and last chunks; the rest is counted, not kept.
    MAX_EVENTS = 200

    def __init__(self) -> None:
        self.events: list[tuple[float, str, str]] = []
        self.dropped = 0
        #: Extra JSON-able facts for the report, also on a raised result.
        self.details: dict[str, Any] = {}
        #: Told at once when the job's next call begins (:func:`run_calls`; the child
        #: runtime sends it to the runner, so a later call's ceiling is its own even when
        #: the child is killed before its result, or the call never reaches the server).
        self.on_call: Callable[[float], None] | None = None

    def mark(self, kind: str, detail: str = "") -> float:
        """Stamp a client event; returns its time."""
        t = time.monotonic()
        if len(self.events) < self.MAX_EVENTS:
            self.events.append((t, kind, detail))
        else:
            self.dropped += 1
        return t

    def caught(self, exc: BaseException) -> None:
        """Report an exception the client caught and turned into something else (an
        error text returned as the reply, a wrapper of its own): its chain is the cause
        the reports name (``details.caught``; the last one reported wins)."""
        from harness.targets.runtime.protocol import describe_chain  # noqa: PLC0415

        self.details["caught"] = describe_chain(exc)


class Target(ABC):
    """One client stack under test. Instantiated once per child process."""

    name: ClassVar[str] = ""
    #: The scenario APIs this target speaks; a scenario with another API is reported as
    #: ``not_applicable`` for it without running (expect it: ``openai-sdk = "not_applicable"``).
    apis: ClassVar[tuple[str, ...]] = ("chat", "responses")
    #: Raise the runner's outer ceiling for this target (real seconds), e.g. when its own
    #: retry backoff runs in real time whatever the time scale.
    min_ceiling_s: ClassVar[float] = 0.0
    #: The lowest time scale this target's cases run at (the run's scale is raised to it):
    #: for a client whose deadlines are only as fine as its own poll, so that a scaled
    #: deadline measures the deadline, not the poll. 0: the run's scale.
    min_time_scale: ClassVar[float] = 0.0
    #: True when the child speaks the reuse protocol (``ready`` again after ``result``).
    #: ``harness.targets.runtime.child`` does; a target with its own driver says so explicitly.
    reusable: ClassVar[bool] = False
    #: True when ``call`` makes the job's follow-up call (:func:`follow_up`): then the
    #: contract's ``alive_after`` check is judged for it.
    follows_up: ClassVar[bool] = False
    #: True when a child of this target, at its first ``ready``, can be copied by
    #: ``os.fork`` into the next child (``harness.targets.runtime.forking``): one thread and no
    #: socket or pipe of its own. The child checks it too and refuses, naming why. A warm
    #: child that keeps a thread can park it (:meth:`before_fork`, :meth:`after_fork`);
    #: say False for one that keeps a helper process.
    forkable: ClassVar[bool] = True
    #: At most this many of this target's cases run at once (0: as many as the run's
    #: workers): for a target each of whose children starts a heavy process of its own
    #: (a gateway), so that the run's own parallelism is not the load its deadlines are
    #: judged under.
    max_parallel: ClassVar[int] = 0
    #: At most this many of its expected hangs wait at once on the run's idle lanes
    #: (0: ``max_parallel``): a hang only waits, so a target whose heavy process is
    #: pooled (a gateway lease) can wait on more lanes than it runs on.
    idle_parallel: ClassVar[int] = 0
    #: How many requests the server may see for each one the client sends: a gateway
    #: between them that retries upstream on its own (LiteLLM's Router: 1 + num_retries).
    #: Scales the scenario's request budget for this target's expectation (a budget
    #: written for the target itself is taken as written); the contract's verdict still
    #: counts what the server saw.
    requests_per_request: ClassVar[int] = 1
    #: The child's memory limit in bytes, every process it starts included (a cgroup:
    #: ``harness.cgroups``); reaching it is the case's ``error(TargetResources)``.
    #: None: no limit.
    memory_max: ClassVar[int | None] = DEFAULT_CHILD_MEMORY_MAX
    #: How long the runner waits for the child's first ``ready`` (real seconds), when more
    #: than its default: a big import or a server of its own (a gateway). 0: the default.
    start_s: ClassVar[float] = 0.0
    #: How long from ``started`` its first request (or result) may take; the case's clock
    #: starts at that request. Neither by then: ``did_not_start``, never ``hung``.
    start_allowance_s: ClassVar[float] = DEFAULT_START_ALLOWANCE_S
    #: Its client may live milliseconds (a program per call): the first reply byte of a
    #: case waits until the runner has read its sockets.
    posture_hold: ClassVar[bool] = False
    #: False: no connection survives between its calls (a process per call); a fault on
    #: a pooled connection is ``not_applicable`` for it.
    pools_connections: ClassVar[bool] = True
    #: The tool its agent takes the model's final answer from (smolagents' ``final_answer``):
    #: where a request offers it, the server answers with a call of it carrying the text
    #: (the scenario's ``answer_tool`` when it names one). None: a text reply.
    answer_tool: ClassVar[str | None] = None
    #: The interpreter the child runs in (e.g. another virtualenv's ``bin/python``);
    #: None: the harness's own. The harness's child runtime is stdlib-only and comes
    #: from ``PYTHONPATH``, so that venv needs only the client (``harness.targets.runtime.preflight``
    #: checks it at start). ``--target-python`` sets it for a run's ``module:Class`` targets.
    python: ClassVar[str | None] = None
    #: Modules the child imports in ``prepare()`` / ``call()`` (the client), checked in
    #: the child's interpreter at start so a missing one is one line, not a dead child.
    requires: ClassVar[tuple[str, ...]] = ()
    #: The command that installs what this target needs here, named when it cannot run.
    install: ClassVar[str] = "bash ci/setup"

    @classmethod
    def unavailable(cls) -> str | None:
        """Why this target cannot run on this machine (its venv or package is missing),
        or None when it can. Looks on disk only; starts nothing."""
        return None

    @classmethod
    def command(cls) -> list[str]:
        """The child command line: ``python`` (default the harness's) runs the child."""
        # The import path, not ``name``: an out-of-tree class's display name is not
        # registered anywhere the child could look it up.
        return [
            cls.python or sys.executable,
            "-m",
            "harness.targets.runtime.child",
            f"{cls.__module__}:{cls.__qualname__}",
        ]

    def prepare(self) -> None:  # noqa: B027 - optional hook
        """Import heavy modules and warm up process-wide state before ``ready``.

        The runner's thread and descriptor baseline is taken after this returns.
        """

    def before_fork(self) -> None:  # noqa: B027 - optional hook
        """The warm child is about to become a fork server (``forkable``): stop what a
        copy must not share -- a pool's idle worker thread -- so that it can be copied.
        Each copy gets :meth:`after_fork`; this process runs no job after it."""

    def after_fork(self) -> None:  # noqa: B027 - optional hook
        """In each forked copy, before its ``ready`` (so before the leak baseline):
        start again what :meth:`before_fork` stopped."""

    @abstractmethod
    def call(self, job: Job, log: EventLog) -> CallResult:
        """Make ``job.calls`` sequential calls on one client (rebuilding it after
        ``job.rebuild_after`` calls, with :func:`pause_between_calls` between them: the
        loop is :func:`run_calls`), close every client it built, return or raise."""


def run_calls(
    job: Job,
    log: EventLog,
    call: Callable[[], T],
    *,
    rebuild: Callable[[], None] | None = None,
    label: str = "",
) -> list[T]:
    """The job's calls, one after another: the loop every target runs. Before each call
    but the first, the job's pause (:func:`pause_between_calls`); before call number
    ``job.rebuild_after`` (0-based), ``rebuild()`` -- the client built again -- marked
    ``rebuild``; each call marked ``call`` ("2 of 3" + ``label``). ``rebuild=None``: a
    target with no client of its own to rebuild. Returns what each ``call()`` returned."""
    results: list[T] = []
    for i in range(job.calls):
        if i > 0:
            pause_between_calls(job, log)
        if rebuild is not None and job.rebuild_after is not None and i == job.rebuild_after:
            rebuild()
            log.mark("rebuild")
        t = log.mark("call", f"{i + 1} of {job.calls}{label}")
        if i > 0 and log.on_call is not None:
            log.on_call(t)
        results.append(call())
    return results


def pause_between_calls(job: Job, log: EventLog) -> None:
    """The job's pause between two calls: an agent thinking between turns, so a
    scenario can change the network while the pooled connection sits idle."""
    if job.pause_s > 0:
        log.mark("pause", f"{job.pause_s * job.time_scale:.3f} s")
        time.sleep(job.pause_s * job.time_scale)


def follow_up(
    job: Job, log: EventLog, call: Callable[[str], str | Awaitable[str]]
) -> Awaitable[None]:
    """The contract's ``alive_after`` probe: after the job's calls (returned or raised),
    one healthy call through the *same* client, ``call(base_url) -> reply text``, against
    ``job.follow_up_url`` (a fault-free server). Recorded in ``log.details["follow_up"]``
    with the time it started, which is where the job's own calls ended. Call it before
    closing the client, e.g. in the ``finally`` that closes it; it never raises.

    ``call`` may be async (an async client): then ``await follow_up(job, log, call)`` on
    the client's own loop. A sync ``call`` is done when ``follow_up`` returns (what it
    returns is a finished awaitable, so awaiting it is harmless)."""
    if job.follow_up_url is None:
        return _DONE
    started = time.monotonic()
    log.mark("follow_up")
    try:
        result = call(job.follow_up_url)
    except Exception as exc:  # noqa: BLE001 - the failure is the finding, reported as data
        _record_follow_up(log, started, error=exc)
        return _DONE
    if inspect.isawaitable(result):
        return _await_follow_up(log, started, result)
    _record_follow_up(log, started, text=result)
    return _DONE


async def _await_follow_up(log: EventLog, started: float, pending: Awaitable[str]) -> None:
    try:
        text = await pending
    except Exception as exc:  # noqa: BLE001 - the failure is the finding, reported as data
        _record_follow_up(log, started, error=exc)
    else:
        _record_follow_up(log, started, text=text)


def _record_follow_up(
    log: EventLog, started: float, *, text: str | None = None, error: BaseException | None = None
) -> None:
    if error is not None:
        log.details["follow_up"] = {
            "ok": False,
            "t": started,
            "error": f"{type(error).__name__}: {str(error)[:200]}",
        }
    else:
        log.details["follow_up"] = {"ok": bool(text), "t": started, "chars": len(text or "")}


class _Done:
    """An awaitable that is already finished: what a sync follow-up returns."""

    def __await__(self) -> Iterator[None]:
        return iter(())


_DONE = _Done()
