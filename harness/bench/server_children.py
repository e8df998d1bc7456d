"""The servers of ``harness bench server``, each in a child process pinned to one CPU.

:class:`ServerChild` starts ``python -m harness.bench.server_children --child KIND``,
reads the child's port from its first stdout line, and reads the child's CPU time
(utime + stime of all its threads) and peak RSS from /proc. Kinds (``SERVER_KINDS``):

* ``ours``: the fault server (``harness.server.FaultServer``), scripted through its
  control API;
* ``raw-asyncio``, ``uvicorn``, ``llmock``: the baselines in ``server_baselines.py``,
  which read the reply shape from ``x-bench-events`` / ``x-bench-interval`` headers.

Not here: the load generator (``server_load.py``), the measurement plan (``server.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import urllib.request
from typing import Any

__all__ = ["SERVER_KINDS", "ServerChild", "prioritize"]

SERVER_KINDS = ("ours", "raw-asyncio", "uvicorn", "llmock")
#: Scheduling of a realtime timing phase: SCHED_FIFO at this priority.
TIMING_RT_PRIORITY = 10
TIMING_NICE = -10
CONTROL_TIMEOUT_S = 30.0


class ServerChild:
    """One server in a child process pinned to ``cpu``; see the module docstring."""

    def __init__(self, kind: str, cpu: int | None) -> None:
        if kind not in SERVER_KINDS:
            raise ValueError(f"kind: {kind!r} is not valid; allowed: {', '.join(SERVER_KINDS)}")
        self.kind = kind
        self.cpu = cpu
        self.port = 0
        self.notes = ""
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> ServerChild:
        args = [sys.executable, "-m", "harness.bench.server_children", "--child", self.kind]
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

    @property
    def pid(self) -> int:
        assert self._proc is not None
        return self._proc.pid

    def cpu_seconds(self) -> float:
        """CPU time of the child so far (all threads, user + system)."""
        with open(f"/proc/{self.pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def peak_rss_mb(self) -> float:
        """The child's resident-set high-water mark (VmHWM), in MiB."""
        with open(f"/proc/{self.pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        return float("nan")

    def prioritize(self, priority: str) -> None:
        prioritize(self.pid, priority)

    # ------------------------------------------------------------------ ours only

    def configure(self, *, events: int, interval_s: float, rules: list[Any] | None = None) -> None:
        """Load a script into ours (baselines take the shape from request headers)."""
        if self.kind != "ours":
            return
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
        with urllib.request.urlopen(req, timeout=CONTROL_TIMEOUT_S) as resp:  # loopback only
            return json.loads(resp.read())


def prioritize(pid: int, priority: str) -> None:
    """Apply ``priority`` (realtime, nice, none) to every thread of ``pid`` (Linux
    scheduling is per thread); ``none`` restores SCHED_OTHER at nice 0."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            if priority == "realtime":
                os.sched_setscheduler(int(tid), os.SCHED_FIFO, os.sched_param(TIMING_RT_PRIORITY))
            else:
                os.sched_setscheduler(int(tid), os.SCHED_OTHER, os.sched_param(0))
                os.setpriority(os.PRIO_PROCESS, int(tid), TIMING_NICE if priority == "nice" else 0)
        except ProcessLookupError:
            continue  # a thread that just ended


def _child_main(kind: str, cpu: int | None) -> int:
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    if kind == "ours":
        return _ours_main()
    from harness.bench import server_baselines

    return {
        "raw-asyncio": server_baselines.raw_asyncio_main,
        "uvicorn": server_baselines.uvicorn_main,
        "llmock": server_baselines.llmock_main,
    }[kind]()


def _ours_main() -> int:
    from harness.server import FaultServer

    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    with FaultServer() as srv:
        print(
            json.dumps({"port": srv.port, "notes": "(asyncio, raw sockets, h11 parsing)"}),
            flush=True,
        )
        signal.sigwait({signal.SIGTERM, signal.SIGINT})
    return 0


if __name__ == "__main__":
    _p = argparse.ArgumentParser()
    _p.add_argument("--child", choices=SERVER_KINDS, required=True)
    _p.add_argument("--cpu", type=int)
    _a = _p.parse_args()
    raise SystemExit(_child_main(_a.child, _a.cpu))
