"""The root conftest's tier wiring names real tests."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_sdk_matrix_path_names_a_test_file_or_directory() -> None:
    # A path that matches nothing silently drops tests from the openai 3.x run.
    spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
    assert spec is not None and spec.loader is not None
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
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
