"""The root conftest's tier wiring names real tests."""

from __future__ import annotations

import importlib.util
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
        assert name == "" or f"def {name}" in (ROOT / path).read_text(), prefix


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
