"""The pure deadline state, driven by hand-fed times (deterministic, instant)."""

from __future__ import annotations

import math

from harness.client import ClientSettings
from harness.client.deadlines import DeadlineState, describe_deadlines

S = ClientSettings(first_byte_s=2.0, stream_idle_s=1.0, stale_call_s=5.0, hard_ceiling_s=20.0)


def state(settings: ClientSettings = S) -> DeadlineState:
    st = DeadlineState(settings, call_started_at=100.0)
    st.start_attempt(100.0)
    return st


def test_first_byte_is_next_before_any_activity() -> None:
    d = state().next_deadline()
    assert d is not None and (d.name, d.at) == ("first_byte_s", 102.0)


def test_content_replaces_first_byte_with_idle_and_resets_stale() -> None:
    st = state()
    st.content(101.5)
    d = st.next_deadline()
    assert d is not None and (d.name, d.at) == ("stream_idle_s", 102.5)
    assert {x.name for x in st.deadlines()} == {"hard_ceiling_s", "stale_call_s", "stream_idle_s"}


def test_comments_feed_idle_but_never_stale() -> None:
    st = state()
    st.content(100.5)
    for t in (101.0, 102.0, 103.0, 104.0, 105.0):
        st.comment(t)
    assert st.expired(105.4) is None
    d = st.expired(105.5)
    assert d is not None and d.name == "stale_call_s"  # 100.5 + 5


def test_comments_do_not_count_when_switched_off() -> None:
    st = state(S.replace(idle_counts_comments=False))
    st.comment(100.5)
    d = st.next_deadline()
    assert d is not None and d.name == "first_byte_s"


def test_comment_satisfies_first_byte_when_counted() -> None:
    st = state()
    st.comment(101.0)
    d = st.next_deadline()
    assert d is not None and (d.name, d.at) == ("stream_idle_s", 102.0)


def test_hard_ceiling_spans_attempts_and_wins_ties() -> None:
    st = DeadlineState(S.replace(first_byte_s=10.0, stale_call_s=None), call_started_at=100.0)
    st.start_attempt(100.0)
    st.done(101.0)
    st.start_attempt(110.0)  # first byte would be due at 120 = hard ceiling
    d = st.next_deadline()
    assert d is not None and d.name == "hard_ceiling_s" and d.at == 120.0


def test_after_done_only_the_hard_ceiling_is_armed() -> None:
    st = state()
    st.done(100.1)
    assert [d.name for d in st.deadlines()] == ["hard_ceiling_s"]


def test_disabled_deadlines_are_never_scheduled() -> None:
    st = state(
        ClientSettings(
            first_byte_s=None, stream_idle_s=None, stale_call_s=None, hard_ceiling_s=None
        )
    )
    assert st.next_deadline() is None and st.expired(10**9) is None
    assert describe_deadlines(st, 100.0) == ""


def test_large_prompt_settings_leave_stale_and_hard_armed() -> None:
    st = state(S.for_prompt(44_000).replace(ttfb_disable_above_tokens=10_000))
    assert "first_byte_s" not in {d.name for d in st.deadlines()}
    d = st.next_deadline()
    assert d is not None and d.name == "stale_call_s"


def test_description_lists_only_armed_deadlines_in_time_order() -> None:
    st = state(S.replace(stale_call_s=None))
    assert describe_deadlines(st, 101.0) == "first byte in 1.00 s, hard ceiling in 19.00 s"


def test_events_outside_an_attempt_change_nothing() -> None:
    st = DeadlineState(S, call_started_at=0.0)
    st.content(1.0)
    st.comment(1.0)
    assert st.first_byte_at is None and [d.name for d in st.deadlines()] == ["hard_ceiling_s"]


def test_non_finite_deadlines_are_never_described_as_a_future_reconnect() -> None:
    """The seed's rule: a disabled watchdog must not be advertised (inf, and None alike)."""
    off = ClientSettings(
        first_byte_s=math.inf, stream_idle_s=None, stale_call_s=math.inf, hard_ceiling_s=None
    )
    st = DeadlineState(off, call_started_at=100.0)
    st.start_attempt(100.0)
    st.content(101.0)
    assert st.deadlines() == [] and describe_deadlines(st, 130.0) == ""
