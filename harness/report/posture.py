"""Posture in reports: one compact line per target, one line per connection for explain.

A target's posture over a run is what the connections that carried its model calls had
(``harness.posture.carried``; where none is tied to the server's records, every untied
one): when they agree, one line (``keepalive 30/10x3, user-timeout 60s, dead peer <=
60s``); when they differ, the worst one's (the slowest to notice a dead peer) with
``mixed``. Probe and idle connections are shown apart, after "not judged". Unknown
facts stay "unknown" here too.

Not here: reading posture (``harness.posture``) or judging it (``harness.contract.dead_peer``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from harness.apis import api_of_path
from harness.outcome import NOT_RUN
from harness.posture.carried import carried_counts, judged
from harness.posture.facts import UNKNOWN, SocketPosture, describe, notice_bound, worst_bound

__all__ = ["connection_lines", "posture_note", "target_postures"]


def target_postures(results: Sequence[Any]) -> dict[str, str]:
    """``{target: compact posture line}`` for the targets whose results carry posture."""
    by_target: dict[str, list[SocketPosture]] = {}
    for r in results:
        for entry in _entries(r):
            by_target.setdefault(r.target, []).append(SocketPosture.from_dict(entry))
    return {t: posture_note(conns) for t, conns in by_target.items()}


def posture_note(conns: Iterable[SocketPosture], *, bound: Any = None) -> str:
    """One line for a set of connections (see the module docstring). ``bound``: the
    dead-peer bound already worked out for them (``probe_summary``'s, which counts the
    call's own deadline), so the line and the table that shows it agree."""
    conns, apart = judged(conns)
    if not conns:
        if apart:
            return f"posture of the model call unknown (only {_apart_text(apart)} sampled)"
        return "posture unknown (no connection sampled)"
    bounds = [notice_bound(c) for c in conns]
    worst = worst_bound(bounds) if bound is None else bound
    shown = conns[bounds.index(worst)] if worst in bounds else conns[0]
    kinds = {_options_text(c) for c in conns}
    text = _options_text(shown) + (" (mixed)" if len(kinds) > 1 else "")
    text += f", dead peer noticed: {_bound_text(worst)}"
    return text + (f"; not judged: {_apart_text(apart)}" if apart else "")


def connection_lines(result: Any) -> list[str]:
    """One line per connection of one case, for ``harness explain``."""
    lines = []
    for entry in _entries(result):
        p = SocketPosture.from_dict(entry)
        line = f"conn {p.conn} {p.local}->{p.remote}: {describe(p)}"
        if p.retransmits not in (0, "unknown") or p.probes not in (0, "unknown"):
            line += f" retrans={p.retransmits} probes={p.probes}"
        line += f" [{p.source}]"
        if p.reason:
            line += f" ({p.reason})"
        if p.carried != UNKNOWN:
            line += f" carried {p.carried.replace('_', '-')} (server conn {p.server_conn}"
            line += "".join(f", request {i} {path}" for i, path in p.requests) + ")"
        lines.append(line)
    check = getattr(result, "dead_peer", None)
    if isinstance(check, Mapping):
        lines.append(f"dead_peer_bound: {check.get('status')}: {check.get('reason')}")
    return lines


def _entries(result: Any) -> list[Mapping[str, Any]]:
    return [e for e in (getattr(result, "posture", None) or ()) if isinstance(e, Mapping)]


def _options_text(p: SocketPosture) -> str:
    # describe() without the state and timer: what the client chose, not the moment.
    parts = describe(p).split(" ")
    text = " ".join(parts[1:])
    return text.split(" timer ")[0]


def _apart_text(apart: Sequence[SocketPosture]) -> str:
    """``2 probe, 1 nothing (keepalive off user-timeout off no-nodelay)``."""
    kinds = sorted({_options_text(c) for c in apart})
    return f"{carried_counts(apart)} ({'; '.join(kinds)})"


def _bound_text(bound: Any) -> str:
    if not bound.known:
        return "unknown"
    return "never" if bound.seconds is None else f"<= {bound.seconds:g}s"


def probe_summary(healthy: Any, silent: Any, *, hold_s: float) -> dict[str, Any]:
    """What ``harness posture`` reports of one target from its two cases: a healthy
    call (twice: connection reuse) and one call held open by a silent peer.

    ``gave_up_after_s``: the silent call ended by itself after this long (an application
    deadline: a read timeout or a watchdog; None: still waiting at ``hold_s``).
    ``dead_peer_bound_s``: the worst model-call connection's time to notice a dead peer
    while waiting, its kernel posture or that deadline, whichever ends first (None with
    ``known``: never); the probe and idle connections are counted in ``apart``.
    ``reuse`` is None when the healthy call failed (``healthy_failed`` says how): a
    failed call says nothing of reuse."""
    conns = [
        {**dict(e), "call": call}
        for call, result in (("healthy", healthy), ("silent", silent))
        for e in _entries(result)
    ]
    held, _ = judged(SocketPosture.from_dict(e) for e in _entries(silent))
    if not held:
        held, _ = judged(SocketPosture.from_dict(e) for e in _entries(healthy))
    _, apart = judged(SocketPosture.from_dict(e) for e in conns)
    gave_up = _gave_up_after(silent)
    waiting = worst_bound(notice_bound(c, read_timeout_s=gave_up) for c in held)
    in_flight = worst_bound(notice_bound(c, mode="in_flight", read_timeout_s=gave_up) for c in held)
    failed = None if healthy.outcome.kind == "ok" else healthy.outcome.label
    return {
        "connections": conns,
        "posture": posture_note(held, bound=waiting) if held else "unknown",
        "dead_peer_bound_s": waiting.seconds,
        "dead_peer_bound_by": waiting.by,
        "known": waiting.known,
        "in_flight_bound_s": in_flight.seconds,
        "in_flight_bound_by": in_flight.by,
        "in_flight_known": in_flight.known,
        "gave_up_after_s": gave_up,
        "hold_s": hold_s,
        "reuse": None if failed else _reused(healthy),
        "healthy_failed": failed,
        "apart": _apart_text(apart) if apart else "",
        "reason": waiting.why,
        "outcomes": {"healthy": healthy.outcome.label, "silent": silent.outcome.label},
    }


def _gave_up_after(result: Any) -> float | None:
    if result.outcome.kind == "hung" or result.outcome.kind in NOT_RUN:
        return None
    seconds = result.latency_s if result.latency_s is not None else result.elapsed_s
    return None if seconds is None else round(float(seconds), 3)


def _reused(result: Any) -> bool | None:
    """True when the second healthy model call went over the first call's connection
    (probes on connections of their own do not count)."""
    heads = [e for e in result.timeline if e.get("kind") == "request_head"]
    if heads:
        calls = [
            e for e in heads if api_of_path(str((e.get("detail") or {}).get("path"))) is not None
        ]
        conns = [e.get("conn") for e in calls]
    else:  # a timeline recorded before request heads carried their path
        conns = [e.get("conn") for e in result.timeline if e.get("kind") == "request_read"]
    if len(conns) < 2:
        return None
    return len(set(conns)) < len(conns)
