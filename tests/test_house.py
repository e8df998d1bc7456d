"""House rules over the whole package, read from its source: small modules, and the
tree's paths computed in one place."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import harness

pytestmark = pytest.mark.timeout(30)

PACKAGE = Path(harness.__file__).parent


def _modules() -> dict[str, str]:
    return {
        str(p.relative_to(PACKAGE)): p.read_text(encoding="utf-8")
        for p in PACKAGE.rglob("*.py")
        if "__pycache__" not in p.parts
    }


def test_every_module_of_the_package_stays_under_400_lines():
    over = {name: n for name, text in _modules().items() if (n := len(text.splitlines())) > 400}
    assert over == {}, "split by job (docs/architecture.md): " + repr(over)


def test_the_trees_paths_are_computed_only_in_harness_paths():
    # Climbing from a module's own file to the tree (``parents[N]``) breaks when a module
    # moves; harness/paths.py does it once. The hermes driver runs in hermes's venv,
    # where the package is not importable, and keeps its one climb to the protocol.
    climbing = re.compile(r"Path\(__file__\)[^\n]*\.parents?\b")
    found = sorted(name for name, text in _modules().items() if climbing.search(text))
    assert found == ["paths.py", "targets/hermes/in_venv/hermes_driver/__init__.py"]


def test_no_module_imports_one_that_imports_it_back():
    # Any import counts (lazy, or for type checking only): a circle is two modules that
    # cannot be understood, moved or tested apart.
    import grimp  # import-linter's graph (the test extras)

    graph = grimp.build_graph("harness")
    circles = sorted(
        {
            tuple(sorted((module, imported)))
            for module in graph.modules
            for imported in graph.find_modules_directly_imported_by(module)
            if imported != module
            and graph.chain_exists(importer=imported, imported=module, as_packages=False)
        }
    )
    assert circles == []
