"""The LiteLLM gateway process: a real LiteLLM proxy server plus the leg sampler.

Run with LiteLLM's virtualenv python (``python -m harness.gateway.litellm_main``) by
:class:`harness.gateway.litellm_proxy.Gateway`. It

1. starts a :class:`harness.relay.Relay` in ``pass`` mode on a free loopback port: the
   proxy's fixed upstream, re-pointed at each job's fault server (``begin``), so one
   proxy serves every case of a target child however often the runner moves it, and at
   a :class:`~harness.gateway.fence.Fence` between jobs;
2. writes the proxy's config (:func:`harness.gateway.litellm_proxy.proxy_config`) and
   starts ``litellm --config ... --host 127.0.0.1 --port P``, waiting for uvicorn's
   "running" line on its output (a drain thread keeps reading it);
3. answers JSON lines on stdin: ``{"cmd": "begin", "upstream": [host, port]}`` starts a
   job (and the sampler), ``{"cmd": "end"}`` returns the job's leg timeline and fences
   the job off (:mod:`harness.gateway.fence`);
4. at EOF on stdin (its target child exited or was killed) stops the proxy and exits.

Pooled (``--listen PATH --owner PID``, :meth:`Gateway.lease
<harness.gateway.litellm_proxy.Gateway.lease>`) it answers the same lines on one
connection at a time to the Unix socket ``PATH``, each a target child's lease, and
lives until the runner ``PID`` (or the proxy) exits: a child killed at its ceiling
ends only its lease, and the next child gets the warm proxy instead of a cold start.

The sampler reads the kernel's TCP table (:mod:`harness.tcpstate`) on a bounded schedule
and records a ``tcp`` event whenever the client leg's states change: ``client`` (the
target's socket to the proxy) and ``proxy_in`` (the proxy's accepted socket). The
upstream leg comes from the relay's own timeline, sampled on each of its events: its
``client`` socket is the proxy's upstream socket (``proxy_out``), its ``upstream`` the
fault server's (``provider``).

Not here: the parent side (``harness.gateway.litellm_proxy``).
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TextIO

from harness import tcpstate
from harness.foreground import stop_process
from harness.gateway.fence import ANSWER, Fence
from harness.gateway.legs import CLIENT_LEGS, DEFAULT_SAMPLE_INTERVAL_S, MAX_SAMPLES
from harness.gateway.litellm_proxy import READY_MARKER, proxy_cli, proxy_config
from harness.ports import named_port
from harness.relay import Relay

__all__ = ["main"]

#: How long the proxy may take to say it is running (a cold import on a busy machine).
PROXY_START_S = 240.0
#: Lines of the proxy's output kept for an error message.
_OUTPUT_LINES = 40


def main(argv: Sequence[str] | None = None) -> int:
    """``[--listen PATH --owner PID]``: without them, one target child's gateway on
    stdin/stdout; with them, a pooled gateway leased over the Unix socket ``PATH`` until
    process ``PID`` (the runner) exits."""
    args = _arguments(argv)
    proto: TextIO = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1, encoding="utf-8")
    sys.stdout = sys.stderr
    fence = Fence()  # the relay's upstream between jobs
    relay = Relay(upstream=fence.address, mode="pass")
    relay.start()
    proxy_port = named_port()  # the proxy binds it seconds later, after its imports
    scratch = tempfile.TemporaryDirectory(prefix="harness-litellm-")
    config = Path(scratch.name) / "config.yaml"
    config.write_text(json.dumps(proxy_config(relay.base_url)), encoding="utf-8")
    proxy = _start_proxy(config, proxy_port)
    try:
        output = _Drain(proxy)
        try:
            failed = _await_proxy(output, proxy_port)
        finally:
            # Read at the proxy's startup only. Removed now, not at this process's end: a
            # gateway of a target child's own ends with the child's case, by SIGKILL.
            scratch.cleanup()
        if failed is not None:
            _send(proto, {"event": "fatal", "message": failed})
            return 1
        ready = {
            "event": "ready",
            "url": f"http://127.0.0.1:{proxy_port}",
            "proxy_port": proxy_port,
            "relay_port": relay.port,
            "proxy_pid": proxy.pid,
        }
        served = _Proxy(proxy, proxy_port, output)
        if args.listen is None:
            _send(proto, ready)
            _serve(sys.stdin, proto, relay, fence, served)
        else:
            _serve_leases(Path(args.listen), args.owner, proto, ready, relay, fence, served)
    finally:
        stop_process(proxy, 10)
        relay.close()
        fence.close()
    return 0


def _await_proxy(output: _Drain, port: int) -> str | None:
    """Wait for the proxy to say it runs, then check that its port accepts a connection
    (the kernel's word, not the log's); None when it does, else what went wrong."""
    if not output.settled.wait(PROXY_START_S):
        return f"proxy not ready after {PROXY_START_S:.0f} s: {output.tail()}"
    if not output.running:
        return f"proxy exited before it ran: {output.tail()}"
    try:
        socket.create_connection(("127.0.0.1", port), timeout=10.0).close()
    except OSError as exc:
        return f"proxy says it runs, but 127.0.0.1:{port} refuses ({exc}): {output.tail()}"
    return None


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m harness.gateway.litellm_main")
    parser.add_argument("--listen", metavar="PATH", help="serve leases on this Unix socket")
    parser.add_argument("--owner", type=int, default=0, metavar="PID", help="exit with it")
    args = parser.parse_args(argv)
    if (args.listen is None) != (args.owner == 0):
        parser.error("--listen and --owner go together")
    return args


def _serve_leases(
    path: Path,
    owner: int,
    proto: TextIO,
    ready: dict[str, Any],
    relay: Relay,
    fence: Fence,
    proxy: _Proxy,
) -> None:
    """Serve one lease (a target child's connection) at a time until the owner or the
    proxy exits. Each lease is greeted with ``ready`` (and the master key: the socket's
    directory is the user's own, mode 0700); a lease that ends mid-job (its child killed
    at the runner's ceiling) ends its job, so the next lease starts clean."""
    try:
        owner_fd = os.pidfd_open(owner)
    except ProcessLookupError:
        return
    proxy_fd = os.pidfd_open(proxy.popen.pid)
    greeting = {**ready, "master_key": os.environ.get("LITELLM_MASTER_KEY", "")}
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        path.unlink(missing_ok=True)  # a gateway of this slot that died left its socket
        listener.bind(str(path))
        listener.listen(4)
        _send(proto, {**ready, "socket": str(path)})
        proto.close()  # the starter reads no more: later writes would hit a closed pipe
        try:
            with selectors.DefaultSelector() as selector:
                for fd in (listener.fileno(), owner_fd, proxy_fd):
                    selector.register(fd, selectors.EVENT_READ)
                while True:  # ends when the owner or the proxy exits
                    ready_fds = {key.fd for key, _ in selector.select()}
                    if owner_fd in ready_fds:  # the pool is done: nobody leases from it again
                        for name in (path, *(path.with_suffix(x) for x in (".lock", ".log"))):
                            name.unlink(missing_ok=True)
                        _remove_if_empty(path.parent)
                        return
                    if proxy_fd in ready_fds:  # the slot stays: its next lease starts anew
                        return
                    conn, _ = listener.accept()
                    with conn, conn.makefile("r", encoding="utf-8") as lines:
                        with conn.makefile("w", buffering=1, encoding="utf-8") as out:
                            try:
                                _send(out, greeting)
                                _serve(lines, out, relay, fence, proxy)
                            except OSError:
                                pass  # the lease's child died mid-write; the job ended
        finally:
            path.unlink(missing_ok=True)
            os.close(owner_fd)
            os.close(proxy_fd)


def _remove_if_empty(directory: Path) -> None:
    try:
        directory.rmdir()
    except OSError:
        pass  # another slot's files are still there: its gateway removes it


def _serve(lines: Iterable[str], proto: TextIO, relay: Relay, fence: Fence, proxy: _Proxy) -> None:
    """One target child's jobs, until EOF (the child is gone) or an unknown command.

    A job's upstream legs end with it, those still waiting for a reply answered in the
    provider's place, and the relay points at the fence until the next job
    (:mod:`harness.gateway.fence`): no request of an ended job reaches a later job's
    server."""
    sampler: _Sampler | None = None
    begun_t = 0.0
    try:
        for line in lines:
            message = json.loads(line)
            if message.get("cmd") == "begin":
                host, port = message["upstream"]
                # A leg left open by the last job leads to its server: none may carry this one's.
                relay.set_upstream((str(host), int(port)), close_open=True, answer=ANSWER)
                sampler = _Sampler(proxy_port=proxy.port)
                begun_t = time.monotonic()
                sampler.start()
                begun = {"event": "begun", "t": begun_t, "fenced": fence.answered}
                down = proxy.down()
                _send(proto, begun if down is None else {**begun, "proxy_down": down})
            elif message.get("cmd") == "end":
                events = sampler.stop() if sampler is not None else []
                sampler = None
                # The job's legs end with it (FIN), so the proxy's pool has let them go long
                # before the next job's request, instead of racing its FIN.
                ended_t = time.monotonic()
                _fence_off(relay, fence)
                # The relay samples its legs on every event of its own (accepted,
                # upstream_fin, closed ...): its "client" leg is the proxy's upstream socket.
                # Of the fencing, only the answers belong to the job.
                relayed = [
                    e.to_dict()
                    for e in relay.timeline()
                    if begun_t <= e.t < ended_t or (e.t >= ended_t and e.kind == "answered")
                ]
                _send(proto, {"event": "ended", "events": events, "relay": relayed})
            else:
                return
    finally:
        if sampler is not None:  # the child went away mid-job
            sampler.stop()
            _fence_off(relay, fence)


def _fence_off(relay: Relay, fence: Fence) -> None:
    """End the job's legs (those still waiting for a reply answered) and point the relay
    at the fence."""
    relay.close_connections(answer=ANSWER)
    relay.set_upstream(fence.address)


def _start_proxy(config: Path, port: int) -> subprocess.Popen[bytes]:
    litellm_cli = proxy_cli(Path(sys.executable))
    return subprocess.Popen(
        [str(litellm_cli), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        close_fds=True,
    )


class _Proxy:
    """The LiteLLM proxy process, its port and its output: what the jobs need of it."""

    def __init__(self, popen: subprocess.Popen[bytes], port: int, output: _Drain) -> None:
        self.popen, self.port, self.output = popen, port, output

    def down(self) -> str | None:
        """Why the proxy cannot take a job's request (None: it listens), read from the
        process and the kernel's socket table, never by connecting (a connection of ours
        would show in the job's leg samples)."""
        code = self.popen.poll()
        if code is None:
            listening = tcpstate.snapshot(ports=(self.port,))
            if any(s.state == "LISTEN" and s.local_port == self.port for s in listening):
                return None
            what = f"the LiteLLM proxy (pid {self.popen.pid}) does not listen on {self.port}"
        else:
            what = f"the LiteLLM proxy exited with {code}"
        return f"{what}: {self.output.tail()}"


class _Drain:
    """Reads the proxy's output for ever (so it never blocks on a full pipe); sets
    ``settled`` at uvicorn's "running" line (``running``) or at the proxy's exit."""

    def __init__(self, proxy: subprocess.Popen[bytes]) -> None:
        self.settled = threading.Event()
        self.running = False
        self._lines: deque[str] = deque(maxlen=_OUTPUT_LINES)
        self._proxy = proxy
        threading.Thread(target=self._run, name="litellm-output", daemon=True).start()

    def _run(self) -> None:
        assert self._proxy.stdout is not None
        for raw in self._proxy.stdout:
            line = raw.decode("utf-8", "replace").rstrip()
            self._lines.append(line)
            if READY_MARKER in line and not self.settled.is_set():
                self.running = True
                self.settled.set()
        self._lines.append(f"(proxy exited with {self._proxy.wait()})")
        self.settled.set()

    def tail(self) -> str:
        return " / ".join(self._lines)


class _Sampler:
    """Samples the legs' TCP states until :meth:`stop`; keeps only changes."""

    def __init__(self, *, proxy_port: int) -> None:
        self._proxy_port = proxy_port
        self._stop = threading.Event()
        self._events: list[dict[str, Any]] = []
        self._thread = threading.Thread(target=self._run, name="leg-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> list[dict[str, Any]]:
        self._stop.set()
        self._thread.join()
        return self._events

    def _run(self) -> None:
        last: dict[str, str] | None = None
        for _ in range(MAX_SAMPLES):
            states = self._sample()
            if states != last:
                self._events.append({"t": time.monotonic(), "states": states})
                last = states
            # The sampling schedule of a measurement, like the relay's (not synchronisation).
            if self._stop.wait(DEFAULT_SAMPLE_INTERVAL_S):
                break
        final = self._sample()
        if final != last:
            self._events.append({"t": time.monotonic(), "states": final})

    def _sample(self) -> dict[str, str]:
        """The client leg's two ends (TIME_WAIT leftovers of earlier connections left out)."""
        port = self._proxy_port
        try:
            table = tcpstate.snapshot(ports={port})
        except tcpstate.TcpStateError as exc:
            return {"error": str(exc)}
        live = [s for s in table if s.state != "TIME_WAIT" and s.remote_port]
        picks = {
            "client": [s for s in live if s.remote_port == port],
            "proxy_in": [s for s in live if s.local_port == port],
        }
        return {leg: ",".join(sorted(s.state for s in picks[leg])) or "-" for leg in CLIENT_LEGS}


def _send(proto: TextIO, message: dict[str, Any]) -> None:
    proto.write(json.dumps(message) + "\n")
    proto.flush()


if __name__ == "__main__":
    raise SystemExit(main())
