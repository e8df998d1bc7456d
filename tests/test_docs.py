"""The docs stay true: the README is a door, the generated pages are fresh, every page is
linked and stays inside the repository, and the pytest page's examples are real tests."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from harness.contract.check import splice_checks_table
from harness.contract.verdict import CHECKS
from harness.faults.reference import render_faults_page

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
MAX_README_LINES = 250
PAGES = (
    "architecture.md",
    "faults.md",
    "scenarios.md",
    "targets.md",
    "contract.md",
    "guard.md",
    "record-replay.md",
    "hermes.md",
    "results.md",
    "pytest.md",
)
LINK = re.compile(r"\]\(([^)\s]+)\)")


def markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md")), *sorted(DOCS.glob("*/*.md"))]


def test_the_readme_is_at_most_250_lines() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines"


def test_every_page_exists_and_is_linked_from_the_readme() -> None:
    readme = README.read_text(encoding="utf-8")
    for page in PAGES:
        assert (DOCS / page).is_file(), page
        assert f"(docs/{page}" in readme, f"README.md does not link docs/{page}"


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_links_stay_inside_the_repository_and_resolve(path: Path) -> None:
    for target in LINK.findall(path.read_text(encoding="utf-8")):
        assert "://" not in target and not target.startswith("mailto:"), (
            f"{path.name} links outside the repository: {target}"
        )
        file_part = target.split("#", 1)[0]
        if not file_part:
            continue
        resolved = (path.parent / file_part).resolve()
        assert resolved.is_relative_to(ROOT), f"{path.name}: {target} leaves the repository"
        assert resolved.exists(), f"{path.name}: {target} does not exist"


def test_the_faults_page_is_generated_from_the_registry() -> None:
    on_disk = (DOCS / "faults.md").read_text(encoding="utf-8")
    assert on_disk == render_faults_page(), (
        "docs/faults.md is stale: run `harness docs` (or `bash ci/docs`)"
    )


def test_the_faults_page_names_every_registered_action_and_parameter() -> None:
    import dataclasses

    from harness.faults import ACTIONS

    page = render_faults_page()
    for name, cls in ACTIONS.items():
        assert f"### {name}\n" in page
        for field in dataclasses.fields(cls):
            assert f"| `{field.name}` |" in page, f"{name}.{field.name}"


def test_the_architecture_layers_are_the_import_contract() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contract = next(c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == "layers")
    page = (DOCS / "architecture.md").read_text(encoding="utf-8")
    table = page.split("<!-- layers:", 1)[1].split("<!-- /layers -->", 1)[0]
    rows = [
        m.group(1).replace("\\|", "|")
        for m in re.finditer(r"^\| \d+ \| `(.+)` \|$", table, re.MULTILINE)
    ]
    assert rows == contract["layers"]


def test_the_contract_page_names_every_check() -> None:
    page = (DOCS / "contract.md").read_text(encoding="utf-8")
    missing = [check for check in CHECKS if f"| `{check}` |" not in page]
    assert not missing, f"docs/contract.md lacks the checks {missing}"


def test_the_checks_table_is_generated_from_the_check_registry() -> None:
    page = (DOCS / "contract.md").read_text(encoding="utf-8")
    assert page == splice_checks_table(page), (
        "docs/contract.md's checks table is stale: run `harness docs` (or `bash ci/docs`)"
    )


def test_harness_docs_rewrites_a_stale_checks_table(tmp_path: Path, capsys) -> None:
    from harness.cli import main

    page = (DOCS / "contract.md").read_text(encoding="utf-8")
    stale = page.replace("| `bounded` |", "| `bounded_by_hand` |")
    (tmp_path / "contract.md").write_text(stale, encoding="utf-8")
    assert main(["docs", "--out", str(tmp_path), "--check"]) == 1
    assert "contract.md: stale" in capsys.readouterr().err
    assert main(["docs", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "contract.md").read_text(encoding="utf-8") == page


def _python_blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page, re.DOTALL)


PYTEST_BLOCKS = _python_blocks((DOCS / "pytest.md").read_text(encoding="utf-8"))


@pytest.mark.timeout(180)
@pytest.mark.parametrize("index", range(len(PYTEST_BLOCKS)))
def test_the_pytest_page_examples_pass(pytester: pytest.Pytester, index: int) -> None:
    block = PYTEST_BLOCKS[index]
    if "# my_agent.py:" in block:  # the block's comment is the module it imports
        module = [
            line[2:] if line.startswith("# ") else ""
            for line in block.split("# my_agent.py:\n", 1)[1].splitlines()
            if line.startswith("#")
        ]
        pytester.makepyfile(my_agent="\n".join(module))
    pytester.makepyfile(test_example=block)
    tests = len(re.findall(r"^def test_", block, re.MULTILINE))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--harness-time-scale", "0.05")
    result.assert_outcomes(passed=tests)


def test_a_bad_script_in_the_fixture_is_the_scenario_loaders_one_line(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        """
        def test_bad(fault_server_factory):
            fault_server_factory(script={"rules": [{"fault": {"phase": "event:3", "action": "hangs"}}]})
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "script: script.rules[0].fault.action: 'hangs' is not valid; allowed: close_idle" in out
    assert "Traceback" not in out and "During handling" not in out


def test_harness_docs_writes_the_page_and_check_fails_when_stale(tmp_path: Path, capsys) -> None:
    from harness.cli import main

    assert main(["docs", "--out", str(tmp_path), "--check"]) == 1
    assert "faults.md: stale" in capsys.readouterr().err
    assert main(["docs", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "faults.md").read_text(encoding="utf-8") == render_faults_page()
    assert main(["docs", "--out", str(tmp_path), "--check"]) == 0


TARGET_BLOCKS = _python_blocks((DOCS / "targets.md").read_text(encoding="utf-8"))


def _target_classes(block: str) -> list[str]:
    return re.findall(r"^class (\w+)\(Target\):", block, re.MULTILINE)


def test_every_python_block_of_the_targets_page_is_a_whole_module_with_a_target() -> None:
    from harness.targets.base import Target

    assert len(TARGET_BLOCKS) >= 3
    for block in TARGET_BLOCKS:
        names = _target_classes(block)
        assert names, block[:200]
        namespace: dict = {"__name__": "targets_md_block"}
        exec(compile(block, "targets.md", "exec"), namespace)  # noqa: S102 - our own page
        for name in names:
            assert issubclass(namespace[name], Target)


@pytest.mark.timeout(180)
@pytest.mark.parametrize(
    ("cls", "scenario", "requests", "failed"),
    [
        ("MyClient", "nonstream_healthy", 1, ()),
        ("NoteAgent", "chat_healthy_stream", 1, ()),
        # its fault is on the second model call: reached, the agent's retry answers; no
        # keepalive on the SDK's sockets, as the page says
        ("NoteAgent", "chat_agent_loop_second_call_stall", 3, ("dead_peer_bound",)),
    ],
)
def test_the_targets_page_examples_run_the_catalog(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    cls: str,
    scenario: str,
    requests: int,
    failed: tuple[str, ...],
) -> None:
    import os

    from harness.runner import RunSettings, run_case
    from harness.scenario import load_catalog
    from harness.server import FaultServer

    block = next(b for b in TARGET_BLOCKS if cls in _target_classes(b))
    module = f"targets_md_{cls.lower()}"  # one module per block: imports are cached
    (tmp_path / f"{module}.py").write_text(block, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    target = f"{module}:{cls}"
    s = next(s for s in load_catalog() if s.name == scenario)
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join((str(tmp_path), str(ROOT)))}
    with FaultServer() as server:
        result = run_case(
            s, target, server=server, settings=RunSettings(time_scale=0.05, environ=environ)
        )
    assert result.outcome.kind == "ok", result.message
    assert result.not_exercised == "" and result.failed_checks == failed
    assert result.verdict == ("fail" if failed else "pass")
    assert result.requests == requests
