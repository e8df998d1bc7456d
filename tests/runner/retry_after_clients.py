"""Small clients that differ only in how they treat a 429's wait (imported in the
child as ``runner.retry_after_clients``): one honours it exactly (``retry-after-ms``
first, as the official SDKs read it, else ``Retry-After``), one retries at once, and one
retries at once from a thread the machine keeps off its CPU. Real HTTP to the fault
server; the sleep is the behaviour under test, not synchronisation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import httpx

from harness.targets.base import CallResult, EventLog, Job, Target

MAX_ATTEMPTS = 3
#: A CPU-bound loop, bounded (it outlives no test), that takes a CPU from a niced thread.
SPIN = "import time\nend = time.monotonic() + 20\nwhile time.monotonic() < end: pass\n"
#: Python-level work the starved client does before it retries (its own processing: no
#: wait), so its retry is late only by the time it sat on the run queue.
WORK_STEPS = 300_000


class _RetryingClient(Target):
    apis = ("chat",)

    def wait_s(self, headers: httpx.Headers) -> float:
        raise NotImplementedError

    def call(self, job: Job, log: EventLog) -> CallResult:
        body = {"model": job.model, "messages": [dict(m) for m in job.messages], "stream": True}
        headers = {"Authorization": f"Bearer {job.api_key}"}
        url = job.base_url.rstrip("/") + "/chat/completions"
        with httpx.Client(timeout=30) as client:
            for attempt in range(1, MAX_ATTEMPTS + 1):
                with client.stream("POST", url, json=body, headers=headers) as response:
                    if response.status_code == 429 and attempt < MAX_ATTEMPTS:
                        response.read()
                        wait = self.wait_s(response.headers)
                        log.mark("retry", f"429: waiting {wait:.3f} s")
                        time.sleep(wait)
                        continue
                    response.raise_for_status()
                    text = "".join(_chat_text(response.iter_lines()))
                    return CallResult(text=text, finish_reason="stop", attempts=attempt)
        raise AssertionError("unreachable: the last attempt returns or raises")


class HonouringClient(_RetryingClient):
    """Waits exactly what the server asked for."""

    name = "runner.retry_after_clients:HonouringClient"

    def wait_s(self, headers: httpx.Headers) -> float:
        if "retry-after-ms" in headers:
            return float(headers["retry-after-ms"]) / 1000.0
        return float(headers.get("retry-after", "0"))


class IgnoringClient(_RetryingClient):
    """Retries at once, whatever the server asked for."""

    name = "runner.retry_after_clients:IgnoringClient"

    def wait_s(self, headers: httpx.Headers) -> float:
        return 0.0


class StarvedIgnoringClient(IgnoringClient):
    """Retries at once, whatever the server asked for, from a thread kept off its CPU:
    pinned to one CPU beside a spinning process at normal priority, itself at nice 19
    (a weight of 15 against 1024), it is runnable but seldom running, so its retry
    reaches the server late -- late by the run queue's time, not by a wait."""

    name = "runner.retry_after_clients:StarvedIgnoringClient"

    def call(self, job: Job, log: EventLog) -> CallResult:
        self._spinner: subprocess.Popen[bytes] | None = None
        try:
            return super().call(job, log)
        finally:
            if self._spinner is not None:
                self._spinner.kill()
                self._spinner.wait(timeout=30)

    def wait_s(self, headers: httpx.Headers) -> float:
        cpu = min(os.sched_getaffinity(0))
        if self._spinner is None:  # one spinner for the call, however many 429s
            self._spinner = subprocess.Popen([sys.executable, "-c", SPIN])
            os.sched_setaffinity(self._spinner.pid, {cpu})
        tid = threading.get_native_id()
        os.sched_setaffinity(tid, {cpu})
        os.setpriority(os.PRIO_PROCESS, tid, 19)  # this thread only (Linux: per thread)
        total = 0
        for i in range(WORK_STEPS):
            total += i
        return 0.0


def _chat_text(lines: object) -> list[str]:
    parts: list[str] = []
    for line in lines:  # type: ignore[attr-defined]
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        for choice in json.loads(line[6:]).get("choices") or ():
            parts.append((choice.get("delta") or {}).get("content") or "")
    return parts
