"""When the gateway calls its LiteLLM proxy ready: at uvicorn's "running" line, and only
once the port accepts a connection.

The proxies here are small Python programs that print uvicorn's lines in uvicorn's order
(``Server.startup``: the app's startup, "Application startup complete", then the bind,
then "Uvicorn running on"): what matters is the order of lines and the kernel's answer on
the port, which these reproduce with real sockets; the real proxy is
tests/targets/test_litellm_proxy.py's.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from harness.gateway.litellm_main import _await_proxy, _Drain, _Proxy
from harness.gateway.litellm_proxy import Gateway, GatewayError
from harness.ports import named_port

pytestmark = pytest.mark.timeout(60)


def _proxy(script: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )


def _finish(proxy: subprocess.Popen[bytes]) -> None:
    proxy.kill()
    proxy.wait(timeout=30)


def test_a_proxy_that_says_it_runs_on_a_listening_port_is_ready():
    with socket.create_server(("127.0.0.1", 0)) as listener:  # the proxy's bound socket
        port = listener.getsockname()[1]
        proxy = _proxy(
            "print('INFO:     Application startup complete.', flush=True)\n"
            f"print('INFO:     Uvicorn running on http://127.0.0.1:{port}', flush=True)\n"
            "import time; time.sleep(30)"
        )
        try:
            drain = _Drain(proxy)
            assert _await_proxy(drain, port) is None
            assert drain.running
        finally:
            _finish(proxy)


def test_the_startup_line_alone_is_not_ready_a_proxy_that_exits_before_binding_is_named():
    # uvicorn prints "Application startup complete" before it binds; a bind that then
    # fails (the port taken) exits. Ready at that line, a client would be refused.
    proxy = _proxy(
        "print('INFO:     Application startup complete.', flush=True)\nraise SystemExit(1)"
    )
    try:
        failed = _await_proxy(_Drain(proxy), named_port())
        assert failed is not None
        assert "exited before it ran" in failed
        assert "Application startup complete" in failed
        assert "(proxy exited with 1)" in failed
    finally:
        _finish(proxy)


def test_a_proxy_that_says_it_runs_on_a_port_nobody_listens_on_is_named_not_ready():
    with socket.socket() as s:  # a port that refuses: bound, never listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        proxy = _proxy(
            f"print('INFO:     Uvicorn running on http://127.0.0.1:{port}', flush=True)\n"
            "import time; time.sleep(30)"
        )
        try:
            failed = _await_proxy(_Drain(proxy), port)
        finally:
            _finish(proxy)
    assert failed is not None
    assert f"127.0.0.1:{port} refuses" in failed


def test_each_job_is_told_whether_the_proxy_still_listens_from_the_kernels_table():
    proxy = _proxy("print('INFO:     Uvicorn running on', flush=True)\nimport time; time.sleep(30)")
    try:
        with socket.create_server(("127.0.0.1", 0)) as listener:
            port = listener.getsockname()[1]
            served = _Proxy(proxy, port, _Drain(proxy))
            assert served.down() is None
        down = served.down()  # the listening socket closed, the process alive
        assert down is not None and f"does not listen on {port}" in down
        proxy.kill()
        proxy.wait(timeout=30)
        down = served.down()
        assert down is not None and f"exited with {proxy.returncode}" in down
    finally:
        _finish(proxy)


def test_a_job_begun_on_a_proxy_that_is_down_raises_the_gateways_reason():
    # The gateway's side of the line protocol from a pipe: what litellm_main sends when
    # the proxy is down at a job's begin (tested above), then its "ended".
    read_fd, write_fd = os.pipe()
    sent: list[bytes] = []
    gateway = Gateway(read_fd, sent.append, [lambda: os.close(read_fd)])
    try:
        lines = (
            {
                "event": "begun",
                "t": 1.0,
                "fenced": 0,
                "proxy_down": "the LiteLLM proxy exited with -9: x",
            },
            {"event": "ended", "events": [], "relay": []},
        )
        os.write(write_fd, b"".join(json.dumps(m).encode() + b"\n" for m in lines))
        with pytest.raises(GatewayError, match="exited with -9"):
            gateway.begin(("127.0.0.1", 9))
        assert [json.loads(m)["cmd"] for m in sent] == ["begin", "end"]
    finally:
        os.close(write_fd)
        gateway.close()
