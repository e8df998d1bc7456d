"""Other hermes builds for tests, made in seconds from the installed one.

:func:`hermes_variant` makes a virtualenv whose site-packages is the installed hermes
venv's, entry by entry as symlinks, except what a test leaves out (``drop``: e.g. the
anthropic SDK, as in a hermes venv before ci/setup installed it) or changes (``edit``:
``{"agent/agent_runtime_helpers.py": function(text) -> text}``, a copy with that edit; its
directories become real directories of symlinks). The result is a real hermes, run by
the real driver: only the files named differ from the installed package's source.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from harness.targets.hermes import DEFAULT_HERMES_PYTHON

__all__ = ["hermes_site_packages", "hermes_variant"]


def hermes_site_packages(python: Path = DEFAULT_HERMES_PYTHON) -> Path:
    (site,) = python.parent.parent.glob("lib/python3*/site-packages")
    return site


def hermes_variant(
    dest: Path,
    *,
    drop: Iterable[str] = (),
    edit: Mapping[str, Callable[[str], str]] | None = None,
    python: Path = DEFAULT_HERMES_PYTHON,
) -> Path:
    """A hermes venv at ``dest`` built as above; returns its python."""
    source = hermes_site_packages(python)
    subprocess.run(
        [str(python), "-m", "venv", "--without-pip", str(dest)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    (site,) = dest.glob("lib/python3*/site-packages")
    dropped = set(drop)
    for entry in source.iterdir():
        if entry.name in dropped or entry.name.split("-")[0] in dropped:
            continue
        _link(entry, site / entry.name)
    for rel, change in (edit or {}).items():
        _materialise(site, source, Path(rel).parent)
        target = site / rel
        text = (source / rel).read_text(encoding="utf-8")
        changed = change(text)
        assert changed != text, f"the edit of {rel} changed nothing"
        target.unlink()
        target.write_text(changed, encoding="utf-8")
    return dest / "bin" / "python"


def _link(entry: Path, at: Path) -> None:
    if not at.exists():
        at.symlink_to(entry, target_is_directory=entry.is_dir())


def _materialise(site: Path, source: Path, rel: Path) -> None:
    """Make ``site/rel`` (and its parents) real directories of symlinks to ``source/rel``."""
    path = site
    for part in rel.parts:
        path = path / part
        if path.is_symlink():
            real = path.resolve()
            path.unlink()
            path.mkdir()
            for entry in real.iterdir():
                if entry.name != "__pycache__":  # stale bytecode of an edited file
                    _link(entry, path / entry.name)
