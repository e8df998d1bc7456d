"""Every action at every phase faults.py allows it, on the server: the fault fires, the
client sees the documented ending, and the server serves the next connection normally."""

from __future__ import annotations

import pytest

from harness.faults import ACTIONS, fault_from_dict, script_from_dict
from harness.replies import DEFAULT_TOOL_SPEC, tools_for_api
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


#: a request that offers the default tool: a fault on the tool call needs a reply with one
#: (the server calls a tool only when offered one; ``cut_tool_call`` has nothing to cut
#: in a text reply)
TOOL_BODY = {
    "model": "m",
    "messages": [{"role": "user", "content": "hi"}],
    "stream": True,
    "tools": tools_for_api([DEFAULT_TOOL_SPEC], "chat"),
}
TOOL_ACTIONS = frozenset({"cut_tool_call"})


def observe(
    server: FaultServer, idle: bool, until_eof: bool, body: dict | None = None
) -> tuple[bytes, str, bool]:
    """(payload, ending, complete) of the faulted exchange."""
    with send(server.port, body=body) as s:
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
    tool = action in TOOL_ACTIONS
    rules = [{"match": {"attempts": 1}, "fault": fault}]
    server.load(script_from_dict({"rules": rules, **({"reply": "tool_call"} if tool else {})}))
    payload, ending, complete = observe(
        server,
        idle=(kind == "idle" and action != "close_idle"),
        until_eof=action == "close_idle",
        body=TOOL_BODY if tool else None,
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
