"""``harness bench proxy``: what the fault proxy's hop costs, next to a direct connection.

One run measures, interleaved (direct, proxied, direct, proxied, ... ``runs`` >= 3
times), against the same fault server as upstream:

* **first-event latency**: ``latency_requests`` sequential streamed requests, each on
  a fresh client connection and read to its end, from the request's first byte sent to
  the first SSE ``data:`` event received; p50 / p99, and the proxy's added p50;
* **CPU per event**: ``streams`` unpaced streams of ``events`` events, ``concurrency``
  at a time; process CPU seconds (from /proc) over events received, of the upstream
  and of the proxy. The hop's cost is the proxy's own CPU per event.

The upstream (``harness serve``) and the proxy (``harness proxy --upstream``, an empty
script) are child processes, the proxy pinned to another CPU than the upstream and the
load generator (a raw-socket asyncio client). Medians of the runs; the load average is
printed with the table. CPU time is counted in ticks (10 ms): keep events per cell
>= 50,000 for figures in whole microseconds.

Not here: the proxy (``harness.record``), the server benchmark (``bench/server.py``).
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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from harness.bench.common import finish, percentile, whole_numbers

__all__ = [
    "DEFAULT_RUNS",
    "HopFigures",
    "ProxyBenchResult",
    "measure_proxy",
    "render_proxy_table",
    "main",
]

DEFAULT_RUNS = 3
DEFAULT_LATENCY_REQUESTS = 200
DEFAULT_STREAMS = 500
DEFAULT_EVENTS = 100
DEFAULT_CONCURRENCY = 50
QUICK = {"runs": 3, "latency_requests": 10, "streams": 20, "events": 10, "concurrency": 5}
BODY = b'{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}'
START_TIMEOUT_S = 20.0
RT_PRIORITY = 10


@dataclass
class HopFigures:
    """One path (``direct`` or ``proxied``), medians over runs."""

    name: str
    first_event_p50_ms: float = float("nan")
    first_event_p99_ms: float = float("nan")
    upstream_cpu_us_per_event: float = float("nan")
    proxy_cpu_us_per_event: float | None = None
    events_per_s: float = float("nan")
    errors: int = 0
    runs_first_event_p50_ms: list[float] = field(default_factory=list)
    runs_proxy_cpu_us: list[float] = field(default_factory=list)


@dataclass
class ProxyBenchResult:
    direct: HopFigures
    proxied: HopFigures
    runs: int
    events_per_run: int
    load_avg: tuple[float, float, float]
    realtime: bool = False

    @property
    def added_first_event_ms(self) -> float:
        return self.proxied.first_event_p50_ms - self.direct.first_event_p50_ms

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["added_first_event_ms"] = self.added_first_event_ms
        return d


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry: ``harness bench proxy [--quick] [--runs N] [--streams N] [--json PATH]``."""
    parser = argparse.ArgumentParser(
        prog="harness bench proxy", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="small counts: a smoke test")
    for name, default in (
        ("runs", DEFAULT_RUNS),
        ("latency-requests", DEFAULT_LATENCY_REQUESTS),
        ("streams", DEFAULT_STREAMS),
        ("events", DEFAULT_EVENTS),
        ("concurrency", DEFAULT_CONCURRENCY),
    ):
        parser.add_argument(f"--{name}", type=int, help=f"(default {default})")
    parser.add_argument(
        "--no-realtime", action="store_true", help="do not run the latency phase at SCHED_FIFO"
    )
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args(list(argv or []))
    settings: dict[str, Any] = dict(QUICK) if args.quick else {}
    if args.no_realtime:
        settings["realtime"] = False
    names = ("runs", "latency_requests", "streams", "events", "concurrency")
    settings.update(whole_numbers(parser, args, names, least={"runs": 3}))
    result = measure_proxy(**settings)
    return finish(result, render_proxy_table, args.json)


def measure_proxy(
    *,
    runs: int = DEFAULT_RUNS,
    latency_requests: int = DEFAULT_LATENCY_REQUESTS,
    streams: int = DEFAULT_STREAMS,
    events: int = DEFAULT_EVENTS,
    concurrency: int = DEFAULT_CONCURRENCY,
    realtime: bool | None = None,
) -> ProxyBenchResult:
    """``realtime`` (default: when root) runs the latency phase at SCHED_FIFO: on a shared
    two-core machine the run queue, not the hop, otherwise sets the latency figure."""
    realtime = os.geteuid() == 0 if realtime is None else realtime
    cpus = sorted(os.sched_getaffinity(0))
    up_cpu, proxy_cpu = cpus[0], cpus[-1]
    raw: dict[str, list[dict[str, float]]] = {"direct": [], "proxied": []}
    with (
        _child(["serve"], up_cpu) as (up_url, up_pid),
        _child(["proxy", "--upstream", up_url], proxy_cpu) as (px_url, px_pid),
    ):
        _put_script(up_url, {"events": events})
        for _ in range(runs):
            for name, url in (("direct", up_url), ("proxied", px_url)):
                with _realtime([os.getpid(), up_pid, px_pid], enabled=realtime):
                    lat = _latencies(url, latency_requests)
                cpu0 = (_cpu_s(up_pid), _cpu_s(px_pid))
                t0 = time.monotonic()
                got, errors = asyncio.run(_throughput(url, streams, concurrency))
                wall = time.monotonic() - t0
                d_up, d_px = _cpu_s(up_pid) - cpu0[0], _cpu_s(px_pid) - cpu0[1]
                raw[name].append(
                    {
                        "p50": percentile(lat, 50) * 1000,
                        "p99": percentile(lat, 99) * 1000,
                        "up": d_up / max(1, got) * 1e6,
                        "px": d_px / max(1, got) * 1e6,
                        "eps": got / wall,
                        "errors": errors,
                    }
                )
    return ProxyBenchResult(
        realtime=realtime,
        direct=_figures("direct", raw["direct"], proxied=False),
        proxied=_figures("proxied", raw["proxied"], proxied=True),
        runs=runs,
        events_per_run=streams * (events + 3),
        load_avg=os.getloadavg(),
    )


def render_proxy_table(result: ProxyBenchResult, *, console: Any = None) -> None:
    from rich.console import Console
    from rich.table import Table

    if console is None:
        console = Console()
        if not console.is_terminal:
            console = Console(width=120)
    d, p = result.direct, result.proxied
    table = Table(title="harness bench proxy: fault proxy hop vs direct connection")
    table.add_column("measure")
    table.add_column("direct", justify="right")
    table.add_column("via harness proxy", justify="right")
    table.add_column("added by the hop", justify="right")

    def fmt(value: float | None, spec: str) -> str:
        return "-" if value is None else spec.format(value)

    def row(label: str, key: str, spec: str, added: float | None = None) -> None:
        """One figure: direct, proxied and (when given) what the hop added, signed."""
        signed = "" if added is None else fmt(added, spec.replace("{:", "{:+"))
        table.add_row(label, fmt(getattr(d, key), spec), fmt(getattr(p, key), spec), signed)

    p99_added = p.first_event_p99_ms - d.first_event_p99_ms
    row("first-event latency p50 ms", "first_event_p50_ms", "{:.2f}", result.added_first_event_ms)
    row("first-event latency p99 ms", "first_event_p99_ms", "{:.2f}", p99_added)
    row("upstream CPU µs per event", "upstream_cpu_us_per_event", "{:.1f}")
    # the direct path has no proxy: its figure is None ("-"), all of the proxy's is added
    row("proxy CPU µs per event", "proxy_cpu_us_per_event", "{:.1f}", p.proxy_cpu_us_per_event)
    row("events/s (throughput runs)", "events_per_s", "{:,.0f}")
    table.add_row("errors", str(d.errors), str(p.errors), "")
    console.print(table)
    console.print(
        f"  medians of {result.runs} interleaved runs, ~{result.events_per_run:,} events per run; "
        f"load average {result.load_avg[0]:.2f}; latency phase "
        f"{'SCHED_FIFO' if result.realtime else 'not prioritized'}; proxied p50 runs "
        f"{[round(x, 2) for x in p.runs_first_event_p50_ms]}, proxy CPU runs "
        f"{[round(x, 1) for x in p.runs_proxy_cpu_us]}"
    )


# --------------------------------------------------------------------------- helpers


def _figures(name: str, runs: list[dict[str, float]], *, proxied: bool) -> HopFigures:
    def med(key: str) -> float:
        return statistics.median(r[key] for r in runs)

    return HopFigures(
        name=name,
        first_event_p50_ms=med("p50"),
        first_event_p99_ms=med("p99"),
        upstream_cpu_us_per_event=med("up"),
        proxy_cpu_us_per_event=med("px") if proxied else None,
        events_per_s=med("eps"),
        errors=int(sum(r["errors"] for r in runs)),
        runs_first_event_p50_ms=[r["p50"] for r in runs],
        runs_proxy_cpu_us=[r["px"] for r in runs] if proxied else [],
    )


@contextmanager
def _child(args: list[str], cpu: int) -> Iterator[tuple[str, int]]:
    """``python -m harness ARGS`` pinned to ``cpu``; yields (its base URL, its pid)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", *args, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        os.sched_setaffinity(proc.pid, {cpu})
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if not line.startswith("http://"):
            raise RuntimeError(f"harness {args[0]} did not start (exit {proc.poll()})")
        yield line, proc.pid
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=START_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


@contextmanager
def _realtime(pids: Sequence[int], *, enabled: bool) -> Iterator[None]:
    """Every thread of ``pids`` at SCHED_FIFO inside the block (bounded by the kernel's
    RT throttling), back to SCHED_OTHER after."""
    if not enabled:
        yield
        return
    _schedule(pids, os.SCHED_FIFO, RT_PRIORITY)
    try:
        yield
    finally:
        _schedule(pids, os.SCHED_OTHER, 0)


def _schedule(pids: Sequence[int], policy: int, priority: int) -> None:
    for pid in pids:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                os.sched_setscheduler(int(tid), policy, os.sched_param(priority))
            except ProcessLookupError:
                continue  # a thread that just ended


def _put_script(base_url: str, script: dict[str, Any]) -> None:
    origin = base_url.rsplit("/v1", 1)[0]
    req = urllib.request.Request(
        origin + "/_harness/script", data=json.dumps({"script": script}).encode(), method="PUT"
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        resp.read()


def _request(base_url: str) -> tuple[tuple[str, int], bytes]:
    hostport, _, path = base_url.split("://", 1)[1].partition("/")
    host, port = hostport.rsplit(":", 1)
    head = (
        f"POST /{path}/chat/completions HTTP/1.1\r\nhost: {hostport}\r\n"
        f"content-type: application/json\r\ncontent-length: {len(BODY)}\r\n"
        "connection: close\r\n\r\n"
    ).encode()
    return (host, int(port)), head + BODY


def _latencies(base_url: str, n: int) -> list[float]:
    addr, request = _request(base_url)
    out = []
    for _ in range(n):
        with socket.create_connection(addr, timeout=10) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            t0 = time.perf_counter()
            sock.sendall(request)
            buf = b""
            while b"data:" not in buf or b"\n\n" not in buf.split(b"data:", 1)[1]:
                data = sock.recv(65536)
                if not data:
                    break
                buf += data
            out.append(time.perf_counter() - t0)
            # read the rest, as a client finishing its stream does: the proxy's upstream
            # connection then goes back to its pool (an abandoned stream costs a connect)
            while sock.recv(65536):
                pass
    return out


async def _throughput(base_url: str, streams: int, concurrency: int) -> tuple[int, int]:
    """Events received and errors over ``streams`` streams, ``concurrency`` in flight."""
    addr, request = _request(base_url)
    sem = asyncio.Semaphore(concurrency)
    events = errors = 0

    async def one() -> None:
        nonlocal events, errors
        async with sem:
            try:
                reader, writer = await asyncio.open_connection(*addr)
                writer.write(request)
                body = await reader.read(-1)  # connection: close: the body ends with EOF
                writer.close()
                if not body.rstrip().endswith(b"0"):
                    errors += 1
                events += body.count(b"data: ")
            except OSError:
                errors += 1

    await asyncio.gather(*(one() for _ in range(streams)))
    return events, errors


def _cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
