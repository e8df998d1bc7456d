"""The root conftest's tier wiring names real tests."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _root_conftest() -> Any:
    spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
    assert spec is not None and spec.loader is not None
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    return conftest


def test_every_sdk_matrix_path_names_a_test_file_or_directory() -> None:
    # A path that matches nothing silently drops tests from the openai 3.x run.
    conftest = _root_conftest()
    missing = [p for p in conftest.SDK_MATRIX_PATHS if not (ROOT / "tests" / p).exists()]
    assert missing == []
    for path in conftest.SDK_MATRIX_PATHS:
        target = ROOT / "tests" / path
        assert target.is_dir() == path.endswith("/"), path  # a prefix must be a whole name


#: What makes a runner/ module's outcome depend on the SDK line: a built-in target on
#: the openai SDK or httpx named as a string, a mutant of the reference stack, or an
#: import of httpx / openai (in the module, or in a double module it names).
_DRIVES_SDK = re.compile(
    r"""["'](reference|openai-sdk|anthropic-sdk|[a-z-]+\+guard|mutant:[a-z-]+)["']"""
    r"|^\s*(import|from) (httpx|openai)\b",
    re.MULTILINE,
)
_DOUBLE = re.compile(r"runner\.(\w+):(\w+)")


def _drives_sdk(path: Path) -> bool:
    """The module names an SDK-line target, imports httpx/openai, or names a double class
    (``runner.module:Class``) whose own source does."""
    source = path.read_text()
    if _DRIVES_SDK.search(source):
        return True
    return any(_class_drives_sdk(path.parent / f"{m}.py", c) for m, c in _DOUBLE.findall(source))


def _class_drives_sdk(module: Path, name: str) -> bool:
    tree = ast.parse(source := module.read_text())
    imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    if any(_DRIVES_SDK.search(ast.get_source_segment(source, n) or "") for n in imports):
        return True  # imported at the top: every class of the module uses it
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    seen: set[str] = set()
    while name in classes and name not in seen:  # the class and its bases in the module
        seen.add(name)
        node = classes[name]
        if _DRIVES_SDK.search(ast.get_source_segment(source, node) or ""):
            return True
        bases = [b.id for b in node.bases if isinstance(b, ast.Name)]
        name = bases[0] if bases else ""
    return False


def test_the_sdk_matrix_takes_exactly_the_runner_modules_that_drive_an_sdk() -> None:
    # The openai 3.x run repeats what can differ between the SDK lines; a runner module
    # on test doubles alone runs the same code under both and is run once.
    conftest = _root_conftest()
    modules = sorted((ROOT / "tests" / "runner").glob("test_*.py"))
    driving = {f"runner/{p.name}" for p in modules if _drives_sdk(p)}
    listed = {p for p in conftest.SDK_MATRIX_PATHS if p.startswith("runner/")}
    assert listed == driving
    # the rule sees both kinds: a direct name and a double that imports httpx
    assert "runner/test_runner.py" in driving
    assert "runner/test_retry_after_contract.py" in driving
    assert "runner/test_call_ceiling.py" in driving  # its agent double imports openai
    assert "runner/test_forking.py" not in driving


def test_no_test_skips_when_a_harness_module_fails_to_import() -> None:
    # importorskip turns an ImportError into a skip: for our own modules that hides a break.
    needle = "importorskip(" + '"harness'  # split so this line does not match itself
    offenders = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if needle in line
    ]
    assert offenders == []


def test_every_xdist_group_prefix_names_a_test() -> None:
    # A prefix that matches nothing ungroups its tests: each worker reruns their fixture.
    conftest = _root_conftest()
    for prefix, _group in conftest.XDIST_GROUPS:
        path, _, name = prefix.partition("::")
        assert (ROOT / path).is_file(), prefix
        function = name.partition("[")[0]  # a prefix may name some of its parameters
        assert name == "" or f"def {function}" in (ROOT / path).read_text(), prefix


def test_loadgroup_keeps_a_group_on_one_scope_and_splits_the_rest_per_test() -> None:
    conftest = _root_conftest()
    config = SimpleNamespace(getvalue={"dist": "loadgroup", "tx": ["2*popen"]}.get)
    sched = conftest.pytest_xdist_make_scheduler(config=config, log=None)
    scope = sched._split_scope
    # with or without the "@group" suffix an xdist with a working loadgroup adds
    assert scope("tests/test_catalog.py::test_catalog_case[a[reference]]") == "group:catalog"
    assert scope("tests/test_catalog.py::test_catalog_case[b[openai-sdk]]@catalog") == (
        "group:catalog"
    )
    dry_runs = {
        scope("tests/live/test_targets.py::test_harness_live_dry_run_covers_every_built_in_target"),
        scope("tests/record/test_secrets.py::test_live_dry_run_with_record_and_the_fault_check"),
    }
    assert dry_runs == {"group:live-dry-run"}
    other = "tests/test_sse.py::test_x[1]"
    assert scope(other) == other  # ungrouped: its own unit, as loadgroup does
    other_config = SimpleNamespace(getvalue={"dist": "load"}.get)
    assert conftest.pytest_xdist_make_scheduler(config=other_config, log=None) is None


def test_machinery_marks_only_runner_tests_of_the_matrix_and_the_catalog_stays_whole() -> None:
    # `machinery` drops a test from the openai 3.x run: only the runner's bookkeeping may
    # carry it (a client, guard or catalog test is the SDK line's own evidence), and only
    # in a module the matrix takes (elsewhere the mark would say nothing).
    conftest = _root_conftest()
    needle = "pytest.mark." + "machinery"  # split so this file does not match itself
    marked = {
        path.relative_to(ROOT / "tests").as_posix()
        for path in (ROOT / "tests").rglob("test_*.py")
        if needle in path.read_text()
    }
    assert marked, "no machinery test: the mark and this check can go"
    assert all(p.startswith("runner/") and p.startswith(conftest.SDK_MATRIX_PATHS) for p in marked)
    catalog = (ROOT / "tests" / "test_catalog.py").read_text()
    assert "machinery" not in catalog and "test_catalog.py" in conftest.SDK_MATRIX_PATHS
