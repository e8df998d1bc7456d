"""Every action at every phase faults.py allows it, on the server: the fault fires, the
client sees the documented ending, and the server serves the next connection normally."""

from __future__ import annotations

import pytest

from harness.faults import ACTIONS, fault_from_dict, script_from_dict
from harness.server import FaultServer
from tests.server.rawhttp import read_until, request_bytes, send

pytestmark = pytest.mark.timeout(20)

PHASES = {
    "accept": "accept",
    "request": "request",
    "headers": "headers",
    "event": "event:2",
    "bytes": "bytes:30",
    "idle": "idle",
}
PARAMS = {
    "hang": {"duration_s": 0.05},
    "drip": {"interval_s": 0.01, "duration_s": 0.05},
    "slow": {"delay_s": 0.001},
    "status": {"code": 503},
    "close_idle": {"after_s": 0.01},
    "stall_upload": {"after_bytes": 10, "duration_s": 0.05},
}
#: the ending a raw client sees: "eof"/"reset" before a complete body, "complete", "clean-cut"
ENDINGS = {
    "hang": "eof",
    "fin": "eof",
    "half_close": "eof",
    "rst": "reset",
    "drip": "eof",
    "slow": "complete",
    "status": "status",
    "malformed": "complete",
    "truncate": "clean-cut",
    "close_idle": "eof-after-complete",
    "stall_upload": "complete",
    # payload faults: the stream's events themselves are edited
    "comment": "complete",
    "cut_tool_call": "clean-cut",
    "drop_event": "complete",
    "drop_field": "complete",
    "duplicate_event": "complete",
    "inband_error": "clean-cut",
    "swap_events": "complete",
}
CASES = [
    (name, kind)
    for name, cls in sorted(ACTIONS.items())
    if "server" in cls.backends
    for kind in cls.phases
]


def observe(server: FaultServer, idle: bool, until_eof: bool) -> tuple[bytes, str, bool]:
    """(payload, ending, complete) of the faulted exchange."""
    with send(server.port) as s:
        if idle:
            first = read_until(s, 5, until=b"0\r\n\r\n")
            assert first.body()[1]
            try:
                s.sendall(request_bytes())
            except (BrokenPipeError, ConnectionResetError):
                return b"", "reset", False
        got = read_until(s, 5, complete=not until_eof)
    if not got.data:
        return b"", got.ending, False
    payload, complete = got.body()
    return payload, got.ending, complete


@pytest.mark.parametrize(("action", "kind"), CASES)
def test_action_at_phase(server: FaultServer, action: str, kind: str) -> None:
    fault = {"phase": PHASES[kind], "action": action, **PARAMS.get(action, {})}
    fault_from_dict(fault)  # the combination is valid by construction
    server.load(script_from_dict({"rules": [{"match": {"attempts": 1}, "fault": fault}]}))
    payload, ending, complete = observe(
        server, idle=(kind == "idle" and action != "close_idle"), until_eof=action == "close_idle"
    )
    expected = ENDINGS[action]
    if kind == "idle" and action != "close_idle":
        assert (
            payload == b"" and ending in ("eof", "reset") if action != "hang" else ending == "eof"
        )
    elif expected == "eof":
        assert ending == "eof" and not complete and b"[DONE]" not in payload
    elif expected == "reset":
        assert ending == "reset"
    elif expected == "complete":
        assert complete and payload.endswith(b"data: [DONE]\n\n")
    elif expected == "status":
        assert complete and b'"error"' in payload
    elif expected == "clean-cut":
        assert complete and b"[DONE]" not in payload
    elif expected == "eof-after-complete":
        assert complete and ending == "eof"
    assert server.wait_for("fault", timeout=5).detail["action"] == action
    with send(server.port) as s:  # attempt 2: healthy, on a fresh connection
        assert read_until(s, 5, until=b"0\r\n\r\n").body()[1]
