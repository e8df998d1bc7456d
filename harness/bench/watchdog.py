"""``harness bench watchdog``: how late does each deadline fire? Ours vs a polling watchdog.

For each deadline (first byte, stream idle, stale call, hard ceiling) the benchmark runs
at least 200 calls against a fault server that triggers exactly that deadline, and
measures *detection latency*: the time the caller gets the error minus the time the
deadline was due. It does the same with the design that motivated this project: a
worker thread makes the request while the caller polls it with ``join(timeout=0.3)``
and checks the deadlines on each wake-up. Both stacks keep their deadline books with the
same :class:`~harness.client.deadlines.DeadlineState` and abort the same way
(``shutdown(SHUT_RDWR)``); only the enforcement differs, so the ratio isolates it.

Deadline lengths are drawn per run as ``base_s + U(0, poll_s)`` (one seeded sequence for
both stacks), so the polling loop's phase is spread as it is in real life. The fault
server runs in a child process pinned to another CPU when there are two; calls run
``concurrency`` at a time (default 2: with more in flight the threads queue for the GIL
and both stacks' tails grow). The polling baseline lives only here.

Not here: the client itself (``harness.client``), the CLI wiring (``harness.cli``).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import threading
import time
import urllib.request
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from typing import Any

from harness.bench.common import finish, percentile, whole_numbers
from harness.client import ClientSettings, Components, ReferenceClient, errors
from harness.client.deadlines import DeadlineState
from harness.client.transport import TransportFactory
from harness.client.watchdog import Watchdog
from harness.sse import Comment, SSEDecoder

__all__ = [
    "DEFAULT_BASE_S",
    "DEFAULT_CONCURRENCY",
    "DEFAULT_POLL_S",
    "DEFAULT_RUNS",
    "DeadlineFigures",
    "WatchdogBenchResult",
    "measure_watchdog",
    "render_watchdog_table",
    "run_watchdog_bench",
]

DEFAULT_RUNS = 200
DEFAULT_POLL_S = 0.3
DEFAULT_BASE_S = 0.03
DEFAULT_CONCURRENCY = 2  # more in flight: threads queue for the GIL, tails grow for both stacks
DEFAULT_WARMUP = 3
TARGET_P99_OVERSHOOT_S = 0.020
USER = [{"role": "user", "content": "bench"}]

#: deadline -> (fault that triggers only it, the other deadlines off)
SCENARIOS: dict[str, dict[str, Any]] = {
    "first_byte_s": {"phase": "request", "action": "hang"},
    "stream_idle_s": {"phase": "event:3", "action": "hang"},
    "stale_call_s": {"phase": "event:3", "action": "drip", "interval_s": 0.005},
    "hard_ceiling_s": {"phase": "request", "action": "hang"},
}


@dataclass(frozen=True)
class DeadlineFigures:
    """Detection latencies (seconds) of one deadline for both stacks."""

    deadline: str
    ours: tuple[float, ...]
    polling: tuple[float, ...]

    pct = staticmethod(percentile)

    def summary(self) -> dict[str, float]:
        o50, o99 = self.pct(self.ours, 50), self.pct(self.ours, 99)
        p50, p99 = self.pct(self.polling, 50), self.pct(self.polling, 99)
        return {
            "ours_p50_ms": o50 * 1000,
            "ours_p99_ms": o99 * 1000,
            "polling_p50_ms": p50 * 1000,
            "polling_p99_ms": p99 * 1000,
            "ratio_p50": p50 / o50 if o50 > 0 else float("inf"),
            "ratio_p99": p99 / o99 if o99 > 0 else float("inf"),
        }


@dataclass(frozen=True)
class WatchdogBenchResult:
    runs: int
    concurrency: int
    poll_s: float
    base_s: float
    loadavg_before: tuple[float, float, float]
    server_cpu: int | None
    figures: list[DeadlineFigures] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Every field as it is, but the figures: summarised per deadline."""
        plain = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "figures"}
        return {
            **plain,
            "loadavg_before": list(self.loadavg_before),
            "deadlines": {f.deadline: f.summary() for f in self.figures},
        }


def run_watchdog_bench(argv: Sequence[str] | None = None) -> int:
    """CLI entry (``harness bench watchdog [--runs N] [--concurrency C] [--json PATH]``)."""
    parser = argparse.ArgumentParser(
        prog="harness bench watchdog", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--runs",
        type=int,
        default=DEFAULT_RUNS,
        help=f"calls per deadline per stack (default {DEFAULT_RUNS})",
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=DEFAULT_CONCURRENCY,
        help=f"calls in flight at once (default {DEFAULT_CONCURRENCY})",
    )
    parser.add_argument(
        "--poll-s",
        type=float,
        default=DEFAULT_POLL_S,
        help="the baseline's join timeout (default 0.3)",
    )
    parser.add_argument(
        "--base-s", type=float, default=DEFAULT_BASE_S, help="shortest deadline (default 0.03)"
    )
    parser.add_argument("--seed", type=int, default=1, help="seed of the deadline lengths")
    parser.add_argument(
        "--warmup",
        type=int,
        default=DEFAULT_WARMUP,
        help="uncounted calls per cell first (default 3)",
    )
    parser.add_argument(
        "--no-pin",
        action="store_true",
        help="do not pin the server and the client to separate CPUs",
    )
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args(list(argv or []))
    whole_numbers(parser, args, ("runs", "concurrency"))
    if args.poll_s <= 0 or args.base_s <= 0:
        parser.error("--poll-s and --base-s: allowed: a number of seconds > 0")
    result = measure_watchdog(
        runs=args.runs,
        concurrency=args.concurrency,
        poll_s=args.poll_s,
        base_s=args.base_s,
        seed=args.seed,
        warmup=max(0, args.warmup),
        pin=not args.no_pin,
    )
    return finish(result, render_watchdog_table, args.json)


def measure_watchdog(
    *,
    runs: int = DEFAULT_RUNS,
    concurrency: int = DEFAULT_CONCURRENCY,
    poll_s: float = DEFAULT_POLL_S,
    base_s: float = DEFAULT_BASE_S,
    seed: int = 1,
    deadlines: Sequence[str] = tuple(SCENARIOS),
    base_url: str | None = None,
    warmup: int = DEFAULT_WARMUP,
    pin: bool = True,
) -> WatchdogBenchResult:
    """Measure both stacks; starts (and stops) its own fault server unless ``base_url``.
    ``pin``: the server on the last CPU, this process on the others, so the two do not share a core."""
    loadavg = os.getloadavg()
    server = None if base_url is not None else _ServerProcess(pin=pin)
    try:
        url = base_url or server.base_url  # type: ignore[union-attr]
        figures = []
        for name in deadlines:
            _load_script(url, {"rules": [{"fault": SCENARIOS[name]}]})
            rng = random.Random(f"{seed}:{name}")
            lengths = [base_s + rng.uniform(0.0, poll_s) for _ in range(runs)]
            ours_run = lambda d, n=name: _reference_run(url, _settings(n, d))  # noqa: E731
            polling_run = lambda d, n=name: _polling_run(url, _settings(n, d), poll_s)  # noqa: E731
            for _ in range(warmup):  # first calls take cold code paths (lazy imports): not counted
                ours_run(base_s)
                polling_run(base_s)
            ours = _run_all(ours_run, lengths, concurrency)
            polling = _run_all(polling_run, lengths, concurrency)
            figures.append(DeadlineFigures(name, tuple(ours), tuple(polling)))
    finally:
        if server is not None:
            server.stop()
    return WatchdogBenchResult(
        runs, concurrency, poll_s, base_s, loadavg, None if server is None else server.cpu, figures
    )


def render_watchdog_table(result: WatchdogBenchResult, console: Any = None) -> None:
    """One side-by-side rich table: ours vs polling, p50 and p99 per deadline, and ratios."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console(width=max(Console().width, 118))
    table = Table(
        title=f"watchdog detection latency (error time - deadline): {result.runs} runs per cell, "
        f"{result.concurrency} in flight, polling = join(timeout={result.poll_s:g}) loop"
    )
    for col in (
        "deadline",
        "ours p50",
        "ours p99",
        "poll p50",
        "poll p99",
        "ratio p50",
        "ratio p99",
        f"p99<{TARGET_P99_OVERSHOOT_S * 1000:g}ms",
    ):
        table.add_column(col, justify="left" if col == "deadline" else "right", no_wrap=True)
    for fig in result.figures:
        s = fig.summary()
        ok = s["ours_p99_ms"] < TARGET_P99_OVERSHOOT_S * 1000
        table.add_row(
            fig.deadline,
            f"{s['ours_p50_ms']:.2f} ms",
            f"{s['ours_p99_ms']:.2f} ms",
            f"{s['polling_p50_ms']:.1f} ms",
            f"{s['polling_p99_ms']:.1f} ms",
            f"{s['ratio_p50']:.0f}x",
            f"{s['ratio_p99']:.0f}x",
            "[green]yes[/green]" if ok else "[red]no[/red]",
        )
    console.print(table)
    load = ", ".join(f"{x:.2f}" for x in result.loadavg_before)
    where = (
        f"server pinned to CPU {result.server_cpu}"
        if result.server_cpu is not None
        else "server unpinned"
    )
    console.print(f"load average before: {load}; {where}; cores: {os.cpu_count()}")


# --------------------------------------------------------------------------- the two stacks


def _settings(deadline: str, length_s: float) -> ClientSettings:
    off = {
        "first_byte_s": None,
        "stream_idle_s": None,
        "stale_call_s": None,
        "hard_ceiling_s": None,
    }
    return ClientSettings(**{**off, deadline: length_s}, max_attempts=1, read_timeout_s=30.0)


def _reference_run(base_url: str, settings: ClientSettings) -> float:
    watchdogs: list[Watchdog] = []

    def capture(state: DeadlineState, **kwargs: Any) -> Watchdog:
        wd = Watchdog(state, **kwargs)
        watchdogs.append(wd)
        return wd

    client = ReferenceClient(
        base_url, settings=settings, components=Components(watchdog_factory=capture)
    )
    client.sdk  # noqa: B018 -- build the SDK client before the clock starts, as the baseline does
    try:
        client.complete(USER)
    except errors.StallError:
        raised_at = time.monotonic()
    else:
        raise RuntimeError("bench call succeeded: the fault server did not stall it")
    finally:
        client.close()
    wd = watchdogs[0]
    # Fired by the watchdog thread, or (a ceiling shorter than building the SDK client)
    # found already past when the attempt was about to start.
    deadline = wd.fired[0][0] if wd.fired else wd.state.next_deadline()
    assert deadline is not None
    return raised_at - deadline.at


def _polling_run(base_url: str, settings: ClientSettings, poll_s: float) -> float:
    """The baseline: a worker thread streams; the caller polls it with join(timeout=poll_s)
    and checks the same deadline state on every wake-up."""
    owned = TransportFactory().build(
        base_url=base_url, api_key="bench", sdk_kwargs={}, settings=settings
    )
    lock = threading.Lock()
    state = DeadlineState(settings, call_started_at=time.monotonic())
    state.start_attempt(time.monotonic())

    worker_errors: list[BaseException] = []

    def worker() -> None:
        try:
            with owned.sdk.chat.completions.with_streaming_response.create(
                model="test-model", messages=USER, stream=True
            ) as raw:
                decoder = SSEDecoder()
                for chunk in raw.http_response.iter_bytes():
                    for item in decoder.feed(chunk):
                        with lock:
                            (state.comment if isinstance(item, Comment) else state.content)(
                                time.monotonic()
                            )
        except Exception as exc:  # the kill surfaces here as a transport error: expected
            worker_errors.append(exc)

    thread = threading.Thread(target=worker, name="bench-polling-worker")
    thread.start()
    fired = None
    while thread.is_alive():
        thread.join(timeout=poll_s)
        with lock:
            due = state.expired(time.monotonic())
        if due is not None and fired is None:
            fired = due
            owned.abort()
    raised_at = time.monotonic()
    owned.close()
    if fired is None:
        raise RuntimeError(f"bench call ended without a deadline firing: {worker_errors!r}")
    return raised_at - fired.at


def _run_all(
    run: Callable[[float], float], lengths: Sequence[float], concurrency: int
) -> list[float]:
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="bench") as pool:
        return list(pool.map(run, lengths))


# --------------------------------------------------------------------------- the server process


class _ServerProcess:
    """A FaultServer in a child process, pinned to the last CPU when there are two."""

    def __init__(self, *, pin: bool = True) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._parent, child = ctx.Pipe()
        cpus = os.cpu_count() or 1
        self.cpu = cpus - 1 if pin and cpus > 1 and hasattr(os, "sched_setaffinity") else None
        self._proc = ctx.Process(target=_serve, args=(child, self.cpu), daemon=True)
        self._proc.start()
        if not self._parent.poll(30):
            self._proc.kill()
            raise RuntimeError("bench fault server did not start within 30 s")
        self.base_url = self._parent.recv()
        if self.cpu is not None:
            os.sched_setaffinity(0, set(range(self.cpu)) or {0})

    def stop(self) -> None:
        self._parent.send("stop")
        self._proc.join()
        if self.cpu is not None:
            os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))


def _serve(conn: Any, cpu: int | None) -> None:
    from harness.server import FaultServer

    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    with FaultServer() as srv:
        conn.send(srv.base_url)
        conn.recv()  # block until told to stop


def _load_script(base_url: str, script: dict[str, Any]) -> None:
    url = base_url.rsplit("/v1", 1)[0] + "/_harness/script"
    body = json.dumps({"script": script}).encode()
    req = urllib.request.Request(
        url, data=body, method="PUT", headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=10) as resp:  # loopback control API only
        resp.read()
