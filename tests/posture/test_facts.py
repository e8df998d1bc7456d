"""Posture facts and the dead_peer_bound check, pure: bounds per Linux's keepalive and
user-timeout rules, the worst connection, unknown never read as off."""

from __future__ import annotations

import pytest

from harness.contract.dead_peer import check_dead_peer
from harness.posture.facts import (
    UNKNOWN,
    Keepalive,
    SocketPosture,
    describe,
    notice_bound,
    retransmission_give_up_s,
    worst_bound,
)


def posture(*, enabled=True, idle=30.0, intvl=10.0, cnt=3, user=None, source="getsockopt"):
    return SocketPosture(
        conn=1,
        pid=1,
        local="127.0.0.1:1",
        remote="127.0.0.1:2",
        source=source,
        keepalive=Keepalive(enabled=enabled, idle_s=idle, interval_s=intvl, count=cnt),
        user_timeout_s=user,
        nodelay=True,
        state="ESTABLISHED",
        timer="keepalive" if enabled is True else "off",
        timer_s=29.0,
    )


def test_keepalive_alone_gives_up_after_idle_plus_interval_times_count():
    b = notice_bound(posture(idle=30, intvl=10, cnt=3))
    assert (b.seconds, b.by, b.known) == (60.0, "keepalive", True)


def test_user_timeout_with_keepalive_ends_at_the_first_probe_past_it():
    # probes at 5, 7, 9, ... s: the first one at or past 8 s is 9 s (count does not matter)
    assert notice_bound(posture(idle=5, intvl=2, cnt=100, user=8.0)).seconds == 9.0
    # a user timeout shorter than idle: still one probe first
    assert notice_bound(posture(idle=5, intvl=2, cnt=3, user=1.0)).seconds == 7.0


def test_no_keepalive_while_waiting_is_never_even_with_a_user_timeout():
    b = notice_bound(posture(enabled=False, user=3.0))
    assert b.never and b.text() == "never"


def test_in_flight_is_the_user_timeout_else_the_kernels_retransmissions():
    assert notice_bound(posture(user=3.0), mode="in_flight").seconds == 3.0
    b = notice_bound(posture(), mode="in_flight")
    assert (b.seconds, b.by) == (924.6, "retransmission")
    assert retransmission_give_up_s(15) == 924.6 and retransmission_give_up_s(3) == 3.0


def test_a_read_timeout_known_from_elsewhere_bounds_both():
    assert notice_bound(posture(enabled=False), read_timeout_s=5.0).by == "read_timeout"
    assert notice_bound(posture(), read_timeout_s=600.0).seconds == 60.0


def test_unknown_options_are_unknown_never_off():
    p = posture(enabled=UNKNOWN, idle=UNKNOWN, intvl=UNKNOWN, cnt=UNKNOWN, user=UNKNOWN)
    assert not notice_bound(p).known and notice_bound(p).text() == UNKNOWN
    assert "keepalive unknown" in describe(p) and "user-timeout unknown" in describe(p)
    # on but with its timing unknown (the kernel's table only): still unknown, not never
    assert not notice_bound(posture(idle=UNKNOWN, source="proc")).known
    with pytest.raises(ValueError, match="mode"):
        notice_bound(p, mode="sideways")


def test_worst_connection_decides_and_never_beats_any_time():
    bounds = [notice_bound(posture()), notice_bound(posture(idle=100, intvl=10, cnt=2))]
    assert worst_bound(bounds).seconds == 120.0
    assert worst_bound([*bounds, notice_bound(posture(enabled=False))]).never
    assert not worst_bound([]).known


def test_posture_round_trips_through_its_json_form():
    p = posture(user=2.5)
    assert SocketPosture.from_dict(p.to_dict()) == p
    assert p.to_dict()["keepalive"] == {
        "enabled": True,
        "idle_s": 30.0,
        "interval_s": 10.0,
        "count": 3,
    }


def test_check_passes_fails_by_the_stated_bound_and_says_why():
    sixty = [posture(idle=20, intvl=5, cnt=8).to_dict()]
    assert check_dead_peer("waiting", 90.0, sixty).status == "pass"
    failed = check_dead_peer("waiting", 20.0, sixty)
    assert failed.failed and failed.bound_s == 60.0 and "60 s" in failed.reason
    bare = check_dead_peer("waiting", 120.0, [posture(enabled=False)])
    assert bare.failed and bare.bound_s is None and "never" in bare.reason


def test_check_is_not_applicable_with_the_reason_where_posture_is_unknown():
    why = "socket posture is read on Linux only (this is darwin)"
    unread = check_dead_peer("waiting", 120.0, [], unreadable=why)
    assert (unread.status, unread.reason) == ("not_applicable", why)
    assert check_dead_peer("waiting", 120.0, []).status == "not_applicable"
    proc_only = posture(enabled=UNKNOWN, idle=UNKNOWN, intvl=UNKNOWN, cnt=UNKNOWN, user=UNKNOWN)
    result = check_dead_peer("waiting", 120.0, [proc_only])
    assert result.status == "not_applicable" and not result.failed
