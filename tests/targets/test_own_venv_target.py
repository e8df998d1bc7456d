"""An out-of-tree target in a virtualenv of its own: one step, no override method.

The venv is made here with ``uv venv`` (the uv ``ci/setup`` installs) and gets one
client package (httpx); the harness is not installed in it: the child runtime is
stdlib-only and comes from ``PYTHONPATH``. Its mistakes are one line and exit 2.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HARNESS = [sys.executable, "-m", "harness"]

pytestmark = [pytest.mark.own_venv, pytest.mark.timeout(300)]

TARGET = '''
import json
import sys

from harness.targets.base import CallResult, Target


class MyClient(Target):
    """A user's own streamed-chat client on httpx, run in its own venv."""

    name = "my-client"
    apis = ("chat",)
    python = {python!r}
    requires = ("httpx",)

    def prepare(self):
        import httpx  # noqa: F401  (imported before the case's clock starts)

    def call(self, job, log):
        import httpx  # the venv's, not the harness's

        body = {{"model": job.model, "stream": True, "messages": list(job.messages)}}
        parts = []
        timeout = httpx.Timeout(10.0, read=1.0)
        with httpx.Client(timeout=timeout) as client:
            with client.stream("POST", job.base_url + "/chat/completions", json=body,
                               headers={{"authorization": "Bearer " + job.api_key}}) as r:
                r.raise_for_status()
                for line in r.iter_lines():
                    if line.startswith("data: ") and line != "data: [DONE]":
                        for choice in json.loads(line[6:]).get("choices", []):
                            parts.append((choice.get("delta") or {{}}).get("content") or "")
        return CallResult(text="".join(parts), finish_reason="stop",
                          details={{"python": sys.executable, "httpx": httpx.__file__}})
'''


def _uv() -> Path:
    found = sorted((ROOT / ".cache").glob("uv-*/bin/uv"))
    if not found:
        if os.environ.get("CI"):
            pytest.fail("no .cache/uv-*/bin/uv: ci/setup installs it")
        pytest.skip("no .cache/uv-*/bin/uv (run ci/setup)")
    return found[-1]


def _venv(where: Path, *packages: str) -> Path:
    uv = _uv()
    subprocess.run(
        [str(uv), "venv", "-q", "--python", sys.executable, str(where)], check=True, timeout=120
    )
    python = where / "bin" / "python"
    if packages:
        subprocess.run(
            [str(uv), "pip", "install", "-q", "--python", str(python), *packages],
            check=True,
            timeout=240,
        )
    return python


@pytest.fixture(scope="module")
def client_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _venv(tmp_path_factory.mktemp("client") / "venv", "httpx")


@pytest.fixture(scope="module")
def empty_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _venv(tmp_path_factory.mktemp("empty") / "venv")


def _harness(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    env.pop("HARNESS_TARGET_PYTHON", None)
    return subprocess.run(
        [*HARNESS, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=240
    )


def _write_target(where: Path, python: Path | None) -> None:
    source = TARGET.format(python=str(python) if python else None)
    (where / "myclient_target.py").write_text(textwrap.dedent(source))


def test_a_target_in_its_own_venv_runs_the_catalog_slice(tmp_path: Path, client_venv: Path) -> None:
    _write_target(tmp_path, client_venv)
    report = tmp_path / "r.json"
    done = _harness(
        tmp_path,
        "run", "chat_healthy_stream", "chat_mid_stream_stall", "chat_fin_mid_stream",
        "-t", "myclient_target:MyClient", "--json", str(report), "-q",
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    cases = {c["scenario"]: c for c in json.loads(report.read_text())["results"]}
    healthy = cases["chat_healthy_stream"]
    assert healthy["outcome"]["kind"] == "ok", healthy
    assert healthy["verdict"] == "pass"
    # The child ran in the venv and used the venv's httpx.
    assert healthy["details"]["python"] == str(client_venv)
    assert healthy["details"]["httpx"].startswith(str(client_venv.parent.parent))
    assert cases["chat_mid_stream_stall"]["outcome"]["kind"] == "error"
    assert cases["chat_fin_mid_stream"]["outcome"]["kind"] == "error"


def test_target_python_runs_a_plain_target_in_another_venv(
    tmp_path: Path, client_venv: Path
) -> None:
    _write_target(tmp_path, None)
    report = tmp_path / "r.json"
    done = _harness(
        tmp_path, "run", "chat_healthy_stream", "-t", "myclient_target:MyClient",
        "--target-python", str(client_venv), "--json", str(report), "-q",
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    (case,) = json.loads(report.read_text())["results"]
    assert case["outcome"]["kind"] == "ok"
    assert case["details"]["python"] == str(client_venv)


def test_a_missing_dependency_is_one_line_naming_it_and_how_to_install_it(
    tmp_path: Path, empty_venv: Path
) -> None:
    _write_target(tmp_path, empty_venv)
    done = _harness(tmp_path, "run", "chat_healthy_stream", "-t", "myclient_target:MyClient")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "cannot import 'httpx'" in lines[0]
    assert f"uv pip install --python {empty_venv} httpx" in lines[0]


def test_a_bad_import_path_is_one_line(tmp_path: Path) -> None:
    _write_target(tmp_path, None)
    for target, says in (
        ("myclient_targt:MyClient", "cannot import 'myclient_targt'"),
        ("myclient_target:MyClent", "has no 'MyClent'"),
    ):
        done = _harness(tmp_path, "run", "chat_healthy_stream", "-t", target)
        assert done.returncode == 2, (target, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and says in lines[0], done.stderr
