"""Hostile targets (imported in the child as ``runner.hostile_targets``): each does to its
child what a broken client or agent does, and the runner must end it with its case."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import urllib.parse
from typing import ClassVar

from harness.targets.base import CallResult, EventLog, Job, Target

#: The limit the memory hog runs under: small, so the test costs the machine little.
HOG_LIMIT = 256 << 20


class SetsidSleeper(Target):
    """Returns at once, leaving a sleeper in a session of its own that is no descendant of
    the child (its shell exited: re-parented to init), so no /proc walk from the child
    finds it. Its pid is in the result's details."""

    name = "hostile-setsid"
    apis = ("chat",)

    def call(self, job: Job, log: EventLog) -> CallResult:
        shell = "setsid sleep 600 </dev/null >/dev/null 2>&1 & echo $!"
        done = subprocess.run(["sh", "-c", shell], capture_output=True, text=True, check=True)
        log.details["stray_pid"] = int(done.stdout.strip())
        return CallResult(text="", finish_reason="stop")


class MemoryHog(Target):
    """Allocates (and touches) 4 GiB in one call."""

    name = "hostile-hog"
    apis = ("chat",)
    memory_max: ClassVar[int | None] = HOG_LIMIT

    def call(self, job: Job, log: EventLog) -> CallResult:
        hog = bytearray(4 << 30)  # zero-filled: every page is written, so it is charged
        return CallResult(text=str(len(hog)), finish_reason="stop")


class Segfault(Target):
    """Dies of SIGSEGV in the middle of its call."""

    name = "hostile-segv"
    apis = ("chat",)

    def call(self, job: Job, log: EventLog) -> CallResult:
        signal.signal(signal.SIGSEGV, signal.SIG_DFL)  # no faulthandler in between
        os.kill(os.getpid(), signal.SIGSEGV)
        raise AssertionError("still alive after SIGSEGV")


class IgnoresTerm(Target):
    """Sends its request (so it started: a client that never reaches the server is
    ``did_not_start``), ignores SIGTERM, starts a grandchild that ignores it too, and
    never returns."""

    name = "hostile-noterm"
    apis = ("chat",)

    def call(self, job: Job, log: EventLog) -> CallResult:
        url = urllib.parse.urlsplit(job.base_url)
        body = json.dumps({"model": job.model, "messages": list(job.messages)}).encode()
        sock = socket.create_connection((url.hostname, url.port))
        sock.sendall(
            b"POST %s/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
            b"\r\nContent-Length: %d\r\n\r\n%s" % (url.path.encode(), len(body), body)
        )  # and never reads the reply
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        subprocess.Popen(
            ["sh", "-c", "trap '' TERM; sleep 600"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        threading.Event().wait()  # hangs: only the runner's ceiling ends it
        raise AssertionError("unreachable")
