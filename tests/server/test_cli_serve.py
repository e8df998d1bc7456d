"""`harness serve` as a process: prints its base URL, serves, stops cleanly on SIGTERM/SIGINT."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from harness.server.cli_serve import load_script_file

pytestmark = pytest.mark.timeout(30)
ROOT = Path(__file__).resolve().parents[2]


def start(*args: str) -> subprocess.Popen[str]:
    code = (
        "import sys; from harness.server.cli_serve import serve; "
        "a = sys.argv[1:]; "
        "raise SystemExit(serve(a[0], int(a[1]), a[2] or None, float(a[3]), False))"
    )
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serve_prints_base_url_serves_and_stops_on_signal(
    tmp_path: Path, sig: signal.Signals
) -> None:
    script = tmp_path / "s.toml"
    script.write_text(
        'events = 3\n[[rules]]\nmatch = {attempts = 1}\nfault = {phase = "request", action = "status", code = 503}\n'
    )
    proc = start("127.0.0.1", "0", str(script), "1.0")
    try:
        base_url = proc.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        assert httpx.post(base_url + "/chat/completions", json=body).status_code == 503
        reply = httpx.post(base_url + "/chat/completions", json=body).json()
        assert reply["choices"][0]["message"]["content"].count(" ") == 2
        proc.send_signal(sig)
        assert proc.wait(timeout=10) == 0
        assert "stopped" in proc.stderr.read()
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def test_bad_script_file_exits_2_naming_file_field_and_allowed(tmp_path: Path) -> None:
    script = tmp_path / "bad.json"
    script.write_text('{"framing": "morse"}')
    proc = start("127.0.0.1", "0", str(script), "1.0")
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 2 and out == ""
    assert "bad.json" in err and "framing" in err and "chunked" in err and "Traceback" not in err


def test_a_relay_only_action_in_a_script_file_is_refused_by_the_server(tmp_path: Path) -> None:
    script = tmp_path / "sc.toml"
    script.write_text('[[script.rules]]\nfault = {phase = "headers", action = "swallow_close"}\n')
    proc = start("127.0.0.1", "0", str(script), "1.0")
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 2 and "swallow_close" in err and "relay" in err
    assert "sc.toml" in err  # the file the refused action is in
    assert "Traceback" not in err


def test_load_script_file_reads_script_table(tmp_path: Path) -> None:
    p = tmp_path / "x.toml"
    p.write_text('[script]\nframing = "close"\n')
    assert load_script_file(p).framing == "close"


def test_main_rejects_bad_arguments_with_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    from harness.server.cli_serve import main

    with pytest.raises(SystemExit) as info:
        main(["--time-scale", "0"])
    assert info.value.code == 2 and "--time-scale" in capsys.readouterr().err


def test_serve_refuses_a_remote_host_without_allow_remote(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from harness.server.cli_serve import serve

    assert serve(["--host", "0.0.0.0"]) == 2
    assert "allow_remote" in capsys.readouterr().err


def test_serve_with_allow_remote_warns_visibly_that_the_host_is_reachable(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from harness.server.cli_serve import serve

    # 192.0.2.1 (TEST-NET-1) is no address of this machine: the bind fails, nothing listens
    assert serve("192.0.2.1", 0, None, 1.0, True) == 2
    err = capsys.readouterr().err
    assert "warning: binding to non-loopback host 192.0.2.1" in err
    assert "reachable from the network" in err and "cannot listen" in err


def test_library_remote_bind_logs_below_warning_so_namespace_runs_stay_quiet(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import logging

    from harness.server import FaultServer
    from harness.server.fault_server import ServerError

    caplog.set_level(logging.DEBUG, logger="harness.server.fault_server")
    with pytest.raises(ServerError, match="cannot listen"):
        FaultServer(host="192.0.2.1", allow_remote=True).start()
    notes = [r for r in caplog.records if "non-loopback" in r.getMessage()]
    assert [r.levelno for r in notes] == [logging.INFO]
