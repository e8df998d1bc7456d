"""Each target child in a cgroup of its own: nothing it starts outlives its case, and a
memory hog is stopped by the kernel and named.

A child that forks a grandchild into a session of its own (``setsid``) is no longer its
descendant once the middle process exits: a /proc walk from the child's pid misses it,
and it used to outlive its case by minutes. A cgroup keeps every process the child
starts, however it detaches: :meth:`ChildGroup.end` ends them all (``cgroup.kill``, or
SIGKILL to each pid in ``cgroup.procs`` where that file is absent) and waits, bounded,
for ``cgroup.events`` to say ``populated 0`` -- ``poll`` on that file, which the kernel
signals when the value changes. A memory limit per child (``Target.memory_max``, default
:data:`DEFAULT_CHILD_MEMORY_MAX`) turns an allocation the machine cannot afford into the
kernel's OOM kill, counted in the group (``memory.events`` on v2, ``memory.oom_control``
on v1) and named by the runner, instead of a swapping child judged ``hung``.

Where the groups go is decided once per process by :func:`decide`, a pure function of
``/proc/self/mountinfo``, ``/proc/self/cgroup`` and the unified root's controller files,
so every branch is tested on any Linux: groups live in the cgroup2 (unified) hierarchy
under this process's own group (``harness-PID/child-N``); the memory limit is v2's
``memory.max`` where the memory controller can be enabled for them, else the v1 memory
hierarchy's ``memory.limit_in_bytes`` (a hybrid machine, where v1 owns the controller),
else none. Without a writable cgroup2 hierarchy there are no groups, the runner says so
once (:func:`note`) and children run as before.

Not here: starting the child (``harness.targets.runtime.process``), what an OOM kill
means for the case (``harness.lifecycle``).
"""

from __future__ import annotations

import atexit
import errno
import itertools
import os
import select
import signal
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DEFAULT_CHILD_MEMORY_MAX",
    "END_WAIT_S",
    "ChildGroup",
    "Layout",
    "decide",
    "layout",
    "note",
    "owner_procs_files",
    "shim",
]

#: A target child's memory limit, bytes, its own processes together (``Target.memory_max``
#: sets another; None: no limit). The heaviest built-in child (a LiteLLM gateway beside
#: its SDK) peaks well under 1 GiB; twice that is a client gone wrong.
DEFAULT_CHILD_MEMORY_MAX = 2 << 30
#: How long ending a group may take before the runner goes on without it (SIGKILL'd
#: processes leave in milliseconds; one stuck in the kernel (D state) can take longer).
END_WAIT_S = 5.0
#: The v1 controller this module uses; every other one stays as the process has it.
_MEMORY = "memory"


@dataclass(frozen=True)
class Layout:
    """Where this process makes its children's groups (from :func:`decide`)."""

    #: The cgroup2 directory the groups go under (this process's own group); None: none.
    unified: str | None
    #: The directory memory-limited groups go under: ``unified`` (v2 memory controller),
    #: the v1 memory hierarchy's group of this process, or None (no limit).
    memory: str | None = None
    memory_v1: bool = False
    #: Why there are no groups, or no memory limit (the run's one line).
    problem: str | None = None


def _fields(line: str) -> tuple[list[str], list[str]]:
    pre, _, post = line.partition(" - ")
    return pre.split(), post.split()


def _mounts(mountinfo: str) -> tuple[tuple[str, str] | None, tuple[str, str] | None]:
    """(mount point, root) of the cgroup2 mount and of the v1 memory mount."""
    unified = memory = None
    for line in mountinfo.splitlines():
        pre, post = _fields(line)
        if len(pre) < 5 or len(post) < 3:
            continue
        root, point, fstype, options = pre[3], pre[4], post[0], post[2]
        if fstype == "cgroup2" and unified is None:
            unified = (point, root)
        elif fstype == "cgroup" and _MEMORY in options.split(",") and memory is None:
            memory = (point, root)
    return unified, memory


def _own_paths(proc_cgroup: str) -> tuple[str | None, str | None]:
    """This process's cgroup2 path and its v1 memory path (``/proc/self/cgroup``)."""
    unified = memory = None
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            unified = parts[2]
        elif _MEMORY in parts[1].split(","):
            memory = parts[2]
    return unified, memory


def _join(mount: tuple[str, str], path: str) -> str | None:
    """The directory of cgroup ``path`` under ``mount`` (point, root); None when the
    group is outside what is mounted here (a container sees only its own subtree)."""
    point, root = mount
    if root != "/" and path != root and not path.startswith(root.rstrip("/") + "/"):
        return None
    rel = path[len(root) :] if root != "/" else path
    return point.rstrip("/") + "/" + rel.strip("/") if rel.strip("/") else point.rstrip("/")


def decide(
    mountinfo: str,
    proc_cgroup: str,
    *,
    controllers: str = "",
    subtree_control: str = "",
    writable: bool = True,
) -> Layout:
    """Where groups go: a pure function of the files named in the module docstring.

    ``controllers`` and ``subtree_control`` are the contents of those two files in this
    process's own cgroup2 group, ``writable`` whether a group can be made in it. The v2
    memory controller is usable only when it is enabled for that group's children
    already, or can be (the group is the root: the "no internal processes" rule bars a
    group that holds processes, as ours does, from enabling it)."""
    unified_mount, memory_mount = _mounts(mountinfo)
    unified_path, memory_path = _own_paths(proc_cgroup)
    if unified_mount is None or unified_path is None:
        return Layout(None, problem="no cgroup2 hierarchy mounted")
    base = _join(unified_mount, unified_path)
    if base is None:
        return Layout(None, problem=f"this process's cgroup {unified_path} is not mounted here")
    if not writable:
        return Layout(None, problem=f"{base} is not writable")
    if _MEMORY in subtree_control.split() or (
        unified_path == "/" and _MEMORY in controllers.split()
    ):
        return Layout(base, memory=base)
    if memory_mount is not None and memory_path is not None:
        v1 = _join(memory_mount, memory_path)
        if v1 is not None:
            return Layout(base, memory=v1, memory_v1=True)
    return Layout(base, problem="no memory controller for child groups: no memory limit")


_LOCK = threading.Lock()
_LAYOUT: list[Layout] = []
_COUNTER = itertools.count(1)


def layout() -> Layout:
    """This process's :class:`Layout` (read once; the per-process groups made then)."""
    with _LOCK:
        if not _LAYOUT:
            _LAYOUT.append(_read_layout())
        return _LAYOUT[0]


def note(found: Layout | None = None) -> str | None:
    """The run's one line when children run without a group or a memory limit (of
    ``found``, default this process's :func:`layout`)."""
    found = layout() if found is None else found
    if found.problem is None:
        return None
    if found.unified is None:
        return (
            f"cgroups: not available ({found.problem}): a target child's escaped processes "
            "are not ended with its case, and no memory limit is set"
        )
    return f"cgroups: {found.problem}"


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def _read_layout() -> Layout:
    proc_cgroup, mountinfo = _read("/proc/self/cgroup"), _read("/proc/self/mountinfo")
    first = decide(mountinfo, proc_cgroup)
    if first.unified is None:
        return first
    base = first.unified
    found = decide(
        mountinfo,
        proc_cgroup,
        controllers=_read(f"{base}/cgroup.controllers"),
        subtree_control=_read(f"{base}/cgroup.subtree_control"),
        writable=os.access(base, os.W_OK),
    )
    if found.unified is None:
        return found
    own = f"harness-{os.getpid()}"
    try:
        for parent in {found.unified, found.memory} - {None}:
            assert parent is not None
            _remove_dead_runs(parent)
            os.makedirs(f"{parent}/{own}", exist_ok=True)
        if found.memory is not None and not found.memory_v1 and found.unified == found.memory:
            if _MEMORY in _read(f"{base}/cgroup.controllers").split():
                _write(f"{base}/cgroup.subtree_control", f"+{_MEMORY}")
            _write(f"{base}/{own}/cgroup.subtree_control", f"+{_MEMORY}")
    except OSError as exc:
        return Layout(None, problem=f"cannot make {base}/{own}: {exc}")
    atexit.register(_remove_own, found, own)
    return Layout(
        f"{found.unified}/{own}",
        memory=None if found.memory is None else f"{found.memory}/{own}",
        memory_v1=found.memory_v1,
        problem=found.problem,
    )


def _remove_dead_runs(parent: str) -> None:
    """Remove empty ``harness-PID`` groups of processes that are gone (a killed run)."""
    for entry in os.scandir(parent):
        name = entry.name
        if entry.is_dir() and name.startswith("harness-") and name[8:].isdigit():
            if not Path(f"/proc/{name[8:]}").exists():
                _remove_tree(entry.path)


def _remove_tree(path: str) -> None:
    for entry in os.scandir(path):
        if entry.is_dir():
            _remove_tree(entry.path)
    try:
        os.rmdir(path)
    except OSError:
        pass  # still populated: a later run removes it


def _remove_own(found: Layout, own: str) -> None:
    """At exit: end what is left in this process's groups (a child never stopped, and
    what it started), then remove them."""
    if found.unified is not None and os.path.isdir(f"{found.unified}/{own}"):
        for entry in os.scandir(f"{found.unified}/{own}"):
            if entry.is_dir():
                ChildGroup(entry.path, None, False, None).end(wait_s=1.0)
    for parent in {found.unified, found.memory} - {None}:
        _remove_tree(f"{parent}/{own}")


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def owner_procs_files(owner: int) -> list[str]:
    """The ``cgroup.procs`` files of process ``owner``'s own groups (cgroup2, v1 memory):
    a process meant to outlive the child that starts it (a gateway pooled for the run)
    joins them, so that ending the child's group does not end it. Empty when unknown."""
    unified_mount, memory_mount = _mounts(_read("/proc/self/mountinfo"))
    unified_path, memory_path = _own_paths(_read(f"/proc/{owner}/cgroup"))
    files = []
    for mount, path in ((unified_mount, unified_path), (memory_mount, memory_path)):
        where = None if mount is None or path is None else _join(mount, path)
        if where is not None and Path(f"{where}/cgroup.procs").exists():
            files.append(f"{where}/cgroup.procs")
    return files


def shim(procs_files: Sequence[str], command: Sequence[str]) -> list[str]:
    """``command`` run by a shell that first puts itself into each group (its pid is the
    command's after ``exec``), so not one instruction of the child runs outside them."""
    script = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
    return ["/bin/sh", "-c", script, "sh", *procs_files, "--", *command]


class ChildGroup:
    """One target child's group (and its memory group); thread-safe to end twice."""

    def __init__(
        self, path: str, memory_path: str | None, memory_v1: bool, memory_max: int | None
    ) -> None:
        self.path = path
        self.memory_path = memory_path
        #: the limit set, bytes (None: none, or no memory controller here)
        self.memory_max = memory_max if memory_path is not None else None
        self._memory_v1 = memory_v1
        self._ended = False

    @classmethod
    def create(cls, memory_max: int | None) -> ChildGroup | None:
        """A new group under this process's, limited to ``memory_max`` bytes (None: no
        limit); None when there are no groups here (``note`` says why)."""
        found = layout()
        if found.unified is None:
            return None
        name = f"child-{next(_COUNTER)}"
        path = f"{found.unified}/{name}"
        memory_path = None
        try:
            os.mkdir(path)
            if found.memory is not None and memory_max is not None:
                memory_path = path if not found.memory_v1 else f"{found.memory}/{name}"
                if found.memory_v1:
                    os.mkdir(memory_path)
                limit = "memory.limit_in_bytes" if found.memory_v1 else "memory.max"
                _write(f"{memory_path}/{limit}", str(memory_max))
        except OSError:
            cls(path, memory_path, found.memory_v1, memory_max).end()
            raise
        return cls(path, memory_path, found.memory_v1, memory_max)

    @property
    def procs_files(self) -> list[str]:
        """The ``cgroup.procs`` files a child joins (its v1 memory group's too)."""
        files = [f"{self.path}/cgroup.procs"]
        if self._memory_v1 and self.memory_path is not None:
            files.append(f"{self.memory_path}/cgroup.procs")
        return files

    def add(self, pid: int) -> None:
        """Move ``pid`` (a forked child, before its first job) into the group."""
        for procs in self.procs_files:
            _write(procs, str(pid))

    def pids(self) -> list[int]:
        """Every process in the group now."""
        return [int(p) for p in _read(f"{self.path}/cgroup.procs").split()]

    def oom_kills(self) -> int:
        """How many processes of the group the kernel killed at its memory limit."""
        if self.memory_path is None:
            return 0
        name = "memory.oom_control" if self._memory_v1 else "memory.events"
        for line in _read(f"{self.memory_path}/{name}").splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
        return 0

    def end(self, wait_s: float = END_WAIT_S) -> bool:
        """Kill every process in the group, wait (bounded) until it is empty, remove it.
        Returns whether it emptied in time (a process that did not stays, and its group
        with it: the run's own group is removed at exit, or by the next run)."""
        if self._ended:
            return True
        emptied = self._kill_all(time.monotonic() + wait_s)
        if emptied:
            self._ended = True
            for path in {self.path, self.memory_path} - {None}:
                try:
                    os.rmdir(path)  # type: ignore[arg-type]
                except FileNotFoundError:
                    pass  # already removed (a second end from another thread)
                except OSError as exc:
                    if exc.errno != errno.EBUSY:
                        raise
                    # a v1 memory group still lists a process the unified group no longer
                    # holds (its exit not yet uncharged): removed with the run's own group
                    # at exit, or by the next run
        return emptied

    def _kill_all(self, deadline: float) -> bool:
        try:
            events = os.open(f"{self.path}/cgroup.events", os.O_RDONLY)
        except FileNotFoundError:
            return True  # removed already
        try:
            poller = select.poll()
            poller.register(events, select.POLLPRI | select.POLLERR)
            has_kill = Path(f"{self.path}/cgroup.kill").exists()
            while b"populated 0" not in os.pread(events, 256, 0):
                if has_kill:
                    _write(f"{self.path}/cgroup.kill", "1")
                else:  # before Linux 5.14: each pid, again for any forked meanwhile
                    for pid in self.pids():
                        _signal(pid)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                # the kernel wakes this when "populated" changes: no polling interval
                poller.poll(remaining * 1000)
            return True
        finally:
            os.close(events)


def _signal(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # exited between the listing and the kill
