"""The LiteLLM proxy as a gateway: its config, the gateway process handle and its pool.

:class:`Gateway` starts ``python -m harness.gateway.litellm_main`` (LiteLLM's own
virtualenv), which runs a real LiteLLM proxy server on a free 127.0.0.1 port with a
generated config (:func:`proxy_config`) whose only route sends every model to the fault
server through a pass-through relay (the re-pointable upstream; see
:mod:`harness.gateway.litellm_main`). The gateway process is started in its own
session and re-parented away (``setsid -f``), so it is *not* in the target child's
process tree: the runner's leak count stays the client's, as with the relay and
Toxiproxy. Started by :meth:`Gateway.start` it is that process's own and exits when its
stdin closes, whether the child exited or was killed at the ceiling. Leased
(:meth:`Gateway.lease`) it is one of a pool the runner's target children share, one
child at a time per gateway: a LiteLLM proxy costs ~10 s of CPU to start, and a target
whose expected hangs are killed at the ceiling would otherwise pay it for every one.

Per job: :meth:`Gateway.begin` points the relay at the job's fault server and starts
sampling the legs' kernel TCP states; :meth:`Gateway.end` returns the ``tcp`` events
(changes only), which :mod:`harness.gateway.legs` measures, and fences the job off
(:mod:`harness.gateway.fence`): the proxy's retries of a request whose client left never
reach a later job's server.

LiteLLM proxy defaults that apply (litellm 1.108, ``router.py`` / ``constants.py``):
the Router's ``num_retries`` is ``openai.DEFAULT_MAX_RETRIES`` (2) and its ``timeout``
``litellm.request_timeout`` (6000 s); no stream timeout unless configured.

Not here: the legs' timeline and summary (``harness.gateway.legs``), the targets
(``harness.targets.clients.litellm_proxy``).
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import selectors
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness import cgroups
from harness.gateway.legs import JobLegs
from harness.paths import PROJECT_ROOT

__all__ = [
    "GATEWAY_START_S",
    "POOL_SLOTS",
    "READY_MARKER",
    "Gateway",
    "GatewayError",
    "pool_dir",
    "proxy_cli",
    "proxy_config",
    "same_network_namespace",
]


def proxy_cli(python: Path) -> Path:
    """The ``litellm`` proxy command the gateway runs: the one beside ``python`` (the
    venv's console script, installed with litellm's ``proxy`` extra)."""
    return python.with_name("litellm")


#: What uvicorn prints once the proxy's listening socket is bound (``Server.startup``:
#: the app's startup first, "Application startup complete", then the bind, then this
#: line). Ready at the earlier line, a client could be refused by a proxy about to bind.
READY_MARKER = "Uvicorn running on"
#: A cold LiteLLM proxy import on a busy 2-core machine takes tens of seconds.
GATEWAY_START_S = 240.0
#: Slots of a runner's gateway pool: more than its children of one target at once (a
#: worker's child and its spare, on every lane the target's caps allow); a gateway is
#: started in a slot only when every warm one is leased.
POOL_SLOTS = 16


class GatewayError(RuntimeError):
    """The gateway process did not start, or broke its protocol; carries what it said."""


#: The key the proxy sends upstream (the fault server accepts any; never a real secret).
UPSTREAM_API_KEY = "sk-harness-local-test"


def proxy_config(api_base: str, *, api_key: str = UPSTREAM_API_KEY) -> dict[str, Any]:
    """The proxy's config (JSON is YAML): every model name goes to ``api_base`` as an
    OpenAI-compatible provider, with LiteLLM's defaults but one.

    ``cancel_on_disconnect``: a call whose client left is cancelled, retries included.
    Without it the proxy goes on retrying a request nobody waits for (a target child killed
    at the ceiling, a client that gave up on its own deadline), and its retry lands on the
    *next* case's fault server, which counts it as its own (measured: two retries, 1.0 s
    and 2.8 s after the upstream leg closed). What a waiting client sees does not change."""
    return {
        "model_list": [
            {
                "model_name": "*",
                "litellm_params": {"model": "openai/*", "api_base": api_base, "api_key": api_key},
            }
        ],
        "general_settings": {"cancel_on_disconnect": True},
    }


class Gateway:
    """A gateway process's control channel: :meth:`start` (a child's own) or
    :meth:`lease` (a pooled one), then ``begin``/``end`` per job, then :meth:`close`."""

    def __init__(
        self,
        read_fd: int,
        write: Callable[[bytes], object],
        closers: Sequence[Callable[[], object]],
        *,
        master_key: str = "",
    ) -> None:
        self._read_fd = read_fd
        self._write_bytes = write
        self._closers = list(closers)
        #: The proxy's ``master_key``: clients send it as their API key (never logged).
        self.master_key = master_key
        self._selector = selectors.DefaultSelector()
        self._selector.register(read_fd, selectors.EVENT_READ)
        self._buffer = b""
        self.url = ""
        self.proxy_pid = 0
        #: A leased gateway: its slot in the pool, and whether an earlier child used it.
        self.slot: int | None = None
        self.reused = False
        self.fenced = 0

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    @classmethod
    def start(
        cls, *, python: Path, env: Mapping[str, str], timeout_s: float = GATEWAY_START_S
    ) -> Gateway:
        """Start the gateway with ``python`` (LiteLLM's venv) and wait for its ``ready``;
        it exits when this process closes its stdin (:meth:`close`, or this process's end)."""
        popen, master_key = _spawn(python, env, (), stdin=subprocess.PIPE)
        assert popen.stdin is not None and popen.stdout is not None
        stdin, stdout = popen.stdin, popen.stdout

        def write(data: bytes) -> None:
            stdin.write(data)
            stdin.flush()

        gateway = cls(stdout.fileno(), write, [stdin.close, stdout.close], master_key=master_key)
        try:
            ready = gateway._expect(("ready",), time.monotonic() + timeout_s)
        except GatewayError:
            gateway.close()
            raise
        finally:
            popen.wait()  # setsid -f exits at once; the gateway runs on, re-parented
        gateway._greeted(ready)
        return gateway

    @classmethod
    def lease(
        cls,
        *,
        python: Path,
        env: Mapping[str, str],
        owner: int,
        pool: Path | None = None,
        slots: int = POOL_SLOTS,
        timeout_s: float = GATEWAY_START_S,
    ) -> Gateway:
        """A gateway of the pool of process ``owner`` (the runner) for as long as this
        process holds it: the first free slot's warm gateway, or a new one started in it.

        A slot is an ``flock`` on its lock file, so the kernel frees it when the holder
        exits, even by SIGKILL at the runner's ceiling; the slot's gateway then serves the
        next child. Pooled gateways exit with ``owner``.

        A child in another network namespace than ``owner`` (a kernel scenario's client
        namespace) gets a gateway of its own (:meth:`start`): a pooled proxy listens on
        its own namespace's loopback, which the child cannot reach, and a gateway started
        from the child's namespace would live there, be killed with it at the case's end,
        and be unreachable for every other child meanwhile."""
        if not same_network_namespace(owner):
            return cls.start(python=python, env=env, timeout_s=timeout_s)
        where = pool if pool is not None else pool_dir(owner)
        where.mkdir(mode=0o700, parents=True, exist_ok=True)
        deadline = time.monotonic() + timeout_s
        for slot in range(slots):
            path = where / f"slot-{slot}.sock"  # the slot's other files: this, other suffix
            lock = _try_lock(path.with_suffix(".lock"))
            if lock is None:
                continue  # another child holds it
            try:
                gateway = cls._connect(path, deadline)
                reused = gateway is not None
                if gateway is None:
                    _start_pooled(python, env, path, owner, deadline)
                    gateway = cls._connect(path, deadline)
                if gateway is None:
                    raise GatewayError(f"{path}: the gateway started there refuses leases")
            except BaseException:
                os.close(lock)
                raise
            gateway._closers.append(lambda fd=lock: os.close(fd))
            gateway.slot, gateway.reused = slot, reused
            return gateway
        raise GatewayError(f"{where}: every one of its {slots} gateway slots is leased")

    @classmethod
    def _connect(cls, path: Path, deadline: float) -> Gateway | None:
        """The gateway listening at ``path``, greeted; None if none listens there."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(path))
        except (FileNotFoundError, ConnectionRefusedError):
            sock.close()
            return None
        gateway = cls(sock.fileno(), sock.sendall, [sock.close])
        try:
            ready = gateway._expect(("ready",), deadline)
        except GatewayError:
            gateway.close()
            raise
        gateway._greeted(ready)
        return gateway

    def close(self) -> None:
        """End this process's use: a child's own gateway stops (its stdin closes), a
        leased one goes back to the pool (idempotent)."""
        closers, self._closers = self._closers, []
        for close in closers:
            try:
                close()
            except OSError:
                pass  # a broken pipe: the gateway is already gone
        self._selector.close()

    def begin(self, upstream: tuple[str, int], *, timeout_s: float = 10.0) -> float:
        """Point the relay at ``upstream`` and start sampling; returns the start time.
        :attr:`fenced` is then how many requests of ended jobs the gateway's fence has
        answered so far (:mod:`harness.gateway.fence`). Raises :class:`GatewayError`
        when the proxy cannot take the job's request (it exited, or does not listen)."""
        self._write({"cmd": "begin", "upstream": list(upstream)})
        begun = self._expect(("begun",), time.monotonic() + timeout_s)
        self.fenced = int(begun.get("fenced", 0))
        if "proxy_down" in begun:  # named here, not left to the client as "refused"
            self.end(timeout_s=timeout_s)
            raise GatewayError(str(begun["proxy_down"])[:1000])
        return float(begun["t"])

    def end(self, *, timeout_s: float = 10.0) -> JobLegs:
        """Stop sampling; the job's leg timeline."""
        self._write({"cmd": "end"})
        message = self._expect(("ended",), time.monotonic() + timeout_s)
        return JobLegs(samples=list(message["events"]), relay=list(message["relay"]))

    # ----------------------------------------------------------------- helpers

    def _greeted(self, ready: Mapping[str, Any]) -> None:
        """Take the gateway's ``ready``: its URL, the proxy's pid, and (a pooled
        gateway's greeting) the master key it was started with."""
        self.url = str(ready["url"])
        self.proxy_pid = int(ready["proxy_pid"])
        if "master_key" in ready:
            self.master_key = str(ready["master_key"])

    def _write(self, message: Mapping[str, Any]) -> None:
        try:
            self._write_bytes((json.dumps(message) + "\n").encode())
        except OSError as exc:
            raise GatewayError(f"the gateway is gone: {exc}") from exc

    def _expect(self, events: Sequence[str], deadline: float) -> dict[str, Any]:
        fd = self._read_fd
        while True:
            while b"\n" not in self._buffer:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._selector.select(remaining):
                    raise GatewayError(f"the gateway sent no {'/'.join(events)} in time")
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise GatewayError("the gateway exited")
                self._buffer += chunk
            line, _, self._buffer = self._buffer.partition(b"\n")
            message = json.loads(line)
            if message.get("event") == "fatal":
                raise GatewayError(str(message.get("message", ""))[:1000])
            if message.get("event") in events:
                return message


def pool_dir(owner: int) -> Path:
    """Where the pooled gateways of process ``owner`` keep their slots (the user's own)."""
    return Path(tempfile.gettempdir()) / f"harness-gateways-{os.getuid()}-{owner}"


def same_network_namespace(pid: int) -> bool:
    """Whether this process and ``pid`` share a network namespace (the kernel's
    ``/proc/<pid>/ns/net``); True where there is none to read (no netns: one network)."""
    try:
        mine, theirs = (os.stat(f"/proc/{who}/ns/net") for who in ("self", pid))
    except OSError:
        return True
    return (mine.st_dev, mine.st_ino) == (theirs.st_dev, theirs.st_ino)


def _try_lock(path: Path) -> int | None:
    """An ``flock``-ed descriptor of ``path``, or None if another process holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def _spawn(
    python: Path,
    env: Mapping[str, str],
    args: Sequence[str],
    *,
    stdin: int,
    stderr: Any = None,
    join: Sequence[str] = (),
) -> tuple[subprocess.Popen[bytes], str]:
    """``python -m harness.gateway.litellm_main ARGS`` in a session of its own
    (``setsid -f``: re-parented, so outside the target child's process tree), and the
    master key it was given; its stderr is this process's unless ``stderr`` says
    otherwise. The proxy refuses to start without a master key (an unauthenticated
    proxy): a fresh random one is made here and handed over in the environment.
    ``join``: ``cgroup.procs`` files it joins first (``harness.cgroups.shim``)."""
    master_key = "sk-" + secrets.token_hex(32)
    child_env = {
        **env,
        "PYTHONPATH": str(PROJECT_ROOT),
        "PYTHONUNBUFFERED": "1",
        "LITELLM_MASTER_KEY": master_key,
    }
    argv = ["setsid", "-f", str(python), "-m", "harness.gateway.litellm_main", *args]
    popen = subprocess.Popen(
        cgroups.shim(join, argv) if join else argv,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=stderr,
        env=child_env,
        close_fds=True,
    )
    return popen, master_key


def _start_pooled(
    python: Path, env: Mapping[str, str], path: Path, owner: int, deadline: float
) -> None:
    """Start a pooled gateway listening at ``path``; return once it says ``ready``."""
    args = ("--listen", str(path), "--owner", str(owner))
    # Its own log, not the starter's stderr: the gateway outlives the child that started
    # it, and a pipe it kept open would keep the child's reader waiting for EOF.
    # The runner's cgroups, not the starting child's: ending that child's case (its
    # group) must not end the gateway the run's later children lease.
    join = cgroups.owner_procs_files(owner)
    with open(path.with_suffix(".log"), "ab") as log:
        popen, _ = _spawn(python, env, args, stdin=subprocess.DEVNULL, stderr=log, join=join)
    assert popen.stdout is not None
    starter = Gateway(popen.stdout.fileno(), lambda data: None, [popen.stdout.close])
    try:
        starter._expect(("ready",), deadline)
    finally:
        starter.close()
        popen.wait()  # setsid -f exits at once
