"""What the netem backends need, whether it is here, and what to do when it is not.

What it is for: one place that answers "can the Toxiproxy / kernel tier run on this
machine?" with a reason a person can act on (what to install, how), and the rule of
the tiers of docs/tests.md: locally a missing prerequisite skips, with ``CI`` set it
fails, so the gate never passes silently without these tiers.

    from harness.netem.prereq import require_toxiproxy, require_netns
    binary = require_toxiproxy()   # path to the server binary, or skip/fail the test
    require_netns()                # root + ip netns + veth, or skip/fail the test

``toxiproxy_missing()`` / ``netns_missing()`` (``backend_missing(name)`` for a scenario's
backend) return the reason (or None) without
touching pytest, for the CLI and benchmarks. pytest is imported lazily, only by the
``require_*`` functions, so importing this module costs nothing outside tests.

What it is not: an installer. ``ci/setup`` installs Toxiproxy (see
``TOXIPROXY_INSTALL``).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

from harness.environment import Environment, read_environment
from harness.paths import CACHE_DIR

__all__ = [
    "DEFAULT_TOXIPROXY_BIN",
    "TOXIPROXY_INSTALL",
    "TOXIPROXY_VERSION",
    "backend_missing",
    "netns_missing",
    "require",
    "require_netns",
    "require_toxiproxy",
    "toxiproxy_binary",
    "toxiproxy_missing",
]

TOXIPROXY_VERSION = "v2.12.0"
#: Where ``ci/setup`` installs the server: ``GOBIN=<root>/.cache/toxiproxy/bin go install ...``.
DEFAULT_TOXIPROXY_BIN = CACHE_DIR / "toxiproxy" / "bin" / "server"
TOXIPROXY_INSTALL = (
    "GOBIN=$PWD/.cache/toxiproxy/bin go install "
    f"github.com/Shopify/toxiproxy/v2/cmd/server@{TOXIPROXY_VERSION}  (run from the project root, "
    "or ci/setup; or set HARNESS_TOXIPROXY_BIN to a toxiproxy-server binary)"
)


def toxiproxy_binary(env: Environment | None = None) -> Path | None:
    """The Toxiproxy server binary to run: ``HARNESS_TOXIPROXY_BIN``, else the project's
    cache, else ``toxiproxy-server`` on PATH; None when none is executable."""
    env = env or read_environment()
    if env.toxiproxy_bin:
        path = Path(env.toxiproxy_bin)
        return path if _executable(path) else None
    if _executable(DEFAULT_TOXIPROXY_BIN):
        return DEFAULT_TOXIPROXY_BIN
    found = shutil.which("toxiproxy-server")
    return Path(found) if found else None


def toxiproxy_missing(env: Environment | None = None) -> str | None:
    """Why the Toxiproxy tier cannot run here, or None when it can."""
    env = env or read_environment()
    if toxiproxy_binary(env) is not None:
        return None
    if env.toxiproxy_bin:
        return f"HARNESS_TOXIPROXY_BIN={env.toxiproxy_bin} is not an executable file"
    try:
        import toxiproxy  # noqa: F401 - only checking it is installed
    except ImportError:
        return "toxiproxy-python is not installed: pip install 'llm-transport-harness[netem]'"
    return f"Toxiproxy server not found; install it with: {TOXIPROXY_INSTALL}"


def netns_missing() -> str | None:
    """Why the kernel tier cannot run here, or None when it can (Linux, root, ``ip``
    from iproute2, and a namespace plus a veth pair can really be made)."""
    if sys.platform != "linux":
        return f"kernel netem needs Linux network namespaces (this is {sys.platform})"
    if os.geteuid() != 0:
        return "kernel netem needs root (network namespaces and veth pairs): run the tests as root"
    if shutil.which("ip") is None:
        return "kernel netem needs `ip` from iproute2: apt-get install iproute2"
    return _probe_netns()


def backend_missing(backend: str) -> str | None:
    """Why a scenario's network ``backend`` cannot run on this machine (None when it can:
    the server and the relay always can). Thread-safe: the kernel probe runs once per
    process, under its lock."""
    if backend == "toxiproxy":
        return toxiproxy_missing()
    if backend == "kernel":
        return netns_missing()
    return None


def require(reason: str | None, *, env: Environment | None = None) -> None:
    """Skip the running test with ``reason``, or fail it when ``CI`` is set; no-op when
    ``reason`` is None."""
    if reason is None:
        return
    import pytest

    env = env or read_environment()
    if env.ci:
        pytest.fail(f"CI requires this tier: {reason}", pytrace=False)
    pytest.skip(reason)


def require_toxiproxy(env: Environment | None = None) -> Path:
    """The Toxiproxy binary, or skip (locally) / fail (CI) the running test."""
    env = env or read_environment()
    require(toxiproxy_missing(env), env=env)
    path = toxiproxy_binary(env)
    assert path is not None
    return path


def require_netns(env: Environment | None = None) -> None:
    """Return when the kernel tier can run; otherwise skip (locally) / fail (CI)."""
    require(netns_missing(), env=env)


# --------------------------------------------------------------------------- helpers


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


_PROBE_LOCK = threading.Lock()


@functools.lru_cache(maxsize=1)
def _probe_netns() -> str | None:
    """Make and remove a namespace with a veth pair inside it, once per process. The veth
    is created inside the namespace, so its name never meets another process's."""
    with _PROBE_LOCK:  # lru_cache does not serialise concurrent first calls
        ns = f"hx-probe-{os.getpid()}"
        steps = [
            ["ip", "netns", "add", ns],
            [
                "ip",
                "link",
                "add",
                "hxp0",
                "netns",
                ns,
                "type",
                "veth",
                "peer",
                "name",
                "hxp1",
                "netns",
                ns,
            ],
        ]
        try:
            for cmd in steps:
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=10, check=False)
                if done.returncode != 0:
                    return f"`{' '.join(cmd)}` failed: {done.stderr.strip()} (needs root with CAP_NET_ADMIN)"
            return None
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"cannot run `ip`: {exc}"
        finally:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10, check=False)
