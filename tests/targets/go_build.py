"""Build the Go ``command:`` client of tests/targets/programs/go-client/, cached by source hash.

    from tests.targets.go_build import go_client
    binary = go_client()          # or skip (locally) / fail (CI) when go is missing

``python -m tests.targets.go_build`` builds it and prints the binary's path (for a
``harness run -t "command:PATH -keepalive=on"`` by hand). The binary lands in
``.cache/go-client/<hash>/go-client``; a second build of the same sources is a lookup.
Go's build cache is its default one, or ``.cache/go-build`` where HOME is not writable.
Concurrent builders (pytest-xdist workers) take a file lock: one builds, the rest wait.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from harness.netem.prereq import require
from harness.paths import PROJECT_ROOT

SOURCE = Path(__file__).resolve().parent / "programs" / "go-client"
CACHE = PROJECT_ROOT / ".cache" / "go-client"


def go_missing() -> str | None:
    """Why the Go client cannot be built here, or None."""
    if shutil.which("go") is None:
        return "go is not on PATH: the Go command: client is built with `go build`"
    return None


def source_hash() -> str:
    digest = hashlib.sha256()
    for path in sorted(SOURCE.iterdir()):
        if path.is_file():
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def build() -> Path:
    """The built binary (built now when the sources changed); RuntimeError names a
    failed build with go's own output."""
    out = CACHE / source_hash() / "go-client"
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if out.is_file():  # another builder finished while we waited
            return out
        env = {**os.environ, "GOTOOLCHAIN": "local", "CGO_ENABLED": "0", "GOFLAGS": ""}
        if "GOCACHE" not in os.environ and not os.access(Path.home(), os.W_OK):
            env["GOCACHE"] = str(PROJECT_ROOT / ".cache" / "go-build")
        partial = out.with_name("go-client.partial")
        done = subprocess.run(
            ["go", "build", "-trimpath", "-o", str(partial), "."],
            cwd=SOURCE,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"go build in {SOURCE} failed: {done.stderr.strip()}")
        partial.replace(out)  # atomic: a reader never sees half a binary
    return out


def go_client() -> Path:
    """The binary, or skip (locally) / fail (CI) the running test when go is missing."""
    require(go_missing())
    return build()


if __name__ == "__main__":
    reason = go_missing()
    if reason is not None:
        print(f"go_build: {reason}", file=sys.stderr)
        sys.exit(2)
    print(build())
