"""Properties over the fault model (Hypothesis): for any fault script, a call ends within
its hard ceiling, never returns truncated or mixed text as complete, and the next call
succeeds; a state machine over chat / rebuild / close / inject fault / heal keeps that."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from harness.client import ClientSettings, ReferenceClient, errors
from harness.faults import script_from_dict
from harness.server import FaultServer

from .support import USER, client_sockets

#: Tenths of seconds, but not so tight that a loaded machine's slow answer looks like a fault.
TINY = ClientSettings(
    first_byte_s=0.2,
    stream_idle_s=0.2,
    stale_call_s=0.5,
    hard_ceiling_s=1.2,
    connect_timeout_s=1.0,
    read_timeout_s=5.0,
    backoff_initial_s=0.005,
    backoff_max_s=0.01,
    retry_after_max_s=0.05,
)

_body_phase = st.one_of(
    st.just("headers"),
    st.integers(0, 12).map(lambda n: f"event:{n}"),
    st.integers(0, 400).map(lambda n: f"bytes:{n}"),
)
_any_phase = st.one_of(st.sampled_from(["request"]), _body_phase)

FAULTS = st.one_of(
    st.builds(lambda p: {"phase": p, "action": "hang"}, _any_phase),
    st.builds(lambda p: {"phase": p, "action": "fin"}, _any_phase),
    st.builds(lambda p: {"phase": p, "action": "rst"}, _any_phase),
    st.builds(lambda p: {"phase": p, "action": "half_close"}, _any_phase),
    st.builds(lambda p: {"phase": p, "action": "truncate"}, _body_phase),
    st.builds(lambda n: {"phase": f"event:{n}", "action": "malformed"}, st.integers(0, 12)),
    st.builds(
        lambda p, i: {"phase": p, "action": "drip", "interval_s": i},
        _body_phase,
        st.sampled_from([0.02, 0.05]),
    ),
    st.builds(
        lambda p, d: {"phase": p, "action": "slow", "delay_s": d},
        _body_phase,
        st.sampled_from([0.0, 0.01, 0.2]),
    ),
    st.builds(
        lambda c, r: {"phase": "request", "action": "status", "code": c, "retry_after_s": r},
        st.sampled_from([400, 429, 500, 502, 503]),
        st.sampled_from([None, 0.0, 0.02]),
    ),
)
SCRIPTS = st.builds(
    lambda fault, attempts, framing: {
        "framing": framing,
        "rules": [{"match": {"attempts": attempts} if attempts else {}, "fault": fault}],
    },
    FAULTS,
    st.one_of(st.none(), st.lists(st.integers(1, 3), min_size=1, max_size=3, unique=True)),
    st.sampled_from(["chunked", "content-length", "close"]),
)
CALLS = st.tuples(st.sampled_from(["chat", "responses", "messages"]), st.booleans())


def check_one_call(client: ReferenceClient, srv: FaultServer, api: str, stream: bool) -> bool:
    """Run one call; assert the invariants; True if it returned a reply."""
    try:
        reply = client.complete(USER, api=api, stream=stream)
    except errors.HarnessError as err:
        # Ended by our deadlines, never by httpx's read timeout (5 s, past the 1.2 s ceiling);
        # how late a deadline fires is `harness bench watchdog`'s figure, not a bound here.
        final = err.attempts[-1] if isinstance(err, errors.RetriesExhausted) else err
        assert err.elapsed_s is not None and final.deadline != "read_timeout_s", repr(err)
        ok = False
    else:
        # never partial, truncated or mixed text: exactly the full reply
        assert reply.text == srv.requests()[-1].expected_text
        ok = True
    return ok


@pytest.mark.timeout(120)
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(script=SCRIPTS, call=CALLS)
def test_any_fault_script_ends_in_time_never_returns_partial_text_and_the_next_call_succeeds(
    server: FaultServer, script: dict[str, Any], call: tuple[str, bool]
) -> None:
    api, stream = call
    client = ReferenceClient(server.base_url, settings=TINY)
    try:
        server.load(script_from_dict(script))
        check_one_call(client, server, api, stream)
        server.load(script_from_dict({"framing": script["framing"]}))
        assert check_one_call(client, server, api, stream), "the call after healing must succeed"
    finally:
        client.close()


class ChatMachine(RuleBasedStateMachine):
    """chat / rebuild / close / inject fault / heal on one client, against one server."""

    def __init__(self) -> None:
        super().__init__()
        self.srv = FaultServer()
        self.srv.__enter__()
        self.port = int(self.srv.url.rsplit(":", 1)[1])
        self.client = ReferenceClient(self.srv.base_url, settings=TINY)
        self.healthy = True

    @rule(call=CALLS)
    def chat(self, call: tuple[str, bool]) -> None:
        ok = check_one_call(self.client, self.srv, *call)
        if self.healthy:
            assert ok, "a healthy server must get a successful call"

    @rule()
    def rebuild(self) -> None:
        self.client.rebuild()

    @rule()
    def close(self) -> None:
        self.client.close()
        assert client_sockets(self.port) == []

    @rule(script=SCRIPTS)
    def inject_fault(self, script: dict[str, Any]) -> None:
        self.srv.load(script_from_dict(script))
        self.healthy = False

    @rule()
    def heal(self) -> None:
        self.srv.load(script_from_dict(None))
        self.healthy = True

    @invariant()
    def no_watchdog_thread_outlives_its_call(self) -> None:
        assert not [t for t in threading.enumerate() if t.name == "harness-watchdog"]

    def teardown(self) -> None:
        self.client.close()
        assert client_sockets(self.port) == []
        self.srv.__exit__(None, None, None)


ChatMachine.TestCase.settings = settings(max_examples=10, stateful_step_count=10, deadline=None)
TestChatMachine = ChatMachine.TestCase
