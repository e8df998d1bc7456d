"""Namespace lifecycle for the kernel dead peer: two namespaces joined by a veth pair.

Layout of one :class:`NetnsPair` (names unique per run: ``hx-<pid>-<n>-a`` / ``-b``)::

    namespace A (server)  hxv0 10.213.0.1/30 <-- veth --> hxv0 10.213.0.2/30  namespace B (client)

- the server runs **in this process**, in a thread that joined namespace A
  (:meth:`NetnsPair.enter` / :meth:`NetnsPair.call_in`: ``setns(2)`` applies to the
  calling thread and the threads it starts, so the fault server's asyncio thread and
  its sockets live in A while the runner keeps its Python API: ``wait_for``,
  ``timeline``, ``load``);
- the client runs as a **child process** in namespace B (``command_prefix("client")``
  = ``ip netns exec <B>``), so a hung client can be killed;
- :meth:`NetnsPair.cut` takes A's end of the link down: B's end loses carrier and
  drops everything it sends, A never answers. Static neighbour entries are installed
  so ARP plays no part (the error is ETIMEDOUT, not EHOSTUNREACH).

Traffic only flows between the two namespaces a run made; nothing is routed to the
host or beyond. Removal is guaranteed: context manager, ``atexit``, SIGTERM turned into
``SystemExit`` (when no handler was installed), and :func:`cleanup_stale` removes
``hx-*`` namespaces left by crashed runs (their pid is gone).

Not here: the scenario's settings (``harness.faults.network.kernel``), sampling TCP state
(``harness.netem.tcpwatch``), the measurement (``harness.netem.deadpeer``).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from harness.foreground import alive
from harness.paths import PROJECT_ROOT

__all__ = [
    "DEFAULT_CLIENT_IP",
    "DEFAULT_SERVER_IP",
    "KernelNetemError",
    "NetnsPair",
    "cleanup_stale",
]

DEFAULT_SERVER_IP = "10.213.0.1"
DEFAULT_CLIENT_IP = "10.213.0.2"
PREFIX_LEN = 30
IFNAME = "hxv0"
NAME_PREFIX = "hx-"
_IP_TIMEOUT_S = 10.0
_NAME_RE = re.compile(r"^hx-(\d+)-(\d+)-[ab]$")
_CLONE_NEWNET = 0x40000000


class KernelNetemError(RuntimeError):
    """A namespace, link or child process could not be set up; says which command and why."""


class NetnsPair:
    """Two namespaces joined by a veth pair; removed on exit (and at interpreter exit)."""

    _counter = itertools.count(1)

    def __init__(
        self, *, server_ip: str = DEFAULT_SERVER_IP, client_ip: str = DEFAULT_CLIENT_IP
    ) -> None:
        n = next(self._counter)
        base = f"{NAME_PREFIX}{os.getpid()}-{n}"
        self.server_ns = f"{base}-a"
        self.client_ns = f"{base}-b"
        self.server_ip = server_ip
        self.client_ip = client_ip
        self.cut_t: float | None = None
        self._created: list[str] = []

    def __enter__(self) -> NetnsPair:
        self.create()
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

    def namespace(self, side: str) -> str:
        if side not in ("server", "client"):
            raise ValueError(f"side: {side!r} is not valid; allowed: server, client")
        return self.server_ns if side == "server" else self.client_ns

    def create(self) -> None:
        _register(self)
        a, b = self.server_ns, self.client_ns
        try:
            for ns in (a, b):
                _ip("netns", "add", ns)
                self._created.append(ns)
            _ip(
                "link",
                "add",
                IFNAME,
                "netns",
                a,
                "type",
                "veth",
                "peer",
                "name",
                IFNAME,
                "netns",
                b,
            )
            for ns, ip in ((a, self.server_ip), (b, self.client_ip)):
                _ip("-n", ns, "addr", "add", f"{ip}/{PREFIX_LEN}", "dev", IFNAME)
                _ip("-n", ns, "link", "set", "lo", "up")
                _ip("-n", ns, "link", "set", IFNAME, "up")
            mac_a, mac_b = _mac(a), _mac(b)
            # Permanent neighbours: after the cut no ARP resolution runs, so the client's
            # error is the kernel's timeout, not an unreachable neighbour.
            _ip(
                "-n",
                a,
                "neigh",
                "replace",
                self.client_ip,
                "lladdr",
                mac_b,
                "dev",
                IFNAME,
                "nud",
                "permanent",
            )
            _ip(
                "-n",
                b,
                "neigh",
                "replace",
                self.server_ip,
                "lladdr",
                mac_a,
                "dev",
                IFNAME,
                "nud",
                "permanent",
            )
        except BaseException:
            self.remove()
            raise

    def remove(self) -> None:
        """Kill processes left in the namespaces and delete them (veth goes with them).
        A namespace that could not be deleted stays registered (atexit retries it) and
        the first failure is raised after every deletion was tried."""
        failures = []
        for ns in reversed(self._created):
            try:
                _delete_namespace(ns)
            except KernelNetemError as exc:
                failures.append((ns, exc))
        self._created = [ns for ns, _ in failures]
        if not failures:
            _unregister(self)
            return
        raise failures[0][1]

    def command_prefix(self, side: str = "client") -> list[str]:
        """``ip netns exec <ns>``: put it before a child's argv to run it in ``side``."""
        return ["ip", "netns", "exec", self.namespace(side)]

    def popen(self, side: str, argv: list[str], **kwargs: Any) -> subprocess.Popen:
        kwargs.setdefault("cwd", str(PROJECT_ROOT))
        return subprocess.Popen(self.command_prefix(side) + argv, **kwargs)

    def call_in(self, side: str, fn: Callable[[], _T]) -> _T:
        """Run ``fn`` in a new thread that joined ``side``'s namespace; threads it starts
        stay there (that is how an in-process server lives in namespace A)."""
        box: dict[str, Any] = {}

        def worker() -> None:
            try:
                _setns(self.namespace(side))
                box["value"] = fn()
            except BaseException as exc:  # re-raised in the caller's thread below
                box["error"] = exc

        t = threading.Thread(target=worker, name=f"netns-{side}", daemon=True)
        t.start()
        t.join()
        if "error" in box:
            raise box["error"]
        return box["value"]

    @contextlib.contextmanager
    def enter(self, side: str, cm: contextlib.AbstractContextManager[_T]) -> Iterator[_T]:
        """Enter ``cm`` (e.g. a ``FaultServer``) inside ``side``'s namespace; exit normally."""
        value = self.call_in(side, cm.__enter__)
        try:
            yield value
        except BaseException:
            if not cm.__exit__(*sys.exc_info()):
                raise
        else:
            cm.__exit__(None, None, None)

    def cut(self) -> float:
        """Take the server's end of the link down: from now on every packet is dropped,
        no FIN, no RST. Returns the monotonic time the cut took effect."""
        _ip("-n", self.server_ns, "link", "set", IFNAME, "down")
        self.cut_t = time.monotonic()
        return self.cut_t

    def heal(self) -> None:
        _ip("-n", self.server_ns, "link", "set", IFNAME, "up")


def cleanup_stale() -> list[str]:
    """Remove ``hx-<pid>-*`` namespaces whose creating process is gone; returns their names."""
    try:
        out = subprocess.run(
            ["ip", "netns", "list"],
            capture_output=True,
            text=True,
            timeout=_IP_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KernelNetemError(f"cannot list namespaces: {exc}") from exc
    removed = []
    for line in out.stdout.splitlines():
        name = line.split(" ", 1)[0].strip()
        m = _NAME_RE.match(name)
        if m and not alive(int(m.group(1))):
            _delete_namespace(name)
            removed.append(name)
    return removed


_T = TypeVar("_T")
_live: set[NetnsPair] = set()
_live_lock = threading.Lock()
_hooks_installed = False


def _register(pair: NetnsPair) -> None:
    global _hooks_installed
    with _live_lock:
        _live.add(pair)
        if _hooks_installed:
            return
        _hooks_installed = True
    atexit.register(_remove_all)
    if (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    ):
        # SIGTERM would kill the interpreter without unwinding; make it SystemExit so
        # context managers and atexit remove the namespaces.
        signal.signal(signal.SIGTERM, _sigterm)


def _unregister(pair: NetnsPair) -> None:
    with _live_lock:
        _live.discard(pair)


def _remove_all() -> None:
    with _live_lock:
        pairs = list(_live)
    for pair in pairs:
        pair.remove()


def _sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def _ip(*args: str) -> str:
    cmd = ["ip", *args]
    try:
        done = subprocess.run(
            cmd, capture_output=True, text=True, timeout=_IP_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KernelNetemError(f"`{' '.join(cmd)}` could not run: {exc}") from exc
    if done.returncode != 0:
        raise KernelNetemError(f"`{' '.join(cmd)}` failed: {done.stderr.strip()}")
    return done.stdout


def _mac(ns: str) -> str:
    info = json.loads(_ip("-j", "-n", ns, "link", "show", IFNAME))
    return info[0]["address"]


def _delete_namespace(ns: str) -> None:
    """Kill what runs in ``ns`` (a child left behind would keep it alive), then delete.
    A namespace that is already gone is not an error."""
    try:
        pids = _ip("netns", "pids", ns).split()
    except KernelNetemError:
        pids = []  # gone already, or no processes to list
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)
    try:
        _ip("netns", "del", ns)
    except KernelNetemError:
        if os.path.exists(f"/run/netns/{ns}"):
            raise


def _setns(ns: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
    try:
        if libc.setns(fd, _CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise KernelNetemError(f"setns({ns}) failed: {os.strerror(err)}")
    finally:
        os.close(fd)
