"""``hermes+guard``: the hermes patch applies to the installed hermes and adds only the
hook; the hook's factory gives hermes the guard with the job's deadlines; the target
finds its patched venv or says why not; a real hermes+guard case runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.environment import scrubbed
from harness.guard import GuardTransport
from harness.targets import load_target
from harness.targets.hermes.guard import (
    DEFAULT_GUARD_PYTHON,
    PATCH_PATH,
    HermesGuardTarget,
    guard_unavailable_reason,
)
from harness.targets.hermes.in_venv.hermes_driver import guard_hook as hook

from .hermes_builds import hermes_site_packages

pytestmark = pytest.mark.timeout(120)


def test_the_patch_applies_to_the_installed_hermes_and_only_adds_the_hook(tmp_path, hermes_ready):
    site = hermes_site_packages()
    tree = tmp_path / "hermes"
    for rel in ("agent/agent_runtime_helpers.py", "agent/anthropic_adapter.py"):
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(site / rel, tree / rel)
    proc = subprocess.run(
        ["patch", "-p1", "-d", str(tree)],
        stdin=PATCH_PATH.open("rb"),
        capture_output=True,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    factory = (tree / "agent" / "http_client_factory.py").read_text()
    assert 'ENV_VAR = "HERMES_HTTP_CLIENT_FACTORY"' in factory
    helpers = (tree / "agent/agent_runtime_helpers.py").read_text()
    assert 'custom_http_client(\n            "openai"' in helpers
    # hermes's own client is still the fallback when the hook returns None
    assert "or agent._build_keepalive_http_client(" in helpers


def test_the_hook_builds_the_guard_with_the_jobs_scaled_deadlines():
    hook.configure({"first_byte_s": 5, "stream_idle_s": None}, 0.2)
    import openai

    client = hook.http_client(sdk="openai", base_url="http://127.0.0.1:1/v1", verify=True)
    try:
        transport = client._transport
        assert isinstance(transport, GuardTransport)
        assert transport.settings.first_byte_s == pytest.approx(1.0)
        assert transport.settings.stream_idle_s is None
        assert isinstance(client, openai.DefaultHttpxClient)
    finally:
        client.close()
    assert hook.http_client(sdk="gemini", base_url="") is None  # hermes's default


def test_the_target_is_registered_and_names_a_missing_or_unpatched_venv(tmp_path):
    assert load_target("hermes+guard") is HermesGuardTarget
    assert "does not exist" in guard_unavailable_reason(tmp_path / "bin" / "python")
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.symlink_to(shutil.which("python3") or "/usr/bin/python3")
    (tmp_path / "venv" / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    assert "is not patched" in guard_unavailable_reason(python)


def test_the_target_command_runs_the_driver_in_guard_mode():
    if guard_unavailable_reason() is not None:
        pytest.skip(guard_unavailable_reason())
    command = HermesGuardTarget.command()
    assert command[0] == str(DEFAULT_GUARD_PYTHON) and command[-2:] == ["--child", "--guard"]
    assert Path(command[2]).name == "in_venv"


@pytest.mark.timeout(600)
def test_a_real_hermes_guard_case_returns_the_reply_through_the_guard(tmp_path, hermes_ready):
    if guard_unavailable_reason() is not None:
        pytest.skip(guard_unavailable_reason())
    out = tmp_path / "r.json"
    subprocess.run(
        [str(Path(sys.executable).with_name("harness")), "run", "-t", "hermes+guard"]
        + ["chat_healthy_stream", "-q", "--json", str(out)],
        env=scrubbed(os.environ),
        capture_output=True,
        timeout=500,
    )
    (result,) = json.loads(out.read_text())["results"]
    assert (result["target"], result["actual"], result["verdict"]) == ("hermes+guard", "ok", "pass")
