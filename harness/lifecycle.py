"""The child lifecycle of one case: network path, target child, job, wait, leaks.

For one case: the scenario's fault script goes into the fault server (through a relay,
Toxiproxy or a kernel namespace when the scenario says so), a target child process
(pre-started and warm, or a new one: ``harness.children``) gets a
:class:`~harness.targets.base.Job`, and
the runner waits for its result until the **outer ceiling** counted from the moment the
client is ready: its first connection to the server after the child's ``started``
message (or ``started`` itself, for a call that returned before any). The child's
imports and warm-up (``Target.prepare``) happen before ``ready``, and a client's own
set-up inside ``call()`` before its first request: neither counts against the case. A
child that has not answered by the ceiling is killed (the case is ``hung``); one that
died or stalled before ``ready``, or made no request and no result within its start-up
allowance (``Target.start_allowance_s``), is ``did_not_start``, with its stderr tail. While it runs, the posture of its client sockets
is sampled (``harness.posture``: at each request the server reads, at each fault, and
once more at the end, before a hung child is killed). Then the child's leaks are read from /proc
(descriptors, threads, sockets in CLOSE-WAIT or still ESTABLISHED), with the server's
request records and timeline.

A child whose case returned or raised and left no leak is handed back for reuse
(``harness.children.keeps``); a hung or leaky one never is. What was seen is an
:class:`Observed`, the judge step's input.

Not here: judging what was observed (``harness.judge``) or scheduling (``harness.runner``).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from harness import children
from harness.call_ceiling import wait_per_model_call
from harness.environment import read_environment
from harness.leaks import Leaks, leaks_between, runqueue_waits, snapshot, starved_s
from harness.netem.prereq import backend_missing
from harness.planning import CHILD_START_S, CasePlan, RunSettings
from harness.posture import Posture, sampling
from harness.replies import DEFAULT_TOOL_SPEC, TOOL_REPLY_SHAPES
from harness.scenario import Scenario
from harness.targets.base import Job
from harness.targets.runtime.process import ChildFailed, TargetProcess

__all__ = ["CHILD_START_S", "LEAK_SETTLE_READS", "LEAK_SETTLE_S", "Observed", "observe_case"]

#: While waiting for a client's first request, the child's result is awaited in slices
#: this long between looks at the server's timeline (a select on the child's pipe, so a
#: result ends the wait at once).
CONTACT_SLICE_S = 0.02
#: How often the posture hold's helper looks whether the case is over (seconds).
HOLD_LOOK_S = 0.1
#: Leak re-reads after a result: a closing thread or socket may need a moment to go.
LEAK_SETTLE_READS = 10
LEAK_SETTLE_S = 0.02


@dataclass(frozen=True, kw_only=True)
class Observed:
    """What the runner saw of one case (or, for a case never run, why not)."""

    #: The target's result message; None: no result before the outer ceiling.
    report: Mapping[str, Any] | None
    #: The server's request records (every path; only LLM calls are counted).
    records: Sequence[Any] = ()
    timeline: Sequence[Mapping[str, Any]] = ()
    leaks: Leaks | None = None
    started_t: float | None = None
    #: Where a hung target's threads were stuck (``--dump-stacks``).
    stacks: str = ""
    #: The case did not run for a reason CI must not accept (a tier CI requires).
    not_run_is_mismatch: bool = False
    #: The client sockets' posture (``harness.posture.Posture``; None: not read).
    posture: Any = None
    #: The longest a target thread waited for a CPU during the case (``harness.lateness``).
    starved_s: float | None = None
    #: ``(time, runqueue_waits)`` read at each posture sample (each request read, each
    #: fault): the starvation between two requests (``harness.leaks.starved_between``).
    runqueue: Sequence[tuple[float, Mapping[int, float]]] = ()


def observe_case(
    plan: CasePlan,
    *,
    server: Any,
    settings: RunSettings,
    child: TargetProcess | None,
    follow_up_url: str | None = None,
) -> tuple[Observed, TargetProcess | None]:
    """Run one case and return what was observed, with the child when it is clean enough
    to reuse (``child``, if given, is a pre-started process for the target; consumed).

    ``follow_up_url`` is a fault-free server for the contract's ``alive_after`` call,
    given to the target where the plan says it makes one (``CasePlan.follows_up``)."""
    scenario = plan.scenario
    if not plan.applies:
        return Observed(report={"status": "not_applicable", "message": plan.not_applicable}), child
    missing = backend_missing(scenario.backend)
    if missing is not None:
        ci = read_environment(settings.environ).ci
        detail = f"CI requires this tier: {missing}" if ci else f"skipped: {missing}"
        return Observed(
            report={"status": "skipped", "message": detail}, not_run_is_mismatch=ci
        ), child
    # The child is this function's from here on: whatever escapes (a relay or proxy that
    # cannot be set up, a server that refuses the script) must not leave it running.
    try:
        with _network(scenario, server=server, time_scale=plan.time_scale) as net:
            net.server.load(scenario.script, time_scale=plan.time_scale)
            net.server.reply_source = _cassette_source(scenario, plan.time_scale)
            child = children.child_for_case(
                plan, child, settings, command_prefix=net.command_prefix
            )
            url = follow_up_url if plan.follows_up else None
            observed, reusable = _run_in_child(
                plan, child, net, _job(plan, net.base_url, url), settings=settings
            )
    except BaseException:
        if child is not None:
            child.kill()
        raise
    return observed, reusable


def _run_in_child(
    plan: CasePlan, child: TargetProcess, net: Any, job: Job, *, settings: RunSettings
) -> tuple[Observed, TargetProcess | None]:
    report: dict[str, Any] | None
    reusable: TargetProcess | None = None
    stacks = ""
    leaks: Leaks | None = None
    started_t: float | None = None
    posture: Posture | None = None
    starved: float | None = None
    runqueue: list[tuple[float, dict[int, float]]] = []
    began = False  # "started" read: a failure from here on is a crash, not a start-up
    try:
        # Start-up (imports, warm-up in prepare()) ends at "ready": never the case's time.
        # A target that starts a server of its own (a gateway) may need longer.
        child.wait_ready(time.monotonic() + plan.start_s)
        baseline = snapshot(child.pid)
        waits = runqueue_waits(child.pid)
        pid = child.pid

        def read_runqueue() -> None:  # on the sampler's thread; list.append is atomic
            runqueue.append((time.monotonic(), runqueue_waits(pid)))

        # what the child keeps by design (a gateway started in prepare()) is no leak
        baseline_strays = child.strays()
        if plan.scenario.backend == "kernel":
            net.watch(child.pid)
        with (
            sampling(child.pid, net.server, net.base_url, also=read_runqueue) as sampler,
            _posture_hold(plan, net.server, sampler),
        ):
            net.arm(timeout=plan.ceiling_s)
            child.run(job.to_dict())
            first = child.wait_started(time.monotonic() + CHILD_START_S)
            began = True
            if first.get("event") == "result":
                report = first
            else:
                report, started_t = _wait_client(child, net.server, float(first["t"]), plan)
            sampler.sample("end")  # a hung call's held connection, before the kill
            starved = starved_s(waits, runqueue_waits(child.pid))
        posture = sampler.result()
        if report is not None and report.get("status") == "did_not_start":
            child.kill()
        elif report is None:
            stacks = child.dump_stacks() if settings.dump_hung_stacks else ""
            report = _resources_report(child)  # read before the kill removes the group
            child.kill()
        else:
            leaks = _settled_leaks(child, baseline, baseline_strays)
            if children.keeps(plan, report, leaks):
                reusable = child
            else:
                child.finish(time.monotonic() + children.FINISH_S)
    except ChildFailed as exc:
        child.kill()
        if began:
            report = {
                "status": "crashed",
                "error": exc.error,
                "mro": [exc.error],
                "message": str(exc)[-500:],
            }
        else:  # it never got to the job: named as such, never judged as the client's call
            report = _did_not_start(child, f"the child failed before it was ready: {exc}")
    timeline = [e.to_dict() if hasattr(e, "to_dict") else dict(e) for e in net.server.timeline()]
    timeline = sorted(timeline + list(net.events()), key=lambda e: e["t"])
    observed = Observed(
        report=report,
        records=tuple(net.server.requests()),
        timeline=tuple(timeline),
        leaks=leaks,
        started_t=started_t,
        stacks=stacks,
        posture=posture,
        starved_s=starved,
        runqueue=tuple(runqueue),
    )
    return observed, reusable


@contextlib.contextmanager
def _posture_hold(plan: CasePlan, server: Any, sampler: Any) -> Iterator[None]:
    """For a ``posture_hold`` target: the first reply body waits after its head until the
    client's sockets were sampled (``harness.server.holds``, a hold at 0). A program
    that lives milliseconds is read while it waits for its first byte."""
    if not plan.target_cls.posture_hold or not hasattr(server, "hold"):
        yield
        return
    release = server.hold(0)
    stop = threading.Event()

    def sample_then_release() -> None:
        seen = 0
        while not stop.is_set():
            try:
                server.wait_for("held", timeout=HOLD_LOOK_S, count=seen + 1)
            except TimeoutError:
                continue
            seen += 1
            if any(e.kind == "held" and e.detail.get("n") == 0 for e in server.timeline()):
                sampler.sample("first_byte_held")
                break
        release()

    helper = threading.Thread(target=sample_then_release, name="posture-hold", daemon=True)
    helper.start()
    try:
        yield
    finally:
        stop.set()
        release()  # a case that never reached a body (an accept-phase fault) ends here
        helper.join()


def _wait_client(
    child: TargetProcess, server: Any, started_t: float, plan: CasePlan
) -> tuple[dict[str, Any] | None, float]:
    """The child's result (None: the ceiling passed) and where the case's clock starts:
    the client's first connection to the server after ``started_t``, or ``started_t``
    for a result that came before any. No connection and no result within the
    allowance: a ``did_not_start`` report."""
    allowance_end = started_t + plan.start_allowance_s
    while True:
        contact = _first_contact(server, started_t)
        if contact is not None:
            return wait_per_model_call(child, server, contact, plan), contact
        now = time.monotonic()
        if now >= allowance_end:
            return _did_not_start(
                child,
                f"no request and no result within its {plan.start_allowance_s:g} s start-up "
                "allowance (Target.start_allowance_s)",
            ), started_t
        report = child.wait_result(min(allowance_end, now + CONTACT_SLICE_S))
        if report is not None:
            contact = _first_contact(server, started_t)
            return report, started_t if contact is None else contact


def _first_contact(server: Any, since: float) -> float | None:
    """When the client first reached the server at or after ``since``: the accept of the
    first connection whose head the server read, or a request's arrival (one on a
    connection pooled from an earlier case is never accepted again). None: not yet."""
    times = [e.t for e in server.timeline() if e.kind == "accepted" and e.t >= since]
    times += [r.t_start for r in server.requests() if r.t_start >= since]
    return min(times) if times else None


def _did_not_start(child: TargetProcess, why: str) -> dict[str, Any]:
    tail = child.stderr_tail(600).strip()
    message = why if not tail or tail in why else f"{why}; stderr: {tail}"
    return {"status": "did_not_start", "error": "DidNotStart", "message": message[-900:]}


def _cassette_source(scenario: Scenario, scale: float) -> Any:
    """A scenario's cassette as the server's reply source (None: synthetic replies)."""
    if scenario.cassette is None:
        return None
    from harness.record.replay import load_replay_source

    return load_replay_source([scenario.cassette], time_scale=scale)


def _job(plan: CasePlan, base_url: str, follow_up_url: str | None) -> Job:
    scenario = plan.scenario
    request = scenario.request
    return Job(
        base_url=base_url,
        api=scenario.api,
        stream=scenario.stream,
        messages=tuple(request.messages()),
        model=request.model,
        max_tokens=request.max_tokens,
        calls=request.calls,
        rebuild_after=request.rebuild_after,
        pause_s=request.pause_s,
        tool_rounds=request.tool_rounds,
        settings=scenario.watchdog.as_settings(),
        time_scale=plan.time_scale,
        follow_up_url=follow_up_url,
        tools=_offered_tools(scenario),
    )


def _offered_tools(scenario: Scenario) -> tuple[dict[str, Any], ...]:
    """The tools the job's calls offer: the scenario's ``[request] tools``; unset, the
    default tool on a tool-call script (a model calls only a tool it was offered)."""
    if scenario.request.tools is not None:
        return tuple(t.model_dump() for t in scenario.request.tools)
    if scenario.script.reply in TOOL_REPLY_SHAPES:
        return (dict(DEFAULT_TOOL_SPEC),)
    return ()


class _DirectNetwork:
    """The default path: the target talks to the fault server itself (no netem import)."""

    command_prefix: tuple[str, ...] = ()

    def __init__(self, server: Any) -> None:
        self.server = server
        self.base_url = server.base_url

    def watch(self, pid: int) -> None:
        """Nothing to watch: no kernel backend."""

    def arm(self, *, timeout: float) -> None:
        """Nothing deferred: every fault is in the server's script."""

    def events(self) -> list[dict[str, Any]]:
        return []


@contextlib.contextmanager
def _network(scenario: Scenario, *, server: Any, time_scale: float) -> Iterator[Any]:
    """The path between target and server for one case (``harness.netem.backends``)."""
    if scenario.network is None or scenario.backend == "server":
        yield _DirectNetwork(server)
        return
    from harness.netem.backends import network_backend
    from harness.server import FaultServer

    with network_backend(
        scenario.network,
        server=server,
        time_scale=time_scale,
        server_factory=lambda host: FaultServer(host=host, allow_remote=True),
    ) as net:
        yield net


def _resources_report(child: TargetProcess) -> dict[str, Any] | None:
    """A hung child's report when the kernel killed part of it at its memory limit (the
    call then waited on what died): the limit, not the client, ended the case."""
    kills = child.oom_kills()
    if not kills:
        return None
    limit = child.group.memory_max if child.group is not None else None
    return {
        "status": "crashed",
        "error": "TargetResources",
        "mro": ["TargetResources"],
        "message": f"{child.target} child hung after the kernel killed {kills} process(es) "
        f"of it at its memory limit ({limit} bytes)",
    }


def _settled_leaks(child: TargetProcess, baseline: Any, before: set[int]) -> Leaks | None:
    """Leaks after the call; re-read a few times (bounded) so a thread, socket or process
    that is already on its way out is not counted. A real leak survives every read."""
    leaks = _leaks_now(child, baseline, before)
    for _ in range(LEAK_SETTLE_READS):
        if leaks is None or leaks.total == 0:
            break
        time.sleep(LEAK_SETTLE_S)  # a measurement grace, not synchronisation
        leaks = _leaks_now(child, baseline, before)
    return leaks


def _leaks_now(child: TargetProcess, baseline: Any, before: set[int]) -> Leaks | None:
    leaks = leaks_between(baseline, snapshot(child.pid))
    processes = len(child.strays() - before)
    return leaks if leaks is None or not processes else replace(leaks, processes=processes)
