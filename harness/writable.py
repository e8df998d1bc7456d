"""Can a report be written there? Checked before a run starts, so a run that would end
by failing to write its report fails at once instead, naming the path.

The probe is the real operation, not a permission guess (``os.access`` says yes to root
on a read-only file system): the file is opened for appending, which needs its directory
to exist and be writable and the path not to be a directory, and removed again when it
did not exist before, so a check leaves nothing behind.

Not here: the command-line wording (``harness.cli.common``).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["directory_problem", "file_problem"]


def file_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot be written as a report file (one phrase), or None."""
    path = Path(path)
    if path.is_dir():
        return "is a directory; allowed: a file path"
    parent = path.parent
    if not parent.exists():
        return f"cannot write there: no such directory {str(parent)!r}"
    if not parent.is_dir():
        return f"cannot write there: {str(parent)!r} is not a directory"
    existed = path.exists()
    try:
        with path.open("a", encoding="utf-8"):
            pass
    except OSError as exc:
        return f"cannot write there: {_reason(exc)}"
    if not existed:
        os.unlink(path)
    return None


def directory_problem(path: str | Path) -> str | None:
    """Why files cannot be written into directory ``path`` (created if missing), or None."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        return "not a directory"
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        return f"cannot write there: {_reason(exc)}"
    return None


def _reason(exc: OSError) -> str:
    return (exc.strerror or str(exc)).lower()
