"""One time axis for ``harness explain``: server, network and client events, faults marked.

Times are ``time.monotonic()`` stamps from the server (in the runner process) and from
the target child; on Linux the clock is system-wide, so they merge directly. The axis
starts at the client's ``started`` stamp (or the first event) and is shown in
milliseconds of real time and in scenario seconds (real / time_scale).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from harness.outcome import FAULT_KINDS, NOT_RUN
from harness.report.common import evidence_lines, fmt_cause, fmt_verdict
from harness.report.posture import connection_lines

__all__ = ["relay_story", "render_timeline", "request_lines", "timeline_rows", "verdict_story"]

#: Printed under a timeline that has relay TCP samples: what the four legs are.
RELAY_LEGEND = (
    "relay tcp legs: client = the target's socket; relay_client = the relay's socket facing "
    "it; relay_upstream = the relay's socket to the server; upstream = the server's socket. "
    "CLOSE_WAIT on relay_upstream: the provider closed and the proxy never did."
)

#: Consecutive identical server events (e.g. 500 ``event_sent``) are folded past this.
FOLD_AFTER = 3


def timeline_rows(result: Any) -> list[tuple[float, str, str, str]]:
    """``(t, side, kind, detail)`` rows sorted by time; side is server, client, runner, or
    a network source (relay, toxiproxy, netem, kernel)."""
    rows: list[tuple[float, str, str, str]] = []
    for event in result.timeline:
        detail = event.get("detail") or {}
        text = (
            ", ".join(f"{k}={v}" for k, v in detail.items())
            if isinstance(detail, dict)
            else str(detail)
        )
        where = ""
        if event.get("conn") is not None:
            where = f"conn {event.get('conn')}"
        if event.get("request") is not None:
            where += f" req {event['request']}"
        if event.get("leg"):
            where = f"{event['leg']} {where}".strip()
        side = str(event.get("source") or "server")
        rows.append((float(event["t"]), side, str(event["kind"]), f"{where}  {text}".strip()))
    if result.t_started is not None:
        rows.append((result.t_started, "client", "call_started", ""))
    for t, kind, detail in result.client_events:
        rows.append((float(t), "client", kind, detail))
    if result.outcome.kind == "hung" and result.t_started is not None:
        rows.append(
            (result.t_started + result.ceiling_s, "runner", "ceiling", "killed the target: hung")
        )
    elif result.t_started is not None and result.elapsed_s is not None:
        rows.append((result.t_started + result.elapsed_s, "client", "result", result.outcome.label))
    rows.sort(key=lambda r: r[0])
    return _fold(rows)


def render_timeline(result: Any, *, console: Console | None = None) -> None:
    console = console or Console()
    if result.outcome.kind in NOT_RUN:  # nothing ran: no time axis
        console.print(
            Text(
                f"{result.scenario} [{result.target}] -- {result.outcome.kind.replace('_', ' ')}"
                f"{_expected(result, ' (expected {})')}: {result.message}",
                style="dim" if result.matched else "bold red",
            )
        )
        for line in verdict_story(result):
            console.print(Text(line))
        return
    rows = timeline_rows(result)
    t0 = result.t_started if result.t_started is not None else (rows[0][0] if rows else 0.0)
    table = Table(
        title=f"{result.scenario} [{result.target}] -- actual {result.outcome.label}"
        + _expected(result, ", expected {}"),
        header_style="bold",
    )
    table.add_column("t (ms)", justify="right")
    table.add_column("scenario s", justify="right", style="dim")
    table.add_column("side")
    table.add_column("event")
    table.add_column("detail", overflow="fold")
    for t, side, kind, detail in rows:
        rel = (t - t0) * 1000
        scen = (t - t0) / result.time_scale if result.time_scale else 0.0
        style = (
            "bold red"
            if kind in FAULT_KINDS
            else ("bold magenta" if side == "runner" else ("cyan" if side == "client" else ""))
        )
        label = ("⚡ " + kind) if kind in FAULT_KINDS else kind
        table.add_row(f"{rel:9.1f}", f"{scen:8.2f}", side, Text(label, style=style), detail)
    console.print(table)
    late = getattr(result, "late_requests", None)
    console.print(
        f"requests seen by the server: {result.requests} (the client says "
        f"{'?' if result.attempts is None else result.attempts}"
        f"{f'; {late} after the call was over' if late else ''}); detection latency: "
        f"{'-' if result.latency_s is None else f'{result.latency_s * 1000:.1f} ms'}; "
        f"leaks: {'?' if result.leaks is None else result.leaks}"
    )
    for line in request_lines(result):
        console.print(Text(line))
    story = relay_story(result)
    if story:
        console.print(Text(RELAY_LEGEND, style="dim"))
        for line in story:
            console.print(Text(line, style="bold"))
    for line in connection_lines(result):  # the sockets as they were, beside a hung stack
        console.print(
            Text(f"posture: {line}", style="bold" if result.outcome.kind == "hung" else "")
        )
    if result.message:
        console.print(Text(result.message, style="dim"))
    for line in verdict_story(result):
        console.print(Text(line, style="bold red" if line.startswith("  ") else "bold"))


def request_lines(result: Any) -> list[str]:
    """One line per LLM request whose body the server read (its ``request_shape`` event):
    stream or not, the tools offered, the roles and message count, and its lineage -- a
    retry of, or a continuation of, which earlier request, and what was appended; in a
    job of several calls, which call of the job sent it (the child's ``call`` marks: a
    job's next call asking the same conversation is a retry on the wire, not the
    client's)."""
    marks = [(float(t), str(d)) for t, kind, d in result.client_events if kind == "call"]
    several = len(marks) > 1
    lines = []
    for e in result.timeline:
        if e.get("kind") != "request_shape":
            continue
        d = e.get("detail") or {}
        tools = ", ".join(d.get("tools") or ()) or "none"
        roles = " ".join(d.get("roles") or ())
        lineage = str(d.get("lineage"))
        if lineage == "retry":
            lineage = f"retry of req {d.get('of')} (model call req {d.get('call')})"
        elif lineage == "continuation":
            added = ", ".join(d.get("appended") or ())
            swapped = ", ".join(d.get("replaced") or ())
            swapped = f"; replaced its {swapped}" if swapped else ""
            lineage = f"continuation of req {d.get('of')} (+ {added}{swapped})"
        else:
            lineage = "new conversation"
        began = [label for t, label in marks if t <= float(e.get("t") or 0.0)]
        if several and began:
            lineage += f"; job call {began[-1].split(':', 1)[0]}"
        lines.append(
            f"req {e.get('request')}: {'stream' if d.get('stream') else 'no stream'}, "
            f"tools {tools}, {d.get('messages')} message(s) [{roles}]: {lineage}"
        )
    return lines


def verdict_story(result: Any) -> list[str]:
    """The verdict, each failed check's evidence (indented), the contract it was judged
    by, the cause chain and the reply text: what ``harness explain`` prints under the axis."""
    lines = [f"verdict: {fmt_verdict(result)}"]
    lines += [f"  {line}" for line in evidence_lines(result)]
    unreached = getattr(result, "not_exercised", "")
    if unreached:
        lines.append(f"  not exercised: {unreached}")
    for rule in getattr(result, "rules", None) or ():
        t0 = getattr(result, "t_started", None)
        at = rule.get("t")
        when = f" at +{at - t0:.3f} s" if at is not None and t0 is not None else ""
        fired = f"fired{when}" if rule.get("fired") else "never fired"
        matched = ", ".join(str(i) for i in rule.get("matched") or ()) or "none"
        lines.append(f"rule {rule.get('rule')}: matched requests {matched}; {fired}")
    contract = getattr(result, "contract", None) or {}
    if contract:
        wanted = (
            "the complete reply" if contract.get("required_reply") else "the reply or a clean error"
        )
        lines.append(
            f"contract: {wanted}, within {contract.get('bound_s')} s "
            f"(from the {contract.get('bound_from')}), at most {contract.get('max_requests')} "
            f"requests; checks: {', '.join(contract.get('checks') or ())}"
        )
    cause = fmt_cause(result)
    if cause:
        lines.append(f"cause: {cause}")
    reply = getattr(result, "reply", None)
    if reply is not None:
        lines.append(f"reply: {reply!r}")
    return lines


def _expected(result: Any, form: str) -> str:
    """``form`` with the expectation, or nothing when there is none (no "expected ,")."""
    return form.format(result.expected) if result.expected else ""


def relay_story(result: Any) -> list[str]:
    """One line per relayed connection whose upstream close was swallowed: when the
    provider's FIN arrived, when the relay's upstream socket was first seen in CLOSE_WAIT,
    and how long the client's leg then stayed ESTABLISHED with no byte sent to it (until
    the client gave up, or the run ended). Times in ms on the explain axis."""
    events = [e for e in result.timeline if e.get("source") == "relay"]
    if not events:
        return []
    t0 = result.t_started if result.t_started is not None else float(events[0]["t"])
    lines = []
    for conn in dict.fromkeys(e.get("conn") for e in events if e.get("kind") == "swallowed"):
        mine = [e for e in events if e.get("conn") == conn]
        swallowed = next(float(e["t"]) for e in mine if e["kind"] == "swallowed")
        fin = next((float(e["t"]) for e in mine if e["kind"] == "upstream_fin"), swallowed)
        close_wait = next(
            (
                float(e["t"])
                for e in mine
                if e["kind"] == "tcp"
                and str((e.get("states") or {}).get("relay_upstream", "")).startswith("CLOSE_WAIT")
            ),
            None,
        )
        sent_after = sum(1 for e in mine if e["kind"] == "bytes_down" and float(e["t"]) > swallowed)
        end_event = next(
            (
                e
                for e in mine
                if e["kind"] in ("client_fin", "client_reset", "closed", "cut")
                and float(e["t"]) > swallowed
            ),
            None,
        )
        end = float(end_event["t"]) if end_event is not None else None
        client_states = sorted(
            {
                str((e.get("states") or {}).get("client", "?")).split(" ", 1)[0]
                for e in mine
                if e["kind"] == "tcp" and swallowed < float(e["t"]) <= (end or float("inf"))
            }
        )
        ms = lambda t: f"{(t - t0) * 1000:.1f} ms"  # noqa: E731 - local formatter
        cw = (
            f"relay_upstream in CLOSE_WAIT (seen at {ms(close_wait)})"
            if close_wait is not None
            else "relay_upstream CLOSE_WAIT not sampled (see the tcp rows)"
        )
        silent = (
            "no byte sent to the client" if sent_after == 0 else f"{sent_after} sends to the client"
        )
        killed_at = (
            result.t_started + result.ceiling_s
            if result.outcome.kind == "hung" and result.t_started is not None
            else None
        )
        if end_event is None:
            until = "until the end of the run"
        elif killed_at is not None and end >= killed_at:
            until = (
                f"for {(end - swallowed) * 1000:.1f} ms, until the runner killed the hung target "
                f"({end_event['kind']} at {ms(end)})"
            )
        elif end_event["kind"] in ("client_fin", "client_reset"):
            until = (
                f"for {(end - swallowed) * 1000:.1f} ms, until the client closed it "
                f"({end_event['kind']}) at {ms(end)}"
            )
        else:
            until = f"for {(end - swallowed) * 1000:.1f} ms, until {end_event['kind']} at {ms(end)}"
        leg = "/".join(client_states) if client_states else "state not sampled"
        lines.append(
            f"relay conn {conn}: provider FIN at {ms(fin)} swallowed; {cw}; client leg {leg} "
            f"and silent ({silent}) {until}"
        )
    return lines


def _fold(rows: Sequence[tuple[float, str, str, str]]) -> list[tuple[float, str, str, str]]:
    out: list[tuple[float, str, str, str]] = []
    run = 0
    for i, row in enumerate(rows):
        same = i > 0 and rows[i - 1][1:3] == row[1:3]
        run = run + 1 if same else 0
        nxt_same = i + 1 < len(rows) and rows[i + 1][1:3] == row[1:3]
        if run < FOLD_AFTER or not nxt_same:
            out.append(row)
        elif run == FOLD_AFTER:
            out.append((row[0], row[1], "…", f"more {row[2]} events folded"))
    return out
