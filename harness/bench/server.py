"""``harness bench server``: the fault server against three baselines, in one run.

Servers (``server_children.SERVER_KINDS``), all doing the same work (the chat-completion
chunk bytes of ``harness.server.apis.plan_reply``, paced against absolute deadlines):
ours (the fault server, with a fault rule matched on every request and checked on
every event -- it never fires -- and its timeline on), a minimal raw-asyncio server,
uvicorn + starlette, and llmock 0.2.2. Configurations:

* **held**: streams open at once (target 1,000 with zero errors), each paced long
  enough that all of them are connected and mid-stream together;
* **burst**: unpaced 50-delta streams at C = 100 / 500 / 1000 in flight;
* **paced**: a chunk every 20 ms at C = 100; client-observed lateness p50/p99
  (arrival - (first arrival + i * interval));
* ours only, from the server's own timeline at the timing priority: |actual -
  scheduled| of paced events, of ``drip`` comments and of ``hang`` ends, p99.

For burst and paced cells each server is measured ``runs`` (>= 3) times, the servers
interleaved run by run (a noisy neighbour moves every column), with >= 50,000 events
per run by default. The figure that compares servers is **server CPU per event**:
process CPU seconds (all threads, /proc) over events received, median and min-max.
Every server runs in its own child process pinned (``os.sched_setaffinity``) to a
different CPU than the load generator (``server_load.py``). The load average is
recorded per cell and for the run.

Not here: the servers (``server_children.py``, ``server_baselines.py``), the load
generator (``server_load.py``), the table (``server_table.py``), CLI wiring.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from harness.bench.common import percentile
from harness.bench.server_children import SERVER_KINDS, ServerChild, prioritize
from harness.bench.server_load import hang_end_errors, run_streams, timeline_errors
from harness.server.pacing import PACE_QUANTUM_S

__all__ = [
    "DEFAULT_CONCURRENCY",
    "DEFAULT_HELD",
    "DEFAULT_RUNS",
    "CellFigures",
    "ServerBenchResult",
    "ServerFigures",
    "measure_servers",
]

DEFAULT_HELD = 1000
DEFAULT_RUNS = 3
DEFAULT_CONCURRENCY = (100, 500, 1000)
DEFAULT_STREAMS = 1000  # per burst run: 53 events each, 53,000 events
DEFAULT_EVENTS = 50  # content deltas: + role, finish and [DONE] = 53 events
PACED_CONCURRENCY = 100
DEFAULT_PACED_STREAMS = 1000  # per paced run, 100 at a time: 53,000 events
PACED_INTERVAL_S = 0.02
PACED_EVENTS = 50
#: The fault hook on ours in burst and paced cells: matched on every request, checked
#: on every event, never reached (a reply has 53 events).
HOOK_RULES = [
    {"match": {"path": "/v1/chat/completions"}, "fault": {"phase": "event:100000", "action": "rst"}}
]
#: Scheduling of ours and the load generator in the timeline phase: "realtime"
#: (SCHED_FIFO, the default as root), "nice" (nice -10) or "none". On a shared
#: two-core machine, neighbours' CPU time otherwise dominates a p99 measured in
#: milliseconds. Burst and paced cells always run at normal priority (fair to every
#: server; llmock would spin a realtime core).
TIMING_PRIORITIES = ("realtime", "nice", "none")
DEFAULT_HOLD_S = 2.0  # each held stream lasts this long, so all of them overlap
TARGET_P99_S = 0.005
QUICK = {
    "hold_s": 0.5,
    "held": 50,
    "runs": 3,
    "streams": 60,
    "concurrency": (20,),
    "paced_streams": 20,
    "paced_events": 10,
}


@dataclass(frozen=True)
class CellFigures:
    """One server in one configuration (``mode`` burst or paced at ``concurrency``)."""

    server: str
    mode: str
    concurrency: int
    events_per_s: float
    cpu_us_per_event: float
    cpu_us_min: float
    cpu_us_max: float
    runs_events_per_s: tuple[float, ...]
    runs_cpu_us_per_event: tuple[float, ...]
    events_per_run: int
    errors: int
    loadavg_1m: float
    lateness_p50_ms: float | None = None
    lateness_p99_ms: float | None = None


@dataclass(frozen=True)
class ServerFigures:
    """What one server achieved outside the cells (None where it does not apply)."""

    name: str
    held_peak: int
    held_errors: int
    peak_rss_mb: float
    timeline_event_p99_ms: float | None = None
    timeline_drip_p99_ms: float | None = None
    timeline_hang_end_p99_ms: float | None = None
    timeline_all_p99_ms: float | None = None
    notes: str = ""


@dataclass(frozen=True)
class ServerBenchResult:
    held_target: int
    runs: int
    concurrency: tuple[int, ...]
    streams: int
    events: int
    paced_streams: int
    paced_concurrency: int
    paced_interval_s: float
    loadavg_before: tuple[float, float, float]
    loadavg_after: tuple[float, float, float]
    cpus: str
    timing_priority: str = "none"
    #: ours writes a paced frame up to this early, so streams share loop wake-ups
    #: (``harness.server.pacing.PACE_QUANTUM_S``); its lateness figures include it
    pace_quantum_s: float = 0.0
    servers: list[ServerFigures] = field(default_factory=list)
    cells: list[CellFigures] = field(default_factory=list)

    def cell(self, server: str, mode: str, concurrency: int) -> CellFigures | None:
        for c in self.cells:
            if (c.server, c.mode, c.concurrency) == (server, mode, concurrency):
                return c
        return None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def measure_servers(
    *,
    servers: Sequence[str] = SERVER_KINDS,
    held: int = DEFAULT_HELD,
    runs: int = DEFAULT_RUNS,
    streams: int = DEFAULT_STREAMS,
    concurrency: Sequence[int] = DEFAULT_CONCURRENCY,
    paced_streams: int = DEFAULT_PACED_STREAMS,
    paced_events: int = PACED_EVENTS,
    hold_s: float = DEFAULT_HOLD_S,
    timing_priority: str | None = None,
) -> ServerBenchResult:
    """Run every measurement against every server in ``servers``; returns the figures."""
    priority = _timing_priority(timing_priority)
    load_before = os.getloadavg()
    cpus = sorted(os.sched_getaffinity(0))
    client_cpu, server_cpu = (cpus[0], cpus[-1]) if len(cpus) > 1 else (None, None)
    if client_cpu is not None:
        os.sched_setaffinity(0, {client_cpu})
    try:
        with contextlib.ExitStack() as stack:
            children = [stack.enter_context(ServerChild(k, server_cpu)) for k in servers]
            plan = _Plan(
                held, runs, streams, tuple(concurrency), paced_streams, paced_events, hold_s
            )
            figures, cells = asyncio.run(_measure(children, plan, priority))
    finally:
        if client_cpu is not None:
            os.sched_setaffinity(0, set(cpus))
    return ServerBenchResult(
        held_target=held,
        runs=runs,
        concurrency=tuple(concurrency),
        streams=streams,
        events=DEFAULT_EVENTS,
        paced_streams=paced_streams,
        paced_concurrency=min(PACED_CONCURRENCY, paced_streams),
        paced_interval_s=PACED_INTERVAL_S,
        loadavg_before=load_before,
        loadavg_after=os.getloadavg(),
        cpus=f"load generator on CPU {client_cpu}, servers on CPU {server_cpu}"
        if client_cpu is not None
        else "one CPU: not pinned",
        timing_priority=priority,
        pace_quantum_s=PACE_QUANTUM_S,
        servers=[ServerFigures(**f) for f in figures],
        cells=cells,
    )


# --------------------------------------------------------------------------- measurement


@dataclass(frozen=True)
class _Plan:
    held: int
    runs: int
    streams: int
    concurrency: tuple[int, ...]
    paced_streams: int
    paced_events: int
    hold_s: float


async def _measure(
    children: list[ServerChild], plan: _Plan, priority: str
) -> tuple[list[dict[str, Any]], list[CellFigures]]:
    figures: list[dict[str, Any]] = []
    for child in children:  # 1. held at once: long paced streams, all opened together
        figures.append(await _held(child, plan))
    cells = []
    for c in plan.concurrency:  # 2. burst
        cells += await _cell(children, plan, "burst", c, plan.streams, DEFAULT_EVENTS, 0.0)
    for child, fig in zip(children, figures, strict=True):  # the highest concurrency is behind us
        fig["peak_rss_mb"] = child.peak_rss_mb()
    cells += await _cell(  # 3. paced
        children,
        plan,
        "paced",
        min(PACED_CONCURRENCY, plan.paced_streams),
        plan.paced_streams,
        plan.paced_events,
        PACED_INTERVAL_S,
    )
    for child, fig in zip(children, figures, strict=True):  # 4. ours: its own timeline
        if child.kind == "ours":
            fig.update(await _timeline_figures(child, plan, priority))
    return figures, cells


async def _held(child: ServerChild, plan: _Plan) -> dict[str, Any]:
    hold_events = 20
    interval = plan.hold_s / hold_events
    child.configure(events=hold_events, interval_s=interval, rules=HOOK_RULES)
    child.reset()
    stats = await run_streams(
        child.port, total=plan.held, concurrency=plan.held, interval_s=interval, events=hold_events
    )
    return {
        "name": child.kind,
        "held_peak": stats.peak_open,
        "held_errors": stats.errors,
        "notes": child.notes,
    }


async def _cell(
    children: list[ServerChild],
    plan: _Plan,
    mode: str,
    concurrency: int,
    streams: int,
    events: int,
    interval_s: float,
) -> list[CellFigures]:
    """``plan.runs`` runs of every server, interleaved (the order rotates per run)."""
    load = os.getloadavg()[0]
    eps: dict[str, list[float]] = {c.kind: [] for c in children}
    cpu: dict[str, list[float]] = {c.kind: [] for c in children}
    counts: dict[str, list[int]] = {c.kind: [] for c in children}
    errors = dict.fromkeys(eps, 0)
    lateness: dict[str, list[float]] = {c.kind: [] for c in children}
    for run in range(plan.runs):
        k = run % len(children)
        for child in children[k:] + children[:k]:
            child.configure(events=events, interval_s=interval_s, rules=HOOK_RULES)
            child.reset()  # a fresh timeline per run, as the runner has per scenario
            cpu0 = child.cpu_seconds()
            stats = await run_streams(
                child.port,
                total=streams,
                concurrency=concurrency,
                interval_s=interval_s,
                events=events,
            )
            used = child.cpu_seconds() - cpu0
            eps[child.kind].append(stats.events / stats.wall_s if stats.wall_s > 0 else 0.0)
            cpu[child.kind].append(used / stats.events * 1e6 if stats.events else float("nan"))
            counts[child.kind].append(stats.events)
            errors[child.kind] += stats.errors
            lateness[child.kind] += stats.lateness
    out = []
    for child in children:
        kind = child.kind
        late = sorted(lateness[kind])
        out.append(
            CellFigures(
                server=kind,
                mode=mode,
                concurrency=concurrency,
                events_per_s=statistics.median(eps[kind]),
                cpu_us_per_event=statistics.median(cpu[kind]),
                cpu_us_min=min(cpu[kind]),
                cpu_us_max=max(cpu[kind]),
                runs_events_per_s=tuple(eps[kind]),
                runs_cpu_us_per_event=tuple(cpu[kind]),
                events_per_run=min(counts[kind]),
                errors=errors[kind],
                loadavg_1m=load,
                lateness_p50_ms=percentile(late, 50) * 1000 if interval_s > 0 else None,
                lateness_p99_ms=percentile(late, 99) * 1000 if interval_s > 0 else None,
            )
        )
    return out


async def _timeline_figures(child: ServerChild, plan: _Plan, priority: str) -> dict[str, Any]:
    """Paced events, then ``drip`` comments, then ``hang`` ends, at ``priority``."""
    n = min(PACED_CONCURRENCY, plan.paced_streams)
    events, interval = plan.paced_events, PACED_INTERVAL_S
    n_fault = max(2, events // 5)
    drip_s = interval * events / 2
    rules: dict[str, list[Any]] = {
        "event_sent": HOOK_RULES,
        "comment_sent": [
            {
                "fault": {
                    "phase": f"event:{n_fault}",
                    "action": "drip",
                    "interval_s": interval,
                    "duration_s": drip_s,
                }
            }
        ],
        "hang": [{"fault": {"phase": f"event:{n_fault}", "action": "hang", "duration_s": drip_s}}],
    }
    errs: dict[str, list[float]] = {}
    child.prioritize(priority)
    prioritize(os.getpid(), priority)
    try:
        for kind, rule in rules.items():
            child.configure(events=events, interval_s=interval, rules=rule)
            child.reset()
            await run_streams(
                child.port,
                total=n,
                concurrency=n,
                interval_s=interval,
                events=events,
                expect_done=kind == "event_sent",
            )
            tl = child.timeline()
            errs[kind] = (
                hang_end_errors(tl, drip_s) if kind == "hang" else timeline_errors(tl, kind)
            )
    finally:
        child.prioritize("none")
        prioritize(os.getpid(), "none")
    every = [e for v in errs.values() for e in v]
    return {
        "timeline_event_p99_ms": percentile(errs["event_sent"], 99) * 1000,
        "timeline_drip_p99_ms": percentile(errs["comment_sent"], 99) * 1000,
        "timeline_hang_end_p99_ms": percentile(errs["hang"], 99) * 1000,
        "timeline_all_p99_ms": percentile(every, 99) * 1000,
    }


def _timing_priority(requested: str | None) -> str:
    """``requested``, else realtime when allowed (root), else none."""
    if requested is not None:
        if requested not in TIMING_PRIORITIES:
            raise ValueError(
                f"timing_priority: {requested!r} is not valid; allowed: {', '.join(TIMING_PRIORITIES)}"
            )
        return requested
    return "realtime" if os.geteuid() == 0 else "none"
