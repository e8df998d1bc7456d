"""``harness posture``: what each target's transport would do if its peer died.

For every ``-t`` target two cases on the embedded fault server, in real time
(``time_scale`` 1): a healthy call made twice (connection reuse), and one call held
open by a silent peer for ``--hold-s`` seconds (status and one event, then nothing).
The options of every socket the target opened are read from the live sockets
(``harness.posture``) and tied to what each carried (``harness.posture.carried``); the
table shows the sockets that carried the model calls -- keepalive (idle/interval x count),
TCP_USER_TIMEOUT, TCP_NODELAY, connection reuse, when the silent call gave up by
itself (the target's read timeout or watchdog, where it fires within the hold), and
the worst-case time to notice a silent dead peer this posture implies -- while
waiting and with a request in flight (``harness.posture.facts``); endpoint probes and
idle connections are counted apart, never judged. A healthy call that failed is shown
as such in place of reuse. "unknown" where the platform cannot say. ``--json FILE``
writes ``{"targets": {name: {...}}}``.

Exit status 0; 2 on bad input (an unknown target, a bad ``--hold-s``, an unwritable
``--json``).

Not here: the facts (``harness.posture``), the per-target summary
(``harness.report.posture.probe_summary``).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

from harness.apis import default_of
from harness.cli.common import (
    EXIT_OK,
    UsageError,
    check_report_paths,
    out_console,
    selected_targets,
)

__all__ = ["DEFAULT_HOLD_S", "probe_scenarios", "register"]

#: How long the silent peer holds the call, real seconds: past the deadlines most
#: clients tune for a stalled stream, short enough for a run of a few targets.
DEFAULT_HOLD_S = 10.0
_CONNECTION_TIMEOUT_SLACK_S = 5.0
#: Seconds between the healthy reply's events (20 tokens/s).
HEALTHY_PACE_S = 0.05


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "posture",
        help="socket posture of targets: keepalive, user timeout, dead-peer bound",
        description="Read each target's socket options from its live sockets during a "
        "healthy call and a call held by a silent peer; print what they imply.",
    )
    parser.add_argument(
        "--target", "-t", action="append", metavar="TARGET", help="target (repeatable)"
    )
    parser.add_argument(
        "--hold-s",
        type=float,
        default=DEFAULT_HOLD_S,
        metavar="S",
        help=f"how long the silent peer holds the call, real seconds (default {DEFAULT_HOLD_S:g})",
    )
    parser.add_argument("--json", metavar="FILE", help="write the posture report as JSON")
    parser.set_defaults(func=cmd_posture)


def cmd_posture(args: argparse.Namespace) -> int:
    hold = args.hold_s
    if not (math.isfinite(hold) and hold > 0):
        raise UsageError(f"--hold-s {hold!r} is not valid; allowed: a number of seconds > 0")
    if not args.target:
        raise UsageError("posture needs at least one --target / -t")
    targets = selected_targets(args)
    check_report_paths(args, ("json",))
    from harness.report.posture import probe_summary
    from harness.runner import RunSettings, run_cases
    from harness.targets import load_target

    cases = []
    for target in targets:
        api = _api_for(load_target(target))
        cases += [(s, target) for s in probe_scenarios(api=api, hold_s=hold)]
    started = time.time()
    # the hold is the silent case's whole ceiling, whatever floor the target's own
    # backoff asks of a judged run (hermes: 60 s)
    settings = RunSettings(
        time_scale=1.0, min_ceiling_s=hold, keep_timeline=True, target_floor=False
    )
    results = run_cases(cases, settings=settings)
    by_key = {(r.scenario, r.target): r for r in results}
    report = {
        "hold_s": hold,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "targets": {
            t: probe_summary(
                by_key[("posture_healthy", t)], by_key[("posture_silent", t)], hold_s=hold
            )
            for t in targets
        },
    }
    _print_table(report)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return EXIT_OK


def probe_scenarios(*, api: str, hold_s: float) -> list[Any]:
    """The two cases of ``harness posture`` for a target that speaks ``api``."""
    from harness.scenario import scenario_from_dict

    base = {"api": api, "stream": True, "expected": {}}
    healthy = scenario_from_dict(
        {
            **base,
            "name": "posture_healthy",
            "summary": "a healthy streamed call at a provider's pace, made twice on one client",
            "ceiling_s": hold_s + _CONNECTION_TIMEOUT_SLACK_S,
            "request": {"calls": 2},
            # paced like a real provider, so its sockets are still open when sampled
            "script": {
                "rules": [
                    {"fault": {"phase": "event:0", "action": "slow", "delay_s": HEALTHY_PACE_S}}
                ]
            },
        }
    )
    silent = scenario_from_dict(
        {
            **base,
            "name": "posture_silent",
            "summary": f"status and one event, then a silent peer for {hold_s:g} s",
            "ceiling_s": hold_s,
            "script": {"rules": [{"fault": {"phase": "event:1", "action": "hang"}}]},
            "budget": {"max_requests": 1},
        }
    )
    return [healthy, silent]


def _api_for(cls: Any) -> str:
    return default_of(cls.apis or ())  # declared on Target


def _print_table(report: dict[str, Any]) -> None:
    from rich.table import Table

    hold = report["hold_s"]
    table = Table(title=f"socket posture (silent peer held {hold:g} s)", header_style="bold")
    for name in (
        "target",
        "keepalive idle/intvl x cnt",
        "user timeout",
        "nodelay",
        "reuse",
        "silent call gave up",
        "dead peer noticed (waiting)",
        "in flight",
    ):
        table.add_column(name, overflow="fold")
    for target, s in report["targets"].items():
        first = _shown(s["connections"])
        failed = s.get("healthy_failed")
        table.add_row(
            target,
            _keepalive(first),
            _user_timeout(first),
            "unknown" if first is None else str(first.get("nodelay")),
            f"healthy call failed: {failed}"
            if failed
            else {True: "yes", False: "no", None: "-"}[s["reuse"]],
            f"{s['gave_up_after_s']:g} s" if s["gave_up_after_s"] is not None else f"> {hold:g} s",
            _bound(s["known"], s["dead_peer_bound_s"], s["dead_peer_bound_by"], s["reason"]),
            _bound(s["in_flight_known"], s["in_flight_bound_s"], s["in_flight_bound_by"], ""),
        )
    out = out_console()
    out.print(table)
    for target, s in report["targets"].items():
        sampled = len(s["connections"])
        line = f"{target}: {s['posture']}"
        line += f"; not judged: {s['apart']}" if s.get("apart") else ""
        line += f" ({sampled} connection(s) sampled"
        line += f"; {s['reason']})" if s["reason"] else ")"
        out.print(line, highlight=False, markup=False)
        if s.get("healthy_failed"):
            why = f"{target}: the healthy call failed ({s['outcomes']['healthy']}): reuse unknown"
            out.print(why, highlight=False, markup=False)


def _shown(conns: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The connection a row shows: the silent call's model-call socket, else the
    healthy call's, else any untied one; never a probe's or an idle one's."""
    for carried in ("model_call", "unknown"):
        for call in ("silent", "healthy"):
            found = [
                c for c in conns if c.get("call") == call and c.get("carried", "unknown") == carried
            ]
            if found:
                return found[0]
    return None


def _keepalive(conn: dict[str, Any] | None) -> str:
    if conn is None:
        return "unknown"
    ka = conn.get("keepalive") or {}
    if ka.get("enabled") == "unknown":
        return "unknown"
    if not ka.get("enabled"):
        return "off"
    return f"{_n(ka.get('idle_s'))}/{_n(ka.get('interval_s'))} x {_n(ka.get('count'))}"


def _user_timeout(conn: dict[str, Any] | None) -> str:
    if conn is None:
        return "unknown"
    value = conn.get("user_timeout_s")
    return "off" if value is None else ("unknown" if value == "unknown" else f"{_n(value)} s")


def _bound(known: bool, seconds: float | None, by: str, why: str) -> str:
    if not known:
        return f"unknown ({why})" if why else "unknown"
    # the silent call's own end: whatever deadline the client has, not only a read timeout
    by = "its own deadline" if by == "read_timeout" else by
    return "never" if seconds is None else f"{_n(seconds)} s ({by})"


def _n(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
