"""The kernel dead peer: two network namespaces, a veth pair, a link taken down.

What it is for: the one failure a userspace server cannot fake. A server that stops
writing is still alive to the kernel (it ACKs, it answers keepalive probes). Here the
path itself dies: packets are dropped with no FIN and no RST, so only TCP keepalive
(SO_KEEPALIVE + KEEPIDLE/KEEPINTVL/KEEPCNT), TCP_USER_TIMEOUT or an application
deadline can notice.

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
- :class:`TcpWatcher` samples the client's socket from ``/proc/<pid>/net/tcp`` (the
  table of namespace B) on a bounded schedule: state, keepalive/retransmit timer,
  retransmissions, probes, for the timeline.

Traffic only flows between the two namespaces a run made; nothing is routed to the
host or beyond. Removal is guaranteed: context manager, ``atexit``, SIGTERM turned into
``SystemExit`` (when no handler was installed), and :func:`cleanup_stale` removes
``hx-*`` namespaces left by crashed runs (their pid is gone).

:func:`run_dead_peer` is the measurement the tests and ``harness bench netem`` share:
one client (``probe``) against the netem SSE stub, the path cut at a scripted point,
the outcome (detected / hung) with the detection time after the cut.

What it is not: a traffic shaper (``tc netem`` is not available on every kernel; the
link is taken down instead), nor a way to reach anything outside the namespaces.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import dataclasses
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from harness import tcpstate
from harness.faults import FaultSpecError
from harness.netem.prereq import PROJECT_ROOT
from harness.netem.trigger import Trigger, parse_trigger

__all__ = [
    "DEFAULT_CLIENT_IP",
    "DEFAULT_SERVER_IP",
    "DeadPeerResult",
    "KeepaliveSettings",
    "KernelNetemError",
    "KernelSettings",
    "NetnsPair",
    "TcpSample",
    "TcpWatcher",
    "cleanup_stale",
    "kernel_settings_from_dict",
    "run_dead_peer",
]

DEFAULT_SERVER_IP = "10.213.0.1"
DEFAULT_CLIENT_IP = "10.213.0.2"
PREFIX_LEN = 30
IFNAME = "hxv0"
NAME_PREFIX = "hx-"
SHAPES = ("waiting", "in_flight")
DEFAULT_CEILING_S = 10.0
DEFAULT_SAMPLE_INTERVAL_S = 0.1
_IP_TIMEOUT_S = 10.0
_NAME_RE = re.compile(r"^hx-(\d+)-(\d+)-[ab]$")
_CLONE_NEWNET = 0x40000000


class KernelNetemError(RuntimeError):
    """A namespace, link or child process could not be set up; says which command and why."""


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class KeepaliveSettings:
    """Client TCP keepalive: first probe after ``idle_s`` idle, then every ``interval_s``,
    dead after ``count`` unanswered probes. Whole seconds (the kernel's unit)."""

    idle_s: int = 1
    interval_s: int = 1
    count: int = 2

    def __post_init__(self) -> None:
        for name in ("idle_s", "interval_s", "count"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise FaultSpecError(f"keepalive.{name}", v, "a whole number >= 1")

    @property
    def formula_s(self) -> float:
        """When keepalive declares the peer dead, counted from the last packet received."""
        return float(self.idle_s + self.interval_s * self.count)

    def as_tuple(self) -> tuple[int, int, int]:
        return (self.idle_s, self.interval_s, self.count)


@dataclass(frozen=True)
class KernelSettings:
    """A kernel dead-peer scenario. ``cut_at``: when the link goes down (a server
    timeline point, :mod:`harness.netem.trigger`); ``shape``: ``waiting`` (the client
    only reads when the path dies) or ``in_flight`` (the path dies, then the client
    writes a request on its pooled connection); ``keepalive`` / ``user_timeout_s``:
    the probe client's socket options (None: off)."""

    cut_at: Trigger = Trigger("event", 3)
    shape: str = "waiting"
    keepalive: KeepaliveSettings | None = KeepaliveSettings()
    user_timeout_s: float | None = None
    events: int = 3

    def __post_init__(self) -> None:
        if not isinstance(self.cut_at, Trigger):
            object.__setattr__(self, "cut_at", parse_trigger(self.cut_at, where="kernel.cut_at"))
        if self.shape not in SHAPES:
            raise FaultSpecError("kernel.shape", self.shape, ", ".join(SHAPES))
        u = self.user_timeout_s
        if u is not None and not (
            isinstance(u, int | float) and not isinstance(u, bool) and 0 < u < 3600
        ):
            raise FaultSpecError("kernel.user_timeout_s", u, "seconds > 0 (and < 3600), or omitted")
        if not isinstance(self.events, int) or isinstance(self.events, bool) or self.events < 1:
            raise FaultSpecError("kernel.events", self.events, "a whole number >= 1")

    @property
    def expected_detection_s(self) -> float | None:
        """What the kernel alone should give: keepalive formula while only waiting,
        TCP_USER_TIMEOUT once data is in flight; None when nothing bounds it."""
        if self.shape == "in_flight":
            return self.user_timeout_s
        if self.keepalive is None:
            return self.user_timeout_s
        if self.user_timeout_s is not None:
            # TCP_USER_TIMEOUT also caps keepalive (probes unanswered that long).
            return min(self.keepalive.formula_s, max(self.user_timeout_s, self.keepalive.idle_s))
        return self.keepalive.formula_s


def kernel_settings_from_dict(
    data: Mapping[str, Any] | None, *, where: str = "kernel"
) -> KernelSettings:
    """``{cut_at = "event:3", shape = "waiting", keepalive = {idle_s = 1, interval_s = 1,
    count = 2}, user_timeout_s = 3}``; ``keepalive = false`` turns it off."""
    if data is None:
        return KernelSettings()
    if not isinstance(data, Mapping):
        raise FaultSpecError(
            where, data, "a table: cut_at, shape, keepalive, user_timeout_s, events"
        )
    data = dict(data)
    allowed = [f.name for f in dataclasses.fields(KernelSettings)]
    for key in data:
        if key not in allowed:
            raise FaultSpecError(f"{where}.{key}", data[key], ", ".join(allowed))
    try:
        ka = data.get("keepalive", {})
        if ka is False:
            data["keepalive"] = None
        elif isinstance(ka, Mapping):
            unknown = set(ka) - {"idle_s", "interval_s", "count"}
            if unknown:
                raise FaultSpecError(
                    "keepalive." + sorted(unknown)[0],
                    ka[sorted(unknown)[0]],
                    "idle_s, interval_s, count",
                )
            data["keepalive"] = KeepaliveSettings(**ka)
        else:
            raise FaultSpecError("keepalive", ka, "a table {idle_s, interval_s, count} or false")
        if "cut_at" in data:
            data["cut_at"] = parse_trigger(data["cut_at"], where="cut_at")
        return KernelSettings(**data)
    except FaultSpecError as exc:
        field_name = exc.field.removeprefix("kernel.")
        raise FaultSpecError(f"{where}.{field_name}", exc.value, exc.allowed) from None


# --------------------------------------------------------------------------- namespaces


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
        if m and not _pid_alive(int(m.group(1))):
            _delete_namespace(name)
            removed.append(name)
    return removed


# --------------------------------------------------------------------------- sampling


@dataclass(frozen=True)
class TcpSample:
    """The client's TCP sockets to the server at ``t`` (empty: gone)."""

    t: float
    sockets: tuple[tcpstate.TcpSocket, ...]

    def describe(self) -> str:
        return "; ".join(s.describe() for s in self.sockets) or "gone"


class TcpWatcher:
    """Samples the TCP sockets of process ``pid`` (in its own namespace) that talk to
    ``remote_port``, every ``interval_s`` for at most ``max_samples`` turns; records a
    sample only when state, timer kind, retransmissions or probes changed."""

    def __init__(
        self,
        pid: int,
        *,
        remote_port: int | None = None,
        interval_s: float = DEFAULT_SAMPLE_INTERVAL_S,
        max_samples: int = 600,
    ) -> None:
        self.pid = pid
        self.remote_port = remote_port
        self.interval_s = interval_s
        self.max_samples = max_samples
        self._samples: list[TcpSample] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="tcp-watcher", daemon=True)
        self._last: tuple | None = None

    def __enter__(self) -> TcpWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def sample(self) -> TcpSample | None:
        """Sample now (also called on events); returns the sample if it was recorded."""
        try:
            ports = {self.remote_port} if self.remote_port else None
            table = tcpstate.snapshot(netns_pid=self.pid, ports=ports)
        except tcpstate.TcpStateError:
            return None  # the process is gone
        socks = tuple(
            tcpstate.select(table, remote_port=self.remote_port) if self.remote_port else table
        )
        key = tuple((s.local_port, s.state, s.timer, s.retransmits, s.probes) for s in socks)
        with self._lock:
            if key == self._last:
                return None
            self._last = key
            sample = TcpSample(time.monotonic(), socks)
            self._samples.append(sample)
            return sample

    def samples(self) -> list[TcpSample]:
        with self._lock:
            return list(self._samples)

    def _run(self) -> None:
        for _ in range(self.max_samples):
            self.sample()
            if self._stop.wait(self.interval_s):  # the sampling schedule; stop() ends it
                return


# --------------------------------------------------------------------------- measurement


@dataclass(frozen=True)
class DeadPeerResult:
    """One dead-peer run. ``outcome``: ``detected`` (the client raised after the cut),
    ``hung`` (still waiting at the ceiling; killed), ``returned`` (it returned: wrong),
    ``early`` (it raised before the cut). ``detect_s`` is the client's error time minus
    the cut time."""

    settings: KernelSettings
    outcome: str
    cut_t: float | None
    detect_s: float | None
    ceiling_s: float
    error: str | None = None
    errno: int | None = None
    strerror: str | None = None
    samples: tuple[TcpSample, ...] = ()
    server_events: tuple[Mapping[str, Any], ...] = field(default=(), compare=False)
    client_events: tuple[Mapping[str, Any], ...] = field(default=(), compare=False)

    @property
    def expected_s(self) -> float | None:
        return self.settings.expected_detection_s

    def timeline(self) -> list[tuple[float, str, str]]:
        """``(t, source, text)`` rows on one time axis: server, client, kernel (the client
        socket's TCP state), cut."""
        rows = [(e["t"], "server", _fmt(e, "kind")) for e in self.server_events]
        rows += [
            (e["t"], "client", _fmt(e, "event"))
            for e in self.client_events
            if e.get("event") != "sse" or e.get("n") == 1
        ]
        rows += [(s.t, "kernel", s.describe()) for s in self.samples]
        if self.cut_t is not None:
            rows.append((self.cut_t, "netem", "link down (no FIN, no RST)"))
        return sorted(rows)


def run_dead_peer(
    settings: KernelSettings | None = None,
    *,
    ceiling_s: float = DEFAULT_CEILING_S,
    read_timeout_s: float | None = None,
    python: str = sys.executable,
    sample_interval_s: float = DEFAULT_SAMPLE_INTERVAL_S,
) -> DeadPeerResult:
    """Start a namespace pair, the netem SSE stub in A (in this process), the probe client
    in B; cut the link at ``settings.cut_at`` (shape ``waiting``) or once request 1 is
    done (shape ``in_flight``, then the client sends request 2); wait up to
    ``ceiling_s`` after the cut for the client's result."""
    from harness.netem.sse_stub import StubServer, StubSettings

    s = settings or KernelSettings()
    first_done = 1 if s.shape == "in_flight" else 0
    stub = StubServer(
        StubSettings(events=s.events, after="hang", first_done=first_done), host=DEFAULT_SERVER_IP
    )
    argv = [python, "-m", "harness.netem.probe", "--shape", s.shape]
    if s.keepalive is not None:
        argv += ["--keepalive", ",".join(str(v) for v in s.keepalive.as_tuple())]
    if s.user_timeout_s is not None:
        argv += ["--user-timeout-s", str(s.user_timeout_s)]
    if read_timeout_s is not None:
        argv += ["--read-timeout-s", str(read_timeout_s)]
    with NetnsPair() as pair, pair.enter("server", stub) as server:
        argv += ["--url", f"http://{pair.server_ip}:{server.port}"]
        proc = pair.popen(
            "client", argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        lines = _JsonLines(proc)
        try:
            ready = lines.wait_for(lambda e: e.get("event") == "ready", timeout=30)
            if ready is None:
                raise KernelNetemError(f"probe client did not start: {lines.stderr_tail()}")
            with TcpWatcher(
                proc.pid, remote_port=server.port, interval_s=sample_interval_s
            ) as watcher:
                if s.shape == "in_flight":
                    if (
                        lines.wait_for(
                            lambda e: e.get("event") in ("waiting_for_go", "result"), timeout=30
                        )
                        is None
                    ):
                        raise KernelNetemError(
                            f"probe client never finished request 1: {lines.stderr_tail()}"
                        )
                    cut_t = pair.cut()
                    watcher.sample()
                    assert proc.stdin is not None
                    proc.stdin.write(b"go\n")
                    proc.stdin.flush()
                else:
                    _wait_trigger(s.cut_at, server, lines)
                    cut_t = pair.cut()
                    watcher.sample()
                result = lines.wait_for(lambda e: e.get("event") == "result", timeout=ceiling_s)
                watcher.sample()
        finally:
            proc.kill()
            proc.wait()
            lines.close()
        events = tuple(server.timeline())
    return _result(s, cut_t, result, ceiling_s, watcher.samples(), events, tuple(lines.events()))


# --------------------------------------------------------------------------- helpers

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


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _setns(ns: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
    try:
        if libc.setns(fd, _CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise KernelNetemError(f"setns({ns}) failed: {os.strerror(err)}")
    finally:
        os.close(fd)


def _wait_trigger(trigger: Trigger, server: Any, lines: _JsonLines) -> None:
    from harness.netem.trigger import wait_for_trigger

    try:
        wait_for_trigger(trigger, server, timeout=30)
    except TimeoutError as exc:
        raise KernelNetemError(
            f"cut point {trigger} never came: {exc}; client: {lines.stderr_tail()}"
        ) from exc


def _result(s, cut_t, result, ceiling_s, samples, server_events, client_events) -> DeadPeerResult:
    common = dict(
        settings=s,
        cut_t=cut_t,
        ceiling_s=ceiling_s,
        samples=tuple(samples),
        server_events=server_events,
        client_events=client_events,
    )
    if result is None:
        return DeadPeerResult(outcome="hung", detect_s=None, **common)
    if result.get("status") == "returned":
        return DeadPeerResult(outcome="returned", detect_s=result["t"] - cut_t, **common)
    outcome = "detected" if result["t"] >= cut_t else "early"
    return DeadPeerResult(
        outcome=outcome,
        detect_s=result["t"] - cut_t,
        error=result.get("error"),
        errno=result.get("errno"),
        strerror=result.get("strerror"),
        **common,
    )


def _fmt(e: Mapping[str, Any], key: str) -> str:
    rest = ", ".join(f"{k}={v}" for k, v in e.items() if k not in ("t", key, "text", "mro", "pid"))
    return f"{e.get(key)}" + (f" ({rest})" if rest else "")


class _JsonLines:
    """Reads a child's JSON-lines stdout in a thread; waits on a condition, no polling."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self._proc = proc
        self._events: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        self._eof = False
        self._stderr: list[str] = []
        self._threads = [
            threading.Thread(target=self._read, daemon=True, name="probe-stdout"),
            threading.Thread(target=self._read_err, daemon=True, name="probe-stderr"),
        ]
        for t in self._threads:
            t.start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for raw in self._proc.stdout:
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            with self._cond:
                self._events.append(event)
                self._cond.notify_all()
        with self._cond:
            self._eof = True
            self._cond.notify_all()

    def _read_err(self) -> None:
        assert self._proc.stderr is not None
        for raw in self._proc.stderr:
            self._stderr.append(raw.decode("utf-8", "replace"))
            del self._stderr[:-40]

    def wait_for(
        self, pred: Callable[[dict[str, Any]], bool], *, timeout: float
    ) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for e in self._events:
                    if pred(e):
                        return e
                remaining = deadline - time.monotonic()
                if self._eof or remaining <= 0:
                    return None
                self._cond.wait(remaining)

    def events(self) -> list[dict[str, Any]]:
        with self._cond:
            return list(self._events)

    def stderr_tail(self) -> str:
        return "".join(self._stderr)[-1500:] or "(no stderr)"

    def close(self) -> None:
        for t in self._threads:
            t.join()
