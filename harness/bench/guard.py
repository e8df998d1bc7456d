"""``harness bench guard``: what ``harness.guard`` costs an SDK on a healthy stream.

The bare OpenAI SDK and the same SDK with ``http_client=guard.http_client(openai)``
stream the same long healthy chat completions from the fault server, interleaved
round by round so a noisy machine moves both columns together:

- **CPU per event**: this process's CPU time (``time.process_time``: every thread,
  the guard's watchdog thread included) over the stream events the SDK yielded; the
  fault server runs in a child process pinned to the other core, so its CPU is not
  counted. The guard's overhead is the difference of the medians.
- **first-event latency**: from ``create()`` to the first chunk the SDK yields (p50).
- **the guard's own path, isolated**: the same body chunks (captured from the server
  once) through exactly what the guard adds per chunk (the watch's SSE decoding and
  marker rules, the watchdog report), CPU per event. On a loaded machine the SDK's
  own cost per event swings by more than the guard's whole cost between rounds, so
  this is the stable figure; the end-to-end difference is its noisy check.

Not here: deadline precision (``harness bench watchdog``), the server (``bench server``).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from harness.bench.common import finish, percentile, whole_numbers

__all__ = ["GuardBench", "main", "measure", "render"]

DEFAULT_ROUNDS = 5
DEFAULT_CALLS = 20
DEFAULT_EVENTS = 500
TARGET_OVERHEAD_US = 5.0
#: issue 27: SDK + guard CPU per event over the bare SDK's, end to end, one interleaved run
TARGET_RATIO = 1.03
#: issue 27: first-event latency p99, SDK + guard minus the bare SDK
TARGET_FIRST_P99_MS = 0.2
CONFIGS = ("bare", "guard")
USER = [{"role": "user", "content": "bench"}]


@dataclass(frozen=True)
class GuardBench:
    rounds: int
    calls: int
    events_per_stream: int
    loadavg_before: tuple[float, float, float]
    #: config -> CPU µs per event, one value per round
    cpu_us: dict[str, list[float]]
    #: config -> first-event latency in ms, one value per call
    first_ms: dict[str, list[float]]
    #: the guard's per-chunk path alone, CPU µs per event, one value per round
    isolated_us: list[float]

    def median_cpu(self, config: str) -> float:
        return statistics.median(self.cpu_us[config])

    @property
    def overhead_us(self) -> float:
        return self.median_cpu("guard") - self.median_cpu("bare")

    @property
    def ratio(self) -> float:
        """SDK + guard CPU per event over the bare SDK's (medians of the rounds)."""
        return self.median_cpu("guard") / self.median_cpu("bare")

    @property
    def first_p99_diff_ms(self) -> float:
        return percentile(self.first_ms["guard"], 99) - percentile(self.first_ms["bare"], 99)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["overhead_us_per_event"] = self.overhead_us
        data["ratio"] = self.ratio
        data["first_event_p99_diff_ms"] = self.first_p99_diff_ms
        return data


def measure(
    *, rounds: int = DEFAULT_ROUNDS, calls: int = DEFAULT_CALLS, events: int = DEFAULT_EVENTS
) -> GuardBench:
    """Run the comparison (a fault server in a pinned child process)."""
    import openai

    from harness import guard

    load = os.getloadavg()
    ready: Any = multiprocessing.get_context("spawn").Queue()
    stop = multiprocessing.get_context("spawn").Event()
    server = multiprocessing.get_context("spawn").Process(
        target=_serve, args=(events, ready, stop), daemon=True
    )
    server.start()
    try:
        base_url = ready.get(timeout=60)
        _pin(1)
        clients = {
            "bare": openai.OpenAI(base_url=base_url, api_key="k"),
            "guard": openai.OpenAI(
                base_url=base_url, api_key="k", http_client=guard.http_client(openai)
            ),
        }
        cpu: dict[str, list[float]] = {c: [] for c in CONFIGS}
        first: dict[str, list[float]] = {c: [] for c in CONFIGS}
        for client in clients.values():
            _stream(client)  # warm up: imports, the first connection
        for r in range(rounds):
            order = CONFIGS if r % 2 == 0 else CONFIGS[::-1]
            for config in order:
                t0 = time.process_time()
                n = 0
                for _ in range(calls):
                    count, first_s = _stream(clients[config])
                    n += count
                    first[config].append(first_s * 1000)
                cpu[config].append((time.process_time() - t0) / n * 1e6)
        for client in clients.values():
            client.close()
        isolated = _isolated(base_url, rounds)
    finally:
        stop.set()
        server.join(timeout=10)
    return GuardBench(rounds, calls, events, load, cpu, first, isolated)


def render(result: GuardBench) -> str:
    rows = ["| measure | bare SDK | SDK + guard | guard overhead |", "|---|---|---|---|"]
    b, g = result.median_cpu("bare"), result.median_cpu("guard")
    rows.append(
        f"| CPU per event (median of {result.rounds} rounds) | {b:.2f} µs | {g:.2f} µs"
        f" | {g - b:+.2f} µs, {result.ratio:.3f}x (target <= {TARGET_RATIO:g}x:"
        f" {_met(result.ratio <= TARGET_RATIO)}) |"
    )
    fb = percentile(result.first_ms["bare"], 50)
    fg = percentile(result.first_ms["guard"], 50)
    rows.append(f"| first-event latency p50 | {fb:.2f} ms | {fg:.2f} ms | {fg - fb:+.2f} ms |")
    fb99 = percentile(result.first_ms["bare"], 99)
    fg99 = percentile(result.first_ms["guard"], 99)
    rows.append(
        f"| first-event latency p99 | {fb99:.2f} ms | {fg99:.2f} ms | {fg99 - fb99:+.2f} ms"
        f" (target <= {TARGET_FIRST_P99_MS:g}: {_met(fg99 - fb99 <= TARGET_FIRST_P99_MS)}) |"
    )
    iso = statistics.median(result.isolated_us)
    rows.append(
        f"| the guard's own per-chunk path, isolated (median) | - | {iso:.2f} µs per event"
        f" | {iso:.2f} µs (target < {TARGET_OVERHEAD_US:g}) |"
    )
    la = ", ".join(f"{x:.1f}" for x in result.loadavg_before)
    per_call = result.rounds * result.calls
    note = (
        f"{per_call} streams x {result.events_per_stream} content events per configuration,"
        f" interleaved; load average before: {la}"
    )
    return "\n".join(rows) + "\n" + note


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="harness bench guard", description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS, help="interleaved rounds")
    p.add_argument("--calls", type=int, default=DEFAULT_CALLS, help="streams per round")
    p.add_argument("--events", type=int, default=DEFAULT_EVENTS, help="content events per stream")
    p.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = p.parse_args(argv)
    whole_numbers(p, args, ("rounds", "calls", "events"))
    result = measure(rounds=args.rounds, calls=args.calls, events=args.events)
    return finish(result, lambda r: print(render(r)), args.json)


def _met(ok: bool) -> str:
    return "met" if ok else "not met"


def _stream(client: Any) -> tuple[int, float]:
    """One streamed chat consumed to its end: (chunks yielded, seconds to the first)."""
    t0 = time.perf_counter()
    first = None
    n = 0
    with client.chat.completions.create(model="m", messages=USER, stream=True) as stream:
        for _chunk in stream:
            if first is None:
                first = time.perf_counter() - t0
            n += 1
    return n, first or 0.0


def _isolated(base_url: str, rounds: int) -> list[float]:
    """CPU µs per event of the guard's per-chunk work on one captured healthy body."""
    from harness.client.deadlines import DeadlineState
    from harness.client.settings import ClientSettings
    from harness.client.watchdog import Watchdog
    from harness.guard import library_of
    from harness.guard.watch import Watch

    http = library_of(None)
    body = {"model": "m", "stream": True, "messages": USER}
    with http.Client() as client:
        with client.stream("POST", base_url + "/chat/completions", json=body) as resp:
            chunks = list(resp.iter_raw())
    out = []
    for _ in range(rounds):
        settings = ClientSettings()
        with Watchdog(DeadlineState(settings, call_started_at=time.monotonic())) as wd:
            token = wd.start_attempt(lambda: None)
            watch = Watch("chat", settings, 1)
            watch.response(200, {"content-type": "text/event-stream"})
            t0 = time.process_time()
            for _ in range(20):
                for chunk in chunks:
                    wd.report(watch.receive(chunk))
            spent = time.process_time() - t0
            wd.end_attempt(token)
        out.append(spent / max(1, watch.events) * 1e6)
    return out


def _serve(events: int, ready: Any, stop: Any) -> None:
    """The fault server in the child process, pinned to CPU 0, healthy long streams."""
    from harness.faults import script_from_dict
    from harness.server import FaultServer

    _pin(0)
    with FaultServer(script_from_dict({"events": events})) as srv:
        ready.put(srv.base_url)
        stop.wait()


def _pin(cpu: int) -> None:
    if hasattr(os, "sched_setaffinity") and cpu in os.sched_getaffinity(0):
        os.sched_setaffinity(0, {cpu})
