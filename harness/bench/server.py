"""``harness bench server``: the fault server against a minimal uvicorn + starlette SSE server.

One run measures, side by side, for both servers doing the same work (the same
chat-completion chunk bytes from ``harness.server.apis.plan_reply``, paced against
absolute deadlines):

* **held**: streams open at once (target 1,000 with zero errors): every stream is
  paced long enough that all of them are connected and mid-stream together;
* **throughput**: events per second and server CPU time per event (process CPU
  seconds from /proc over events sent) for unpaced 50-event streams, ``concurrency``
  at a time; the median of ``runs`` (>= 3) runs;
* **client-observed lateness** of paced events at 100 concurrent streams
  (arrival - (first arrival + i * interval)), p50/p99;
* ours only, from the server's own timeline: |actual - scheduled| of paced events,
  of ``drip`` comments, and of ``hang`` (with a duration) ends, p99 (target < 5 ms).

Each server runs in its own child process pinned (``os.sched_setaffinity``) to a
different CPU than the load generator, which is a raw-socket asyncio client (an httpx
client saturates its core before a lean server does; see DESIGN.md). The background
load average is printed with the table.

Not here: the server (``harness.server``), CLI wiring (``harness.cli``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from harness.bench.common import percentile

__all__ = [
    "DEFAULT_CONCURRENCY",
    "DEFAULT_HELD",
    "DEFAULT_RUNS",
    "ServerBenchResult",
    "ServerFigures",
    "measure_servers",
    "render_server_table",
    "run_server_bench",
]

DEFAULT_HELD = 1000
DEFAULT_RUNS = 3
DEFAULT_CONCURRENCY = 100
DEFAULT_STREAMS = 1000  # per throughput run
DEFAULT_EVENTS = 50
#: Scheduling of both servers and the load generator during the short timing phases
#: (3 and 4): "realtime" (SCHED_FIFO priority 10, the default as root), "nice"
#: (nice -10) or "none". On a shared two-core machine, neighbours' CPU time otherwise
#: dominates a p99 measured in milliseconds (measured: 5-7 ms wall lags with 0.5 ms
#: of CPU at load 9). The server does ~10% of a CPU of work there; RT throttling
#: (sched_rt_runtime_us) bounds it anyway.
TIMING_PRIORITIES = ("realtime", "nice", "none")
TIMING_RT_PRIORITY = 10
TIMING_NICE = -10
DEFAULT_HOLD_S = 2.0  # each held stream lasts this long, so all of them overlap
PACED_STREAMS = 100
PACED_INTERVAL_S = 0.02
PACED_EVENTS = 50
TARGET_P99_S = 0.005
QUICK = {
    "hold_s": 0.5,
    "held": 50,
    "runs": 3,
    "streams": 60,
    "concurrency": 20,
    "paced_streams": 20,
    "paced_events": 10,
}
REQUEST_BODY = {
    "model": "bench",
    "stream": True,
    "messages": [{"role": "user", "content": "bench"}],
}


@dataclass(frozen=True)
class ServerFigures:
    """What one server achieved (None where a figure does not apply to it)."""

    name: str
    held_peak: int
    held_errors: int
    events_per_s: float
    cpu_us_per_event: float
    runs_events_per_s: tuple[float, ...]
    runs_cpu_us_per_event: tuple[float, ...]
    throughput_errors: int
    client_lateness_p50_ms: float
    client_lateness_p99_ms: float
    timeline_event_p99_ms: float | None = None
    timeline_drip_p99_ms: float | None = None
    timeline_hang_end_p99_ms: float | None = None
    timeline_all_p99_ms: float | None = None
    notes: str = ""


@dataclass(frozen=True)
class ServerBenchResult:
    held_target: int
    runs: int
    concurrency: int
    streams: int
    events: int
    paced_streams: int
    paced_interval_s: float
    loadavg_before: tuple[float, float, float]
    loadavg_after: tuple[float, float, float]
    cpus: str
    timing_priority: str = "none"
    servers: list[ServerFigures] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_server_bench(argv: Sequence[str] | None = None) -> int:
    """CLI entry: ``harness bench server [--quick] [--held N] [--runs N] [--json PATH]``."""
    parser = argparse.ArgumentParser(
        prog="harness bench server", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--quick", action="store_true", help="small counts: a smoke test of the benchmark"
    )
    parser.add_argument("--held", type=int, help=f"streams held at once (default {DEFAULT_HELD})")
    parser.add_argument(
        "--runs",
        type=int,
        help=f"throughput runs per server, median reported (default {DEFAULT_RUNS})",
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        help=f"throughput streams in flight (default {DEFAULT_CONCURRENCY})",
    )
    parser.add_argument(
        "--streams", type=int, help=f"streams per throughput run (default {DEFAULT_STREAMS})"
    )
    parser.add_argument("--no-baseline", action="store_true", help="measure only the fault server")
    parser.add_argument(
        "--timing-priority",
        choices=TIMING_PRIORITIES,
        help="scheduling of servers and load generator during the timing phases "
        "(default realtime as root, else none)",
    )
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args(list(argv or []))
    base = dict(QUICK) if args.quick else {}
    for name in ("held", "runs", "concurrency", "streams"):
        value = getattr(args, name)
        if value is not None:
            if value < 1 or (name == "runs" and value < 3):
                parser.error(
                    f"--{name}: {value} is not valid; allowed: a whole number >= {3 if name == 'runs' else 1}"
                )
            base[name] = value
    result = measure_servers(
        baseline=not args.no_baseline, timing_priority=args.timing_priority, **base
    )
    render_server_table(result)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(result.to_dict(), fh, indent=2)
    return 0


def measure_servers(
    *,
    held: int = DEFAULT_HELD,
    runs: int = DEFAULT_RUNS,
    streams: int = DEFAULT_STREAMS,
    concurrency: int = DEFAULT_CONCURRENCY,
    paced_streams: int = PACED_STREAMS,
    paced_events: int = PACED_EVENTS,
    hold_s: float = DEFAULT_HOLD_S,
    baseline: bool = True,
    timing_priority: str | None = None,
) -> ServerBenchResult:
    """Run every measurement against ours (and the baseline); returns the figures.

    ``timing_priority``: one of ``TIMING_PRIORITIES`` (None: realtime as root, else none).
    """
    priority = _timing_priority(timing_priority)
    load_before = os.getloadavg()
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    client_cpu, server_cpu = (cpus[0], cpus[-1]) if len(cpus) > 1 else (None, None)
    original = set(cpus)
    if client_cpu is not None:
        os.sched_setaffinity(0, {client_cpu})
    figures = []
    try:
        kinds = ["ours", "baseline"] if baseline else ["ours"]
        for kind in kinds:
            with _Child(kind, server_cpu) as child:
                figures.append(
                    asyncio.run(
                        _measure_one(
                            child,
                            held=held,
                            runs=runs,
                            streams=streams,
                            concurrency=concurrency,
                            paced_streams=paced_streams,
                            paced_events=paced_events,
                            hold_s=hold_s,
                            timing_priority=priority,
                        )
                    )
                )
    finally:
        if client_cpu is not None:
            os.sched_setaffinity(0, original)
    return ServerBenchResult(
        held_target=held,
        runs=runs,
        concurrency=concurrency,
        streams=streams,
        events=DEFAULT_EVENTS,
        paced_streams=paced_streams,
        paced_interval_s=PACED_INTERVAL_S,
        loadavg_before=load_before,
        loadavg_after=os.getloadavg(),
        cpus=f"load generator on CPU {client_cpu}, servers on CPU {server_cpu}"
        if client_cpu is not None
        else "one CPU: not pinned",
        timing_priority=priority,
        servers=figures,
    )


def render_server_table(result: ServerBenchResult, *, console: Any = None) -> None:
    """Print the side-by-side table (rich)."""
    from rich.console import Console
    from rich.table import Table

    if console is None:
        console = Console()
        if not console.is_terminal:  # piped: rich would wrap the table at 80 columns
            console = Console(width=120)
    by = {f.name: f for f in result.servers}
    ours, base = by.get("ours"), by.get("baseline")
    table = Table(
        title="harness bench server: fault server vs uvicorn+starlette SSE", show_lines=False
    )
    table.add_column("measure")
    table.add_column("fault server", justify="right")
    table.add_column("uvicorn+starlette", justify="right")
    table.add_column("target")

    def row(label: str, attr: str, fmt: str, target: str = "") -> None:
        cells = []
        for fig in (ours, base):
            value = getattr(fig, attr) if fig is not None else None
            cells.append("-" if value is None else fmt.format(value))
        table.add_row(label, *cells, target)

    row(
        f"streams held at once (of {result.held_target})",
        "held_peak",
        "{}",
        f"{result.held_target}",
    )
    row("  errors while holding", "held_errors", "{}", "0")
    row(
        f"events/s (median of {result.runs}, C={result.concurrency})",
        "events_per_s",
        "{:,.0f}",
        ">= baseline",
    )
    row("server CPU µs per event (median)", "cpu_us_per_event", "{:.1f}", "<= baseline")
    row("  throughput errors", "throughput_errors", "{}", "0")
    row(
        f"client lateness p50 ms ({result.paced_streams} paced)", "client_lateness_p50_ms", "{:.2f}"
    )
    row(
        f"client lateness p99 ms ({result.paced_streams} paced)", "client_lateness_p99_ms", "{:.2f}"
    )
    row("timeline |actual-scheduled| p99 ms: events", "timeline_event_p99_ms", "{:.2f}", "< 5")
    row("timeline |actual-scheduled| p99 ms: drip", "timeline_drip_p99_ms", "{:.2f}", "< 5")
    row("timeline |actual-scheduled| p99 ms: hang end", "timeline_hang_end_p99_ms", "{:.2f}", "< 5")
    row("timeline |actual-scheduled| p99 ms: all", "timeline_all_p99_ms", "{:.2f}", "< 5")
    console.print(table)
    for fig in result.servers:
        console.print(
            f"  {fig.name}: events/s runs {[round(x) for x in fig.runs_events_per_s]}, "
            f"CPU µs/event runs {[round(x, 1) for x in fig.runs_cpu_us_per_event]} {fig.notes}"
        )
    console.print(
        f"  {result.cpus}; timing phases at {result.timing_priority} priority; loadavg before {tuple(round(x, 2) for x in result.loadavg_before)}, "
        f"after {tuple(round(x, 2) for x in result.loadavg_after)}"
    )


# --------------------------------------------------------------------------- measurement


async def _measure_one(
    child: _Child,
    *,
    held: int,
    runs: int,
    streams: int,
    concurrency: int,
    paced_streams: int,
    paced_events: int,
    hold_s: float,
    timing_priority: str,
) -> ServerFigures:
    # 1. held at once: long paced streams, all opened together
    hold_events = 20
    hold_interval = hold_s / hold_events
    child.configure(events=hold_events, interval_s=hold_interval)
    held_stats = await _run_streams(
        child, total=held, concurrency=held, interval_s=hold_interval, events=hold_events
    )

    # 2. throughput: unpaced streams, median of runs
    child.configure(events=DEFAULT_EVENTS, interval_s=0.0)
    eps, cpu_us, t_errors = [], [], 0
    for _ in range(runs):
        cpu0 = child.cpu_seconds()
        stats = await _run_streams(
            child, total=streams, concurrency=concurrency, interval_s=0.0, events=DEFAULT_EVENTS
        )
        cpu = child.cpu_seconds() - cpu0
        eps.append(stats.events / stats.wall_s if stats.wall_s > 0 else 0.0)
        cpu_us.append(cpu / stats.events * 1e6 if stats.events else float("nan"))
        t_errors += stats.errors

    # 3. paced lateness seen by the client (and ours: from its own timeline)
    child.configure(events=paced_events, interval_s=PACED_INTERVAL_S)
    child.reset()
    child.prioritize(timing_priority)
    _prioritize(os.getpid(), timing_priority)
    paced = await _run_streams(
        child,
        total=paced_streams,
        concurrency=paced_streams,
        interval_s=PACED_INTERVAL_S,
        events=paced_events,
    )
    lateness = sorted(paced.lateness)
    figures: dict[str, Any] = {}
    if child.kind == "ours":
        event_errs = _timeline_errors(child.timeline(), "event_sent")
        # 4. faults at 100 concurrent paced streams: drip comments, then hang ends
        n_fault = max(2, paced_events // 5)
        drip_s = PACED_INTERVAL_S * paced_events / 2
        child.configure(
            events=paced_events,
            interval_s=PACED_INTERVAL_S,
            rules=[
                {
                    "fault": {
                        "phase": f"event:{n_fault}",
                        "action": "drip",
                        "interval_s": PACED_INTERVAL_S,
                        "duration_s": drip_s,
                    }
                }
            ],
        )
        await _run_streams(
            child,
            total=paced_streams,
            concurrency=paced_streams,
            interval_s=PACED_INTERVAL_S,
            events=paced_events,
            expect_done=False,
        )
        drip_errs = _timeline_errors(child.timeline(), "comment_sent")
        child.configure(
            events=paced_events,
            interval_s=PACED_INTERVAL_S,
            rules=[
                {"fault": {"phase": f"event:{n_fault}", "action": "hang", "duration_s": drip_s}}
            ],
        )
        await _run_streams(
            child,
            total=paced_streams,
            concurrency=paced_streams,
            interval_s=PACED_INTERVAL_S,
            events=paced_events,
            expect_done=False,
        )
        hang_errs = _hang_end_errors(child.timeline(), drip_s)
    child.prioritize("none")
    _prioritize(os.getpid(), "none")
    if child.kind == "ours":
        all_errs = event_errs + drip_errs + hang_errs
        figures = {
            "timeline_event_p99_ms": percentile(event_errs, 99) * 1000,
            "timeline_drip_p99_ms": percentile(drip_errs, 99) * 1000,
            "timeline_hang_end_p99_ms": percentile(hang_errs, 99) * 1000,
            "timeline_all_p99_ms": percentile(all_errs, 99) * 1000,
        }
    return ServerFigures(
        name=child.kind,
        held_peak=held_stats.peak_open,
        held_errors=held_stats.errors,
        events_per_s=statistics.median(eps),
        cpu_us_per_event=statistics.median(cpu_us),
        runs_events_per_s=tuple(eps),
        runs_cpu_us_per_event=tuple(cpu_us),
        throughput_errors=t_errors,
        client_lateness_p50_ms=percentile(lateness, 50) * 1000,
        client_lateness_p99_ms=percentile(lateness, 99) * 1000,
        notes=child.notes,
        **figures,
    )


@dataclass
class _Stats:
    events: int = 0
    errors: int = 0
    open: int = 0
    peak_open: int = 0
    wall_s: float = 0.0
    lateness: list[float] = field(default_factory=list)
    error_kinds: dict[str, int] = field(default_factory=dict)


async def _run_streams(
    child: _Child,
    *,
    total: int,
    concurrency: int,
    interval_s: float,
    events: int,
    expect_done: bool = True,
) -> _Stats:
    stats = _Stats()
    sem = asyncio.Semaphore(concurrency)
    request = _request_bytes(child.port, events=events, interval_s=interval_s)
    t0 = time.monotonic()
    await asyncio.gather(
        *(
            _one_stream(child.port, request, sem, stats, interval_s, expect_done)
            for _ in range(total)
        )
    )
    stats.wall_s = time.monotonic() - t0
    return stats


async def _one_stream(
    port: int,
    request: bytes,
    sem: asyncio.Semaphore,
    stats: _Stats,
    interval_s: float,
    expect_done: bool,
) -> None:
    async with sem:
        writer = None
        counted_open = False
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(request)
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
            if not head.startswith(b"HTTP/1.1 200"):
                raise RuntimeError(head[:40].decode("latin-1"))
            stats.open += 1
            counted_open = True
            stats.peak_open = max(stats.peak_open, stats.open)
            offsets: list[float] = []  # arrival - i * interval, per event
            n = 0
            tail = b""
            while True:
                data = await asyncio.wait_for(reader.read(65536), 30)
                now = time.monotonic()
                if not data:
                    if expect_done:
                        raise RuntimeError("EOF before [DONE]")
                    break
                window = tail + data
                new = window.count(b"data: ") - tail.count(b"data: ")
                for _ in range(new):
                    offsets.append(now - n * interval_s)
                    n += 1
                stats.events += new
                if b"[DONE]" in window:
                    break
                tail = window[-16:]
            if interval_s > 0 and offsets:
                # the stream's schedule as the client sees it: its earliest offset
                anchor = min(offsets)
                stats.lateness.extend(o - anchor for o in offsets)
        except (TimeoutError, OSError, asyncio.IncompleteReadError, RuntimeError) as exc:
            stats.errors += 1
            key = type(exc).__name__
            stats.error_kinds[key] = stats.error_kinds.get(key, 0) + 1
        finally:
            if counted_open:
                stats.open -= 1
            if writer is not None:
                writer.close()


def _request_bytes(port: int, *, events: int, interval_s: float) -> bytes:
    body = json.dumps(REQUEST_BODY).encode()
    return (
        f"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n"
        f"x-bench-events: {events}\r\nx-bench-interval: {interval_s}\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode() + body


def _timeline_errors(events: list[dict[str, Any]], kind: str) -> list[float]:
    return [
        abs(e["t"] - e["detail"]["scheduled"])
        for e in events
        if e["kind"] == kind and "scheduled" in e["detail"]
    ]


def _hang_end_errors(events: list[dict[str, Any]], duration_s: float) -> list[float]:
    fired: dict[tuple[int, Any], float] = {}
    errs = []
    for e in events:
        key = (e["conn"], e["request"])
        if e["kind"] == "fault" and e["detail"].get("action") == "hang":
            fired[key] = e["t"]
        elif e["kind"] == "closed" and e["detail"].get("reason") == "hang ended" and key in fired:
            errs.append(abs(e["t"] - (fired[key] + duration_s)))
    return errs


# --------------------------------------------------------------------------- server children


class _Child:
    """One server in a child process pinned to ``cpu``; ``kind`` is ours or baseline."""

    def __init__(self, kind: str, cpu: int | None) -> None:
        self.kind = kind
        self.cpu = cpu
        self.port = 0
        self.notes = ""
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> _Child:
        args = [sys.executable, "-m", "harness.bench.server", "--child", self.kind]
        if self.cpu is not None:
            args += ["--cpu", str(self.cpu)]
        self._proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        line = self._proc.stdout.readline()  # type: ignore[union-attr]
        if not line:
            self._proc.wait()
            raise RuntimeError(f"bench {self.kind} server did not start")
        info = json.loads(line)
        self.port, self.notes = info["port"], info.get("notes", "")
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._proc is not None:
            self._proc.send_signal(signal.SIGTERM)
            self._proc.wait()
            if self._proc.stdout is not None:
                self._proc.stdout.close()

    def prioritize(self, priority: str) -> None:
        if self._proc is not None:
            _prioritize(self._proc.pid, priority)

    def cpu_seconds(self) -> float:
        assert self._proc is not None
        with open(f"/proc/{self._proc.pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime

    def configure(self, *, events: int, interval_s: float, rules: list[Any] | None = None) -> None:
        if self.kind != "ours":
            return  # the baseline reads x-bench-* headers per request
        script = {"events": events, "event_interval_s": interval_s, "rules": rules or []}
        self._control("PUT", "script", {"script": script})

    def reset(self) -> None:
        if self.kind == "ours":
            self._control("POST", "reset", {})

    def timeline(self) -> list[dict[str, Any]]:
        return self._control("GET", "timeline", None)["events"]

    def _control(self, method: str, route: str, doc: Any) -> Any:
        data = None if doc is None else json.dumps(doc).encode()
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/_harness/{route}",
            data=data,
            method=method,
            headers={"content-type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=30) as resp:  # loopback control API only
            return json.loads(resp.read())


def _prioritize(pid: int, priority: str) -> None:
    """Apply ``priority`` to every thread of ``pid`` (Linux scheduling is per thread);
    ``none`` restores SCHED_OTHER at nice 0."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            if priority == "realtime":
                os.sched_setscheduler(int(tid), os.SCHED_FIFO, os.sched_param(TIMING_RT_PRIORITY))
            else:
                os.sched_setscheduler(int(tid), os.SCHED_OTHER, os.sched_param(0))
                os.setpriority(os.PRIO_PROCESS, int(tid), TIMING_NICE if priority == "nice" else 0)
        except ProcessLookupError:
            continue  # a thread that just ended


def _timing_priority(requested: str | None) -> str:
    """``requested``, else realtime when allowed (root), else none."""
    if requested is not None:
        if requested not in TIMING_PRIORITIES:
            raise ValueError(
                f"timing_priority: {requested!r} is not valid; allowed: {', '.join(TIMING_PRIORITIES)}"
            )
        return requested
    return "realtime" if os.geteuid() == 0 else "none"


def _child_main(kind: str, cpu: int | None) -> int:
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    if kind == "ours":
        from harness.server import FaultServer

        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
        with FaultServer() as srv:
            print(
                json.dumps({"port": srv.port, "notes": "(asyncio, raw sockets, h11 parsing)"}),
                flush=True,
            )
            signal.sigwait({signal.SIGTERM, signal.SIGINT})
        return 0
    return _baseline_main()


def _baseline_main() -> int:
    """A minimal uvicorn + starlette SSE server producing the same chunk bytes."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    from harness.server.apis import plan_reply

    async def chat(request: Request) -> StreamingResponse:
        body = await request.json()
        events = int(request.headers.get("x-bench-events", "8"))
        interval = float(request.headers.get("x-bench-interval", "0"))
        plan = plan_reply("chat", body, events=events)

        async def gen():  # same schedule as ours: absolute deadlines from the first event
            loop = asyncio.get_running_loop()
            t0 = loop.time()
            for i, unit in enumerate(plan.units):
                delay = t0 + i * interval - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                yield unit

        return StreamingResponse(gen(), media_type="text/event-stream")

    app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(4096)
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, backlog=4096, lifespan="off"
    )
    server = uvicorn.Server(config)
    impl = f"(uvicorn {uvicorn.__version__}, http={config.http}, loop={config.loop})"
    print(json.dumps({"port": sock.getsockname()[1], "notes": impl}), flush=True)
    asyncio.run(server.serve(sockets=[sock]))
    return 0


if __name__ == "__main__":
    _p = argparse.ArgumentParser()
    _p.add_argument("--child", choices=("ours", "baseline"), required=True)
    _p.add_argument("--cpu", type=int)
    _a = _p.parse_args()
    raise SystemExit(_child_main(_a.child, _a.cpu))
