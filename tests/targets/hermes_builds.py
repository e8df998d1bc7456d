"""Other hermes builds for tests, made in seconds from the installed one.

:func:`hermes_variant` makes a virtualenv whose site-packages is the installed hermes
venv's, entry by entry as symlinks, except what a test leaves out (``drop``: e.g. the
anthropic SDK, as in a hermes venv before ci/setup installed it) or changes (``edit``:
``{"agent/agent_runtime_helpers.py": function(text) -> text}``, a copy with that edit; its
directories become real directories of symlinks) or patches (``patch``: a unified diff
kept in the test tree, applied with ``patch -p1`` at site-packages, as ci/setup builds
hermes+guard; each file it touches is a copy first). The result is a real hermes, run by
the real driver: only the files named differ from the installed package's source.
Nothing of the installed venv is written to: an edited or patched module's bytecode
goes to a ``__pycache__`` of the variant's own.
"""

from __future__ import annotations

import shutil
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
    patch: Path | None = None,
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
    if patch is not None:
        for rel in _patched_files(patch):
            _own_copy(site, source, rel)
        with patch.open("rb") as diff:
            subprocess.run(
                ["patch", "-s", "-p1", "-d", str(site)],
                stdin=diff,
                check=True,
                capture_output=True,
                timeout=60,
            )
    return dest / "bin" / "python"


def _patched_files(patch: Path) -> list[Path]:
    """The files a unified diff changes (its ``+++ b/<path>`` lines)."""
    lines = patch.read_text(encoding="utf-8").splitlines()
    return [
        Path(line[4:].split("\t")[0]).relative_to("b")
        for line in lines
        if line.startswith("+++ b/")
    ]


def _own_copy(site: Path, source: Path, rel: Path) -> None:
    """Make ``site/rel`` a copy of its own, its directory and ``__pycache__`` real (the
    module's stale bytecode left out), so that patching it writes nothing shared."""
    _materialise(site, source, rel.parent)
    target = site / rel
    if target.is_symlink():
        target.unlink()
        shutil.copy2(source / rel, target)
    cache = target.parent / "__pycache__"
    if cache.is_symlink():
        real = cache.resolve()
        cache.unlink()
        cache.mkdir()
        for entry in real.iterdir():
            if not entry.name.startswith(f"{target.stem}."):
                _link(entry, cache / entry.name)


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
