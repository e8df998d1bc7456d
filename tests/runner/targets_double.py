"""Test doubles for the target protocol (imported in the child as ``runner.targets_double``)."""

from __future__ import annotations

import json
import os
import threading
from typing import Any

from harness.targets.base import CallResult, EventLog, Job, Target, TargetUnsupported, follow_up


class EnvTarget(Target):
    """Returns the names of the environment variables the child sees, as JSON."""

    name = "runner.targets_double:EnvTarget"

    def call(self, job: Job, log: EventLog) -> CallResult:
        log.mark("env")
        log.details["pid"] = os.getpid()
        return CallResult(text=json.dumps(sorted(os.environ)), finish_reason="stop")


class RaisingTarget(Target):
    """Raises an error with an ``attempts`` list, like RetriesExhausted."""

    name = "runner.targets_double:RaisingTarget"

    def call(self, job: Job, log: EventLog) -> CallResult:
        inner = TimeoutError("stalled")
        exc = LookupError("gave up")
        exc.attempts = [ValueError("first"), inner]  # type: ignore[attr-defined]
        raise exc


class LeakyTarget(Target):
    """Returns while a worker thread still runs: a leak the runner must report."""

    name = "runner.targets_double:LeakyTarget"

    def call(self, job: Job, log: EventLog) -> CallResult:
        stop = threading.Event()
        threading.Thread(target=stop.wait, daemon=True).start()
        return CallResult(text="", finish_reason="stop")


class SkipTarget(Target):
    name = "runner.targets_double:SkipTarget"

    def call(self, job: Job, log: EventLog) -> CallResult:
        raise TargetUnsupported("not today")


class AbandoningTarget(Target):
    """A deliberately bad client: it answers the call from one request, but returns while
    a worker thread it started has sent a second request and still blocks reading it --
    a thread holding an ESTABLISHED socket, and a request nobody waits for."""

    name = "runner.targets_double:AbandoningTarget"
    apis = ("chat",)

    def call(self, job: Job, log: EventLog) -> CallResult:
        import http.client
        from urllib.parse import urlsplit

        url = urlsplit(job.base_url)
        path = url.path.rstrip("/") + "/chat/completions"
        body = json.dumps(
            {"model": job.model, "messages": [dict(m) for m in job.messages], "stream": False}
        )
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {job.api_key}"}

        def post(conn: http.client.HTTPConnection) -> http.client.HTTPResponse:
            conn.request("POST", path, body, headers)
            return conn.getresponse()  # returns once the status line and headers are in

        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
        try:
            text = json.loads(post(conn).read())["choices"][0]["message"]["content"]
        finally:
            conn.close()
        answered = threading.Event()

        def worker() -> None:
            stray = http.client.HTTPConnection(url.hostname, url.port)  # no timeout at all
            response = post(stray)
            answered.set()
            response.read()  # the server sends no body: blocks, holding the socket

        threading.Thread(target=worker, name="abandoned-request", daemon=True).start()
        if not answered.wait(10):
            raise TimeoutError("the stray request got no headers within 10 s")
        log.mark("returned", "while a worker still reads a second request")
        return CallResult(text=text, finish_reason="stop", attempts=1)


class SlowStartTarget(Target):
    """Stands for a client whose imports and warm-up take seconds: ``prepare`` takes
    longer than the case's whole outer ceiling. Start-up must not count against the case."""

    name = "slow-start"  # unlike its import path: the child must be started by path
    apis = ("chat",)
    #: Longer than the 0.5 s ceiling the test runs with.
    PREPARE_S = 1.5

    def prepare(self) -> None:
        import time

        time.sleep(self.PREPARE_S)  # stands for slow imports, not synchronisation

    def call(self, job: Job, log: EventLog) -> CallResult:
        import http.client
        from urllib.parse import urlsplit

        url = urlsplit(job.base_url)
        body = json.dumps(
            {"model": job.model, "messages": [dict(m) for m in job.messages], "stream": False}
        )
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
        try:
            conn.request(
                "POST",
                url.path.rstrip("/") + "/chat/completions",
                body,
                {"Content-Type": "application/json", "Authorization": f"Bearer {job.api_key}"},
            )
            text = json.loads(conn.getresponse().read())["choices"][0]["message"]["content"]
        finally:
            conn.close()
        return CallResult(text=text, finish_reason="stop", attempts=1)


class ClosedClientTarget(Target):
    """The closed-client bug (#10933 shape): it answers the call, then closes the HTTP
    client it keeps using, so the follow-up call through the same client fails."""

    name = "closed-client"
    apis = ("chat",)
    follows_up = True

    def call(self, job: Job, log: EventLog) -> CallResult:
        import httpx

        client = httpx.Client(base_url=job.base_url, timeout=10)
        headers = {"Authorization": f"Bearer {job.api_key}"}
        body = {"model": job.model, "messages": [dict(m) for m in job.messages], "stream": False}

        def ask(url: str) -> str:
            response = client.post(
                url.rstrip("/") + "/chat/completions", json=body, headers=headers
            )
            return response.json()["choices"][0]["message"]["content"]

        try:
            text = ask(job.base_url)
        finally:
            client.close()  # the bug: closed while the agent still holds it
            follow_up(job, log, ask)
        return CallResult(text=text, finish_reason="stop", attempts=1)


class ThreadAtReadyTarget(Target):
    """Keeps a thread from ``prepare`` on: its warm child cannot be copied by fork."""

    name = "runner.targets_double:ThreadAtReadyTarget"

    def prepare(self) -> None:
        self._stop = threading.Event()
        threading.Thread(target=self._stop.wait, name="kept-from-prepare", daemon=True).start()

    def call(self, job: Job, log: EventLog) -> CallResult:
        return CallResult(text=str(os.getpid()), finish_reason="stop")


class SocketAtReadyTarget(Target):
    """Keeps a socket from ``prepare`` on: a copy would share it."""

    name = "runner.targets_double:SocketAtReadyTarget"

    def prepare(self) -> None:
        import socket

        self._sock = socket.socket()

    def call(self, job: Job, log: EventLog) -> CallResult:
        return CallResult(text=str(os.getpid()), finish_reason="stop")


class MissingInterpreterTarget(Target):
    """Its child command names an interpreter that does not exist: the start raises."""

    name = "runner.targets_double:MissingInterpreterTarget"

    @classmethod
    def command(cls) -> list[str]:
        return ["/nonexistent/harness-test/python", "-m", "harness.targets.runtime.child", cls.name]

    def call(self, job: Job, log: EventLog) -> CallResult:
        raise AssertionError("never started")


def _open_stream(job: Job) -> tuple[Any, Any]:
    """POST a streamed chat request with http.client: ``(connection, response)`` once
    the response's headers are in."""
    import http.client
    from urllib.parse import urlsplit

    url = urlsplit(job.base_url)
    body = json.dumps(
        {"model": job.model, "messages": [dict(m) for m in job.messages], "stream": True}
    )
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    conn.request(
        "POST",
        url.path.rstrip("/") + "/chat/completions",
        body,
        {"Content-Type": "application/json", "Authorization": f"Bearer {job.api_key}"},
    )
    return conn, conn.getresponse()


def _read_stream(response: Any, *, lines: int | None = None) -> str:
    """The content of a chat stream's ``data:`` lines: all of them, or the first ``lines``."""
    text, seen = [], 0
    for raw in response:  # bounded: the server's stream ends, or `lines` stops it
        line = raw.decode().strip()
        if not line.startswith("data:") or line == "data: [DONE]":
            continue
        seen += 1
        for choice in json.loads(line[5:]).get("choices") or ():
            text.append((choice.get("delta") or {}).get("content") or "")
        if lines is not None and seen >= lines:
            break
    return "".join(text)


class HedgingTarget(Target):
    """Stands for a gateway that hedges (LiteLLM's proxy was seen to): a second request
    for the same call goes out while the first waits, the first one's full answer is
    returned and the second is closed mid-way; one attempt, by its count."""

    name = "runner.targets_double:HedgingTarget"
    apis = ("chat",)

    def call(self, job: Job, log: EventLog) -> CallResult:
        first, first_response = _open_stream(job)
        hedge, _ = _open_stream(job)
        try:
            text = _read_stream(first_response)
        finally:
            first.close()
            hedge.close()  # the hedge is not needed: cancelled mid-stream
        return CallResult(text=text, finish_reason="stop", attempts=1)


class QuietRetryTarget(Target):
    """A client that gives up on its first stream after one event (closing it mid-stream),
    retries, and counts one attempt: the kill is on the server's wire, not in its count."""

    name = "runner.targets_double:QuietRetryTarget"
    apis = ("chat",)

    def call(self, job: Job, log: EventLog) -> CallResult:
        conn, response = _open_stream(job)
        try:
            _read_stream(response, lines=1)
        finally:
            conn.close()
        conn, response = _open_stream(job)
        try:
            return CallResult(text=_read_stream(response), finish_reason="stop", attempts=1)
        finally:
            conn.close()


class ParkedThreadTarget(Target):
    """Keeps a worker thread from ``prepare`` on, as litellm's logging pool does, but
    stops it for the fork server (``before_fork``) and starts it again in each copy
    (``after_fork``): reports the threads it runs besides the main one."""

    name = "runner.targets_double:ParkedThreadTarget"

    def prepare(self) -> None:
        self._start()

    def _start(self) -> None:
        self._stop = threading.Event()
        self._worker = threading.Thread(target=self._stop.wait, name="pool-worker", daemon=True)
        self._worker.start()

    def before_fork(self) -> None:
        self._stop.set()
        self._worker.join(10)

    def after_fork(self) -> None:
        self._start()

    def call(self, job: Job, log: EventLog) -> CallResult:
        names = sorted(t.name for t in threading.enumerate() if t is not threading.main_thread())
        return CallResult(text=json.dumps(names), finish_reason="stop")


def _connected(job: Job) -> Any:
    """A TCP socket connected to the job's server (never sent a request)."""
    import socket  # noqa: PLC0415
    from urllib.parse import urlsplit  # noqa: PLC0415

    url = urlsplit(job.base_url)
    return socket.create_connection((url.hostname, url.port), timeout=5)


class GarbageSocketTarget(Target):
    """Drops a connected socket without closing it, held only by a reference cycle, then
    allocates enough cyclic garbage that an automatic collection would run (and close the
    socket) in the middle of the call: whether that socket counts must not depend on it."""

    name = "runner.targets_double:GarbageSocketTarget"

    def call(self, job: Job, log: EventLog) -> CallResult:
        holder: dict[str, Any] = {"sock": _connected(job)}
        holder["self"] = holder  # only the collector can free it
        del holder
        for _ in range(50_000):  # well past gen-0's threshold, many times over
            cycle: list[Any] = []
            cycle.append(cycle)
        return CallResult(text="", finish_reason="stop")


class ClosingSocketTarget(Target):
    """The same socket, closed before the call returns: nothing left."""

    name = "runner.targets_double:ClosingSocketTarget"

    def call(self, job: Job, log: EventLog) -> CallResult:
        _connected(job).close()
        return CallResult(text="", finish_reason="stop")


class LingeringTarget(Target):
    """Returns while a worker it abandoned still holds a socket, which the worker closes
    by itself a moment later (a retried attempt's stream worker finishing)."""

    name = "runner.targets_double:LingeringTarget"

    def call(self, job: Job, log: EventLog) -> CallResult:
        sock = _connected(job)
        done = threading.Event()

        def linger() -> None:
            done.wait(1.0)  # the worker's own timeout, not synchronisation with anything
            sock.close()

        threading.Thread(target=linger, daemon=True).start()
        return CallResult(text="", finish_reason="stop")
