"""``harness bench netem``: dead-peer detection vs the keepalive formula, and the cost of a
Toxiproxy hop, side by side in one run.

Part 1 (kernel; root + ``ip netns``): for several client settings, a real dead path
(:func:`harness.netem.deadpeer.run_dead_peer`: link down, no FIN, no RST) and the time from
the cut to the client's error, against what the kernel settings promise:
``idle + interval x count`` while the client only waits, TCP_USER_TIMEOUT once its
request is in flight. A row without a bound shows how long the client stayed stuck
(until the ceiling).

Part 2 (Toxiproxy binary): the same streamed call (the fault server, 50 events, healthy)
made directly and through a Toxiproxy proxy with no toxics, interleaved call by call so
background load moves both columns together; time to first event and to the end of the
stream, medians and p95, and what the hop adds.

Each configuration runs ``runs`` times (median reported); the background load average is
printed. Not here: the backends themselves (``harness.netem``), CLI wiring
(``harness.cli``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = [
    "DEFAULT_CALLS",
    "DEFAULT_DEAD_PEER_CASES",
    "DEFAULT_RUNS",
    "DeadPeerRow",
    "HopRow",
    "NetemBenchResult",
    "main",
    "render_netem_tables",
    "run_netem_bench",
]

DEFAULT_RUNS = 3
DEFAULT_CALLS = 30
DEFAULT_EVENTS = 50
#: (label, shape, keepalive (idle, interval, count) or None, TCP_USER_TIMEOUT s or None)
DEFAULT_DEAD_PEER_CASES: tuple[tuple[str, str, tuple[int, int, int] | None, float | None], ...] = (
    ("keepalive 1/1/2", "waiting", (1, 1, 2), None),
    ("keepalive 1/1/3", "waiting", (1, 1, 3), None),
    ("keepalive 2/1/2", "waiting", (2, 1, 2), None),
    ("keepalive 1/2/2", "waiting", (1, 2, 2), None),
    ("bare (no keepalive)", "waiting", None, None),
    ("keepalive 1/1/2 + UTO 3s", "in_flight", (1, 1, 2), 3.0),
    ("keepalive 1/1/2, no UTO", "in_flight", (1, 1, 2), None),
)


@dataclass(frozen=True)
class DeadPeerRow:
    label: str
    shape: str
    expected_s: float | None
    detect_s: tuple[float, ...]  # runs that detected
    hung: int
    ceiling_s: float
    errnos: tuple[int | None, ...] = ()

    @property
    def median_s(self) -> float | None:
        return statistics.median(self.detect_s) if self.detect_s else None


@dataclass(frozen=True)
class HopRow:
    path: str
    ttfb_s: tuple[float, ...]
    total_s: tuple[float, ...]


@dataclass(frozen=True)
class NetemBenchResult:
    dead_peer: tuple[DeadPeerRow, ...] = ()
    hops: tuple[HopRow, ...] = ()
    skipped: tuple[str, ...] = ()
    load: tuple[float, float, float] = field(default=(0.0, 0.0, 0.0))


def run_netem_bench(
    *,
    runs: int = DEFAULT_RUNS,
    calls: int = DEFAULT_CALLS,
    events: int = DEFAULT_EVENTS,
    cases: Sequence[
        tuple[str, str, tuple[int, int, int] | None, float | None]
    ] = DEFAULT_DEAD_PEER_CASES,
    ceiling_margin_s: float = 4.0,
    kernel: bool = True,
    toxiproxy: bool = True,
) -> NetemBenchResult:
    """Measure both parts (each skipped with a reason when its prerequisite is missing)."""
    from harness.netem.prereq import netns_missing, toxiproxy_missing

    skipped: list[str] = []
    dead: list[DeadPeerRow] = []
    hops: list[HopRow] = []
    if kernel:
        reason = netns_missing()
        if reason:
            skipped.append(f"dead-peer detection: {reason}")
        else:
            dead = [_dead_peer_row(c, runs=runs, margin_s=ceiling_margin_s) for c in cases]
    if toxiproxy:
        reason = toxiproxy_missing()
        if reason:
            skipped.append(f"Toxiproxy hop: {reason}")
        else:
            hops = _hop_rows(calls=calls, events=events)
    return NetemBenchResult(tuple(dead), tuple(hops), tuple(skipped), os.getloadavg())


def render_netem_tables(result: NetemBenchResult, console=None) -> None:
    """Print the two tables with rich."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console(width=max(110, Console().width))
    if result.dead_peer:
        t = Table(
            title="Dead peer (link down, no FIN/RST): detection after the cut vs the kernel bound"
        )
        for col in ("client", "shape", "bound s", "median s", "range s", "over", "hung", "errno"):
            t.add_column(col, justify="right" if col not in ("client", "shape") else "left")
        for r in result.dead_peer:
            med = r.median_s
            t.add_row(
                r.label,
                "in flight" if r.shape == "in_flight" else "waiting",
                "-" if r.expected_s is None else f"{r.expected_s:.1f}",
                "-" if med is None else f"{med:.2f}",
                f"{min(r.detect_s):.2f}-{max(r.detect_s):.2f}" if r.detect_s else "-",
                "-" if (med is None or r.expected_s is None) else f"{med - r.expected_s:+.2f}",
                f"{r.hung}/{r.hung + len(r.detect_s)} >{r.ceiling_s:.0f}s" if r.hung else "0",
                ",".join(sorted({str(e) for e in r.errnos})) or "-",
            )
        console.print(t)
    if result.hops:
        base = result.hops[0]
        t = Table(
            title=f"Toxiproxy hop (no toxics) vs direct: {len(base.total_s)} interleaved streamed calls, ms"
        )
        for col in (
            "path",
            "1st event p50",
            "p95",
            "stream p50",
            "p95",
            "added 1st p50",
            "added stream p50",
        ):
            t.add_column(col, justify="left" if col == "path" else "right")
        for h in result.hops:
            first, total = _ms(statistics.median(h.ttfb_s)), _ms(statistics.median(h.total_s))
            t.add_row(
                h.path,
                f"{first:.2f}",
                f"{_ms(_p95(h.ttfb_s)):.2f}",
                f"{total:.2f}",
                f"{_ms(_p95(h.total_s)):.2f}",
                "-" if h is base else f"{first - _ms(statistics.median(base.ttfb_s)):+.2f}",
                "-" if h is base else f"{total - _ms(statistics.median(base.total_s)):+.2f}",
            )
        console.print(t)
    for s in result.skipped:
        console.print(f"[yellow]skipped[/yellow] {s}")
    console.print(
        f"load average: {result.load[0]:.2f} {result.load[1]:.2f} {result.load[2]:.2f} on {os.cpu_count()} CPUs"
    )


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="harness bench netem", description=__doc__.splitlines()[0])
    p.add_argument(
        "--runs", type=int, default=DEFAULT_RUNS, help="runs per dead-peer setting (median)"
    )
    p.add_argument("--calls", type=int, default=DEFAULT_CALLS, help="calls per path for the hop")
    p.add_argument("--events", type=int, default=DEFAULT_EVENTS, help="SSE events per call")
    p.add_argument("--no-kernel", action="store_true", help="skip the dead-peer part")
    p.add_argument("--no-toxiproxy", action="store_true", help="skip the Toxiproxy part")
    args = p.parse_args(list(argv) if argv is not None else None)
    if args.runs < 1 or args.calls < 1 or args.events < 1:
        p.error("--runs, --calls and --events must be >= 1")
    result = run_netem_bench(
        runs=args.runs,
        calls=args.calls,
        events=args.events,
        kernel=not args.no_kernel,
        toxiproxy=not args.no_toxiproxy,
    )
    render_netem_tables(result)
    return 0


# --------------------------------------------------------------------------- helpers


def _dead_peer_row(case, *, runs: int, margin_s: float) -> DeadPeerRow:
    from harness.faults.network.kernel import KeepaliveSettings, KernelSettings
    from harness.netem.deadpeer import run_dead_peer

    label, shape, ka, uto = case
    settings = KernelSettings(
        shape=shape,
        keepalive=KeepaliveSettings(*ka) if ka else None,
        user_timeout_s=uto,
    )
    bound = settings.expected_detection_s
    # Unbounded rows: show they are stuck past the 1/1/2 bound with room to spare.
    ceiling = (bound if bound is not None else 3.0) + margin_s
    detected: list[float] = []
    errnos: list[int | None] = []
    hung = 0
    for _ in range(runs):
        r = run_dead_peer(settings, ceiling_s=ceiling)
        if r.outcome == "detected" and r.detect_s is not None:
            detected.append(r.detect_s)
            errnos.append(r.errno)
        else:
            hung += 1
    return DeadPeerRow(label, shape, bound, tuple(detected), hung, ceiling, tuple(errnos))


def _hop_rows(*, calls: int, events: int) -> list[HopRow]:
    import httpx

    from harness.faults import script_from_dict
    from harness.netem.toxiproxy import ToxiproxyServer
    from harness.server import FaultServer

    body = {
        "model": "test-model",
        "stream": True,
        "messages": [{"role": "user", "content": "bench"}],
    }
    direct: tuple[list[float], list[float]] = ([], [])
    hop: tuple[list[float], list[float]] = ([], [])
    with FaultServer(script_from_dict({"events": events})) as srv, ToxiproxyServer() as tp:
        proxy = tp.proxy(upstream=("127.0.0.1", int(srv.url.rsplit(":", 1)[1])))
        with httpx.Client(timeout=10, trust_env=False) as client:
            for base in (srv.base_url, proxy.base_url):  # warm both paths
                _one_call(client, base, body)
            for _ in range(calls):
                for base, (ttfb, total) in ((srv.base_url, direct), (proxy.base_url, hop)):
                    a, b = _one_call(client, base, body)
                    ttfb.append(a)
                    total.append(b)
    return [
        HopRow("direct", tuple(direct[0]), tuple(direct[1])),
        HopRow("through Toxiproxy", tuple(hop[0]), tuple(hop[1])),
    ]


def _one_call(client, base_url: str, body: dict) -> tuple[float, float]:
    started = time.perf_counter()
    first: float | None = None
    with client.stream("POST", base_url + "/chat/completions", json=body) as resp:
        for line in resp.iter_lines():
            if first is None and line.startswith("data: "):
                first = time.perf_counter()
    end = time.perf_counter()
    return (first or end) - started, end - started


def _ms(seconds: float) -> float:
    return seconds * 1000.0


def _p95(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
