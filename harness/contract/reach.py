"""Was the scenario's fault reached? A fault that never fired judges nothing.

A case is judged under its contract only where what the scenario tests happened: its
scripted fault fired (a ``fault`` event on the server's timeline, or a network fault
the runner fired: a Toxiproxy toxic, a kernel cut, a relay that stopped relaying, or
one that swallowed a close or cut an idle leg -- a switch to a relay mode that only acts
on what the server does is not a fault by itself), and the target made
the calls the job asks for. Otherwise the case is **not exercised** (verdict
``not_exercised``), with the reason read from the server's records::

    the rule matches attempt 2; the client made 1 request
    the target made 1 of 3 calls
    every call was a new connection; nothing was pooled
    the client made no request the server read

Each rule's own record (:func:`rule_firings`): which requests it matched and when it
fired, read from the same records and timeline. Pure: no sockets, no clock.

Not here: the verdict (``harness.contract.verdict``) or running the case.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.outcome import FAULT_KINDS
from harness.relay.modes import MODE_TYPES

__all__ = ["REACHABLE_KINDS", "rule_firings", "unreached"]

#: Outcomes a fault that never fired leaves unjudged: what the call did says nothing
#: about the fault. A hang, a crash or an executed cut tool call is a finding whatever
#: the script (a client that hangs on healthy traffic is broken), so it is judged.
REACHABLE_KINDS = frozenset(
    {"ok", "error", "truncated_as_complete", "wrong_content", "error_as_reply", "false_kill"}
)
#: The relay's own records of a fault taking effect on a connection: a close swallowed
#: (``swallow_close``), an idle client leg cut (``idle_cut``).
_RELAY_EFFECTS = frozenset({"swallowed", "idle_cut"})


def rule_firings(
    rules: Sequence[Any],
    records: Sequence[Any],
    timeline: Sequence[Mapping[str, Any]],
    *,
    time_scale: float = 1.0,
) -> list[dict[str, Any]]:
    """Per rule of the script: ``rule`` (its text), ``matched`` (the request indexes it
    matched), ``fired`` and ``t`` (the first time its fault fired; None: never). A
    request's record carries its rule as the server ran it, at the case's
    ``time_scale``: matched in that form."""
    fault_events = [e for e in timeline if e.get("kind") == "fault"]
    out = []
    for rule in rules:
        text = str(rule.fault)
        served = str(rule.fault.scaled(time_scale))
        matched = [int(_get(r, "index")) for r in records if _get(r, "fault") == served]
        # an idle-phase fault fires after its request's record was made: known by its action
        times = [
            float(e["t"])
            for e in fault_events
            if e.get("request") in matched
            or (e.get("detail") or {}).get("action") == rule.fault.name
        ]
        out.append(
            {
                "rule": text,
                "matched": matched,
                "fired": bool(times),
                "t": min(times) if times else None,
            }
        )
    return out


def unreached(
    scenario: Any,
    records: Sequence[Any],
    timeline: Sequence[Mapping[str, Any]],
    *,
    outcome_kind: str,
    time_scale: float = 1.0,
    client_events: Sequence[Sequence[Any]] | None = None,
) -> str | None:
    """Why this case did not exercise its scenario (None: it did). ``records`` are the
    LLM request records, ``timeline`` the server's and the network path's events; a
    record names its rule as the server ran it, at the case's ``time_scale``.
    ``client_events`` are the child's marks (None: unknown, a child that never
    reported): a job that asks for a rebuild is exercised only where one was marked."""
    if outcome_kind not in REACHABLE_KINDS:
        return None
    calls = int(scenario.request.calls)
    n = len(records)
    if outcome_kind == "ok" and 1 < calls and n < calls:
        return f"the target made {n} of {calls} calls"
    rebuild_after = scenario.request.rebuild_after
    if (
        rebuild_after is not None
        and client_events is not None
        and rebuild_after < calls
        and not any(len(e) > 1 and e[1] == "rebuild" for e in client_events)
    ):
        return (
            f"the target never rebuilt its client before call {rebuild_after + 1} "
            "(no rebuild mark: run_calls got no rebuild=)"
        )
    if not _has_fault(scenario) or any(_reached(e, records, timeline) for e in timeline):
        return None
    if n == 0:
        return "the client made no request the server read"
    rules = list(scenario.script.rules)
    voids = {
        e.get("request"): str((e.get("detail") or {}).get("reason") or "")
        for e in timeline
        if e.get("kind") == "fault_void"
    }
    for rule in rules:
        why = _why_not(rule, records, n, time_scale=time_scale, voids=voids)
        if why:
            return why
    if not rules:
        return "the network fault was never fired or never took effect"
    return "the scripted fault never fired: " + "; ".join(str(r.fault) for r in rules)


def _reached(
    event: Mapping[str, Any], records: Sequence[Any], timeline: Sequence[Mapping[str, Any]]
) -> bool:
    """A fault event that reached the client: any, except an idle-phase fault (a pooled
    connection closed while idle) after which no request came -- the client never met
    the stale connection it tests -- and a relay's effect the client did not meet (a
    close swallowed after the response was whole, or on an idle pooled connection no
    request came to again)."""
    kind = event.get("kind")
    if kind in _RELAY_EFFECTS:
        return _met(float(event["t"]), records, timeline)
    if kind not in FAULT_KINDS:
        return False
    if kind == "mode":
        return not _reactive_mode(str(event.get("detail") or ""))
    if kind != "fault" or (event.get("detail") or {}).get("phase") != "idle":
        return True
    return any(float(_get(r, "t_start")) > float(event["t"]) for r in records)


def _met(t: float, records: Sequence[Any], timeline: Sequence[Mapping[str, Any]]) -> bool:
    """Did the client meet what the relay did at ``t``: a response was under way then
    (more request heads than finished responses on the server), or a request came
    after it?"""
    if any(float(_get(r, "t_start")) > t for r in records):
        return True
    server = [e for e in timeline if e.get("source") is None and float(e["t"]) <= t]
    heads = sum(1 for e in server if e.get("kind") == "request_head")
    done = sum(1 for e in server if e.get("kind") == "response_done")
    return heads > done


def _reactive_mode(detail: str) -> bool:
    """Is the relay mode switched to (``"pass -> idle_cut idle_cut_s=3"``) one that keeps
    relaying and acts only on what the server does (pass, swallow a close, cut an idle
    leg)? Only a mode that stops relaying (``hold``) is a fault the moment it is on."""
    words = detail.split("->", 1)[-1].split()
    mode = MODE_TYPES.get(words[0]) if words else None
    return mode is not None and mode.flowing


def _why_not(
    rule: Any,
    records: Sequence[Any],
    n: int,
    *,
    time_scale: float,
    voids: Mapping[Any, str] | None = None,
) -> str | None:
    match = rule.match
    if match.attempts is not None and n < min(match.attempts):
        first = min(match.attempts)
        return f"the rule matches attempt {first}; the client made {_requests(n)}"
    if match.connections is not None:
        opened = len({_get(r, "connection") for r in records})
        if opened < min(match.connections):
            return (
                f"the rule matches connection {min(match.connections)}; the client opened {opened}"
            )
    reuses = [r for r in records if int(_get(r, "request_on_connection")) > 1]
    pooled_rule = match.request_on_connection is not None and min(match.request_on_connection) > 1
    if (pooled_rule or rule.fault.phase.kind == "idle") and n > 1 and not reuses:
        return "every call was a new connection; nothing was pooled"
    if pooled_rule and n <= 1:
        return f"the rule matches a reused connection; the client made {_requests(n)}"
    served = str(rule.fault.scaled(time_scale))
    matched = [r for r in records if _get(r, "fault") == served]
    void = [r for r in matched if _get(r, "index") in (voids or {})]
    if void:
        first = _get(void[0], "index")
        return (
            f"the rule matched request {first} but {rule.fault.name} had nothing to act "
            f"on in its reply ({(voids or {})[first]})"
        )
    if matched:
        return (
            f"the rule matched request {_get(matched[0], 'index')} but its phase "
            f"{rule.fault.phase} never came (the exchange ended first)"
        )
    return None


def _has_fault(scenario: Any) -> bool:
    """Does the scenario script a fault (a rule, or a fault on its network path)?"""
    if scenario.script.rules:
        return True
    net = scenario.network
    if net is None or net.backend == "server":
        return False
    relay_mode = getattr(net.relay, "mode", "pass") if net.relay is not None else "pass"
    return bool(net.toxics) or net.kernel is not None or relay_mode != "pass"


def _requests(n: int) -> str:
    return f"{n} request" + ("" if n == 1 else "s")


def _get(obj: Any, name: str) -> Any:
    return obj[name] if isinstance(obj, Mapping) else getattr(obj, name)
