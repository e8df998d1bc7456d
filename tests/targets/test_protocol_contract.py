"""The child protocol's contract, run against every target child.

Each child (every registered target, ``harness.targets.TARGETS``, and a test double) is
started as the runner starts it (``Target.command()``), given one job on a real fault
server, then ``exit``. A target that cannot run here (its venv is missing) still answers
the protocol, with ``skipped``; the test then skips, or fails in CI by the tier rules of
the other target tests (hermes always; the third-party venvs with HARNESS_EXTRA_TARGETS=1).
Every line it writes on stdout must be a protocol message with the fields
:func:`harness.targets.runtime.wellformed.problems` checks, in the order ready, started, result
(then ready again for a reusable child). tests/targets/test_hermes.py runs the shared
loop with the hermes driver's result builder, so its error fields are checked without
hermes too.
"""

from __future__ import annotations

import gc
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.environment import scrubbed
from harness.faults import script_from_dict
from harness.server import FaultServer
from harness.targets import TARGETS, load_target
from harness.targets.base import Job
from harness.targets.hermes import unavailable_reason
from harness.targets.runtime.protocol import MAX_MESSAGE_CHARS, serve
from harness.targets.runtime.wellformed import problems
from tests.targets.ci_required import skip_or_fail

TESTS_DIR = str(Path(__file__).resolve().parents[1])
PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
DOUBLE = "targets.protocol_double:ChainedErrorTarget"


def child_param(name: str) -> Any:
    """``name``, marked ``own_venv`` when its child runs another interpreter (hermes and
    the third-party venvs): the SDK line of pytest's venv never reaches it, so the
    sdk_matrix rerun under openai 3.x would only repeat it."""
    if name != DOUBLE and sys.executable not in load_target(name).command():
        return pytest.param(name, marks=pytest.mark.own_venv)
    return name


CHILDREN = [child_param(name) for name in (*TARGETS, DOUBLE)]


def run_child(name: str, job: dict[str, Any], *, timeout_s: float) -> list[dict[str, Any]]:
    """Start ``name``'s child, send one job and ``exit``; every stdout line, parsed."""
    env = scrubbed(os.environ)
    env["PYTHONPATH"] = os.pathsep.join((PACKAGE_ROOT, TESTS_DIR))
    proc = subprocess.run(
        load_target(name).command(),
        input=(json.dumps({"cmd": "run", "job": job}) + '\n{"cmd": "exit"}\n').encode(),
        capture_output=True,
        env=env,
        timeout=timeout_s,
        check=False,
    )
    assert proc.returncode == 0, (proc.stderr + proc.stdout).decode()[-3000:]
    lines = proc.stdout.decode().splitlines()
    return [json.loads(line) for line in lines]  # a stray non-JSON line fails here


def check_conversation(name: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    expected = ["ready", "started", "result"]
    if load_target(name).reusable:
        expected.append("ready")  # offered for the next job; "exit" ends it
    assert [m["event"] for m in messages] == expected
    for message in messages:
        assert problems(message) == [], message
    times = [m["t"] for m in messages]
    assert times == sorted(times)
    return messages[2]


@pytest.mark.timeout(400)  # a third-party child imports and warms up before ready
@pytest.mark.parametrize("child", CHILDREN)
def test_every_child_answers_a_healthy_job_with_well_formed_messages(child: str) -> None:
    api = "chat" if child == DOUBLE else load_target(child).apis[0]
    with FaultServer() as srv:
        job = Job(base_url=srv.base_url, api=api, messages=({"role": "user", "content": "hi"},))
        result = check_conversation(child, run_child(child, job.to_dict(), timeout_s=380))
        records = [r for r in srv.requests() if r.api == api]
    if result["status"] == "skipped":
        skip_or_fail(child, result["message"])
    assert result["status"] == "returned", result
    if child == DOUBLE:
        assert result["text"] == "double reply"
    else:
        assert result["text"] == records[-1].expected_text
        assert result["finish_reason"] == ("end_turn" if api == "messages" else "stop")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", ["reference", "openai-sdk", DOUBLE])
def test_every_child_reports_a_failed_call_with_class_mro_and_causes(name: str) -> None:
    script = script_from_dict({"rules": [{"fault": {"phase": "request", "action": "rst"}}]})
    with FaultServer(script) as srv:
        job = Job(
            base_url=srv.base_url,
            messages=({"role": "user", "content": "fail"},),
            settings={"max_attempts": 1},
            time_scale=0.01,
        )
        result = check_conversation(name, run_child(name, job.to_dict(), timeout_s=100))
    assert result["status"] == "raised", result
    assert result["error"].split(":")[0] == result["mro"][0]
    assert "Exception" in result["mro"]
    if name == DOUBLE:
        assert result["mro"] == ["LookupError", "Exception"]
        assert result["message"] == "x" * MAX_MESSAGE_CHARS
        assert result["causes"] == ["ConnectionResetError: [Errno 104] Connection reset by peer"]
        assert [e[1] for e in result["events"]] == ["about_to_answer"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", [child_param("reference"), child_param("hermes")])
def test_a_job_a_child_cannot_run_is_answered_without_a_call(name: str) -> None:
    if name == "hermes" and unavailable_reason() is not None:
        pytest.skip(unavailable_reason() or "")
    job = Job(base_url="http://127.0.0.1:9/v1", api="no-such-api").to_dict()
    messages = run_child(name, job, timeout_s=50)
    (result,) = [m for m in messages if m["event"] == "result"]
    assert all(problems(m) == [] for m in messages)
    assert result["status"] in ("not_applicable", "skipped")
    assert "no-such-api" in result["message"]


def test_problems_names_what_is_missing_or_wrong() -> None:
    assert problems({"event": "ready", "t": 1.0}) == ["ready.pid=None is not a int"]
    bad = {"event": "result", "status": "raised", "t": 1.0, "events": [], "events_dropped": 0}
    bad |= {"details": {}, "error": "E", "mro": ["E", "Exception", "object"], "message": ""}
    bad |= {"causes": []}
    assert problems(bad) == ["mro=['E', 'Exception', 'object'] names object/BaseException"]
    assert problems({"event": "result", "status": "done", "t": 1.0}) == [
        "status='done'; allowed: returned, raised, skipped, not_applicable"
    ]


@pytest.mark.timeout(30)
def test_each_job_starts_with_the_heap_so_far_collected_and_frozen() -> None:
    """A full collection inside a job must not scan a warm child's whole heap (seen: a
    0.6 s pause past a 0.25 s first-byte deadline, the reply already in the socket)."""
    seen: list[int] = []

    def handle(job: dict[str, Any], started: Any) -> dict[str, Any]:
        seen.append(gc.get_freeze_count())
        started()
        return {"status": "skipped", "message": "test"}

    stdin = io.StringIO('{"cmd": "run", "job": {}}\n{"cmd": "run", "job": {}}\n')
    out = io.StringIO()
    try:
        assert serve(out, stdin, handle, reuse=True) == 0
    finally:
        gc.unfreeze()
    assert len(seen) == 2 and all(frozen > 0 for frozen in seen)
    events = [json.loads(line)["event"] for line in out.getvalue().splitlines()]
    assert events == ["ready", "started", "result"] * 2 + ["ready"]


@pytest.mark.timeout(30)
def test_the_collector_is_off_from_a_job_until_the_next_command() -> None:
    """The leaks are read between a result and the next command: no automatic collection
    may close (or not) a socket the job dropped in that window, or during the job."""
    enabled: list[bool] = []

    def handle(job: dict[str, Any], started: Any) -> dict[str, Any]:
        enabled.append(gc.isenabled())
        started()
        return {"status": "skipped", "message": "test"}

    class Commands(io.StringIO):
        def readline(self, *args: Any) -> str:
            enabled.append(gc.isenabled())  # the state the leaks were read in
            return super().readline(*args)

    stdin = Commands('{"cmd": "run", "job": {}}\n{"cmd": "run", "job": {}}\n')
    try:
        assert serve(io.StringIO(), stdin, handle, reuse=True) == 0
    finally:
        gc.unfreeze()
        gc.enable()
    # before the first job, in it, after it (read), in the second, after it
    assert enabled == [True, False, False, False, False]


TARGETS_DIR = Path(PACKAGE_ROOT) / "harness" / "targets"
IN_VENV = TARGETS_DIR / "hermes" / "in_venv"
DRIVER_FILES = sorted(IN_VENV.rglob("*.py"))


def test_hermes_runs_a_directory_holding_only_its_driver() -> None:
    """``python -I in_venv`` puts that directory first on hermes's ``sys.path``: only the
    driver's own names may be importable from it, so none shadows a hermes module."""
    entries = {p.name for p in IN_VENV.iterdir() if p.name != "__pycache__"}
    assert entries == {"__init__.py", "__main__.py", "hermes_driver"}


@pytest.mark.parametrize(
    "path",
    [TARGETS_DIR / "runtime" / "protocol.py", *DRIVER_FILES],
    ids=lambda p: str(p.relative_to(TARGETS_DIR)),
)
def test_modules_hermes_runs_import_only_the_stdlib_and_each_other(path: Path) -> None:
    """hermes-agent's venv has no harness package: the driver's files (and the protocol
    it loads by path) may import the standard library, hermes itself (``run_agent``),
    their own package and its modules (relative imports) only."""
    import ast

    module = path.name
    tree = ast.parse(path.read_text())
    siblings = {p.stem for p in (IN_VENV / "hermes_driver").glob("*.py")} | {"protocol"}
    allowed = set(sys.stdlib_module_names) | {"__future__", "run_agent", "tools", "agent"}  # hermes
    allowed |= {"hermes_driver"} if path.parent == IN_VENV else set()
    # hermes+guard's hook imports the guard inside its functions, after install() put the
    # harness source root at the end of sys.path (see its docstring)
    allowed |= {"harness"} if module == "guard_hook.py" else set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: a sibling module
                assert node.level == 1 and (node.module or "") in siblings | {""}, ast.dump(node)
                continue
            names = [node.module or ""]
        else:
            continue
        for name in names:
            assert name.split(".")[0] in allowed, f"{module} imports {name}"
