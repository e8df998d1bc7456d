"""A scenario's healthy reply as the fault server plans it, and how slow its script
and network make it.

``Scenario.is_alive`` and the contract read these: the plan is the server's
(:func:`harness.server.apis.plan_reply`) for the scenario's own request; the pace is the
slowest pacing rule (``Action.paced_s``: ``slow`` per event or per byte over what is
left of the reply where it fires) or pacing toxic (``Toxic.paced_s``: latency per
write, bandwidth, slicer, a delayed close that ends a close-delimited body). A pace past the ceiling makes a scenario not alive: no call
may wait that out; nor is one that leaves the call less than a fifth of its ceiling
(:data:`PACE_MARGIN`) for connecting, headers and the clocks of both sides.

Not here: the scenario model (``harness.scenario``), the contract that reads the pace.
"""

from __future__ import annotations

from typing import Any, Protocol

from harness.apis import api_for
from harness.faults import FaultScript
from harness.network_spec import stops_progress

__all__ = ["PACE_MARGIN", "derived_alive", "outpaces_ceiling", "paced_s", "reply_plan"]

#: The share of its ceiling a paced reply may take and still be alive. Past it, a client
#: that ends the call is as right as one that waits (harness fuzz on the reference: a
#: bandwidth cap taking 16.5 of 20 s met a client ceiling of 16 s): not alive, and the
#: contract asks for the reply or a clean error.
PACE_MARGIN = 0.8


class Scenario(Protocol):
    """What the pace reads of a scenario (``harness.scenario.Scenario`` is one): a
    protocol, so the model imports this module and not the other way round."""

    api: str
    stream: bool
    ceiling_s: float
    request: Any
    script: FaultScript
    network: Any


def derived_alive(scenario: Scenario) -> bool:
    """Alive (no deadline should fire) unless a rule stops progress, the network in
    between does by itself (a hold, a stopping toxic, a dead peer), or a pace no call can
    finish within its ceiling makes the client end it."""
    if stops_progress(scenario.network, framing=scenario.script.framing):
        return False
    if any(rule.fault.action.terminal for rule in scenario.script.rules):
        return False
    return not outpaces_ceiling(scenario)


def outpaces_ceiling(scenario: Scenario) -> bool:
    """True when the script's or the network's pace leaves the call no margin within its
    ceiling (more than :data:`PACE_MARGIN` of it)."""
    return paced_s(scenario) > PACE_MARGIN * scenario.ceiling_s


def reply_plan(scenario: Scenario) -> Any:
    """The scenario's healthy reply as the fault server plans it (``ReplyPlan``)."""
    # the reply plan is the server's: imported only where a plan is asked for
    from harness.replies import DEFAULT_TOOL_SPEC, TOOL_REPLY_SHAPES, tools_for_api
    from harness.server.apis import plan_reply

    request, script = scenario.request, scenario.script
    body: dict[str, Any] = {
        **api_for(scenario.api).request_template(request.messages()),
        "stream": scenario.stream,
    }
    offered = [t.model_dump() for t in request.tools] if request.tools is not None else None
    if offered is None and script.reply in TOOL_REPLY_SHAPES:
        offered = [DEFAULT_TOOL_SPEC]
    if offered:
        body["tools"] = tools_for_api(offered, scenario.api)
    return plan_reply(
        scenario.api,
        body,
        events=script.events,
        shape=script.reply,
        reasoning_events=script.reasoning_events,
        dialect=script.dialect,
    )


def paced_s(scenario: Scenario) -> float:
    """Scenario seconds the script's pacing rules or a pacing toxic alone add to the
    healthy reply, the slowest counted over what is left of the reply where it fires
    (0 without any: the plan is built only where a pace needs its size)."""
    paced = [r for r in scenario.script.rules if r.fault.action.paced_s(1, 1) > 0]
    network = scenario.network
    closing = scenario.script.framing == "close"
    toxics = [
        t
        for t in (network.toxics if network else ())
        if t.paced_s(1, 1, close_ends_body=closing) > 0
    ]
    if not paced and not toxics:
        return 0.0
    sizes = [len(u) for u in reply_plan(scenario).units]
    total = sum(sizes)
    worst = 0.0
    for rule in paced:
        phase = rule.fault.phase
        start = phase.n if phase.kind == "event" else 0
        left_bytes = total - phase.n if phase.kind == "bytes" else sum(sizes[start:])
        worst = max(worst, rule.fault.action.paced_s(len(sizes) - start, max(0, left_bytes)))
    return max([worst, *(t.paced_s(len(sizes), total, close_ends_body=closing) for t in toxics)])
