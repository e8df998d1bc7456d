"""Hypothesis strategies over scenarios: fault scripts drawn from the registry's space.

Each draw is the plain data of a scenario file (the dict a catalog TOML holds), so a
finding is written back as exactly what was run. Every choice is ordered so that what
Hypothesis shrinks toward is the simpler script: one rule (a list of 1 to
:data:`MAX_RULES`), the earliest phase kind and the smallest ``N``, every request
matched (no ``match``), each parameter at its documented default, the reference reply
shape (text, no dialect, chunked) and a stream.

Rules no request can reach (after one that matches every attempt, or whose attempts
earlier rules cover) are left out, so the script's rule count is what fires.

``event:N`` is drawn either at a boundary of the reply plan (:attr:`PlanShape.boundaries`:
right after the role chunk or ``message_start``, at the first tool-argument fragment,
between items, before the terminal event) or anywhere in it; ``match.attempts`` draws
fail-then-succeed (``[1]``, ``[1, 2]``) and fail-on-retry (``[2]``) with every reply kind.

Not here: what the space is (``harness.fuzz.space``), running a draw (``harness.fuzz.search``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from harness.faults import FRAMINGS, REPLY_SHAPES, FaultSpecError, fault_from_dict
from harness.fuzz.space import ActionSpace, PlanShape, action_spaces, dialects_for, plan_shape

__all__ = ["EVENTS", "MAX_RULES", "WATCHDOG", "scenario_data", "scenario_name"]

MAX_RULES = 3
#: Text deltas (or argument fragments) of a healthy reply: the script's default.
EVENTS = 8
#: Attempts a rule matches: every request first, then fail-then-succeed, then the retry.
_ATTEMPTS: tuple[list[int] | None, ...] = (None, [1], [1, 2], [2])
#: The reference target's deadlines, as most catalog scenarios set them (scenario
#: seconds): inside the ceiling, so a correct client ends every fault before it.
WATCHDOG = {"first_byte_s": 5, "stream_idle_s": 5, "stale_call_s": 15, "hard_ceiling_s": 40}
CEILING_S = 60


def scenario_data(
    apis: Sequence[str], actions: Sequence[str] = ()
) -> st.SearchStrategy[dict[str, Any]]:
    """Scenario dicts (``harness.scenario.scenario_from_dict`` input) for ``apis``,
    drawing only ``actions`` (names) when given, else every action the server plays."""
    spaces = tuple(s for s in action_spaces() if not actions or s.name in actions)
    return st.sampled_from(tuple(apis)).flatmap(lambda api: _for_api(api, spaces))


def scenario_name(data: dict[str, Any]) -> str:
    """A stable name from the content: the same script is the same scenario."""
    content = {k: v for k, v in data.items() if k not in ("name", "summary")}
    digest = hashlib.sha1(json.dumps(content, sort_keys=True).encode()).hexdigest()[:10]
    return f"fuzz_{data['api']}_{digest}"


def _for_api(api: str, spaces: tuple[ActionSpace, ...]) -> st.SearchStrategy[dict[str, Any]]:
    return st.tuples(
        st.sampled_from((True, False)),
        st.sampled_from(REPLY_SHAPES),
        st.sampled_from(dialects_for(api)),
        st.sampled_from(FRAMINGS),
    ).flatmap(lambda shape: _scenario(api, spaces, *shape))


def _scenario(
    api: str,
    spaces: tuple[ActionSpace, ...],
    stream: bool,
    reply: str,
    dialect: str | None,
    framing: str,
) -> st.SearchStrategy[dict[str, Any]]:
    plan = plan_shape(api, stream, reply, dialect, EVENTS)
    rules = st.lists(_rule(plan, spaces), min_size=1, max_size=MAX_RULES)

    def build(drawn: list[dict[str, Any]]) -> dict[str, Any]:
        script: dict[str, Any] = {"rules": _reachable(drawn)}
        for key, value, default in (
            ("reply", reply, "text"),
            ("dialect", dialect, None),
            ("framing", framing, "chunked"),
        ):
            if value != default:
                script[key] = value
        data = {
            "name": "",
            "summary": "",
            "api": api,
            "stream": stream,
            "ceiling_s": CEILING_S,
            "tags": ["fuzz"],
            "script": script,
            "watchdog": dict(WATCHDOG),
        }
        data["name"] = scenario_name(data)
        data["summary"] = _summary(api, stream, script)
        return data

    return rules.map(build)


@st.composite
def _rule(draw: st.DrawFn, plan: PlanShape, spaces: tuple[ActionSpace, ...]) -> dict[str, Any]:
    space: ActionSpace = draw(st.sampled_from(spaces))
    kind = draw(st.sampled_from(space.phases))
    phase = kind
    if kind == "event":
        n = len(plan.kinds)
        phase = f"event:{draw(st.one_of(st.sampled_from(plan.boundaries), st.integers(0, n)))}"
    elif kind == "bytes":
        phase = f"bytes:{draw(st.integers(0, plan.body_bytes))}"
    fault: dict[str, Any] = {"phase": phase, "action": space.name}
    for name, values in space.params:
        source = space.from_plan.get(name)
        if source is not None:
            values = (values[0], *_plan_values(plan, source))
        value = draw(st.sampled_from(values)) if len(values) > 1 else values[0]
        if value != values[0]:
            fault[name] = value
    fault = _valid(fault)
    rule: dict[str, Any] = {"fault": fault}
    attempts = draw(st.sampled_from(_ATTEMPTS))
    if attempts is not None:
        rule["match"] = {"attempts": attempts}
    return rule


def _reachable(rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rules some request can reach: the first matching rule wins, so a rule whose
    attempts the rules before it already cover never fires (and would still shape the
    contract derived from the script)."""
    kept: list[dict[str, Any]] = []
    covered: set[int] = set()
    for rule in rules:
        attempts = (rule.get("match") or {}).get("attempts")
        if attempts is None:
            kept.append(rule)
            break  # every later rule is shadowed
        if not set(attempts) <= covered:
            kept.append(rule)
            covered.update(attempts)
    return kept


def _plan_values(plan: PlanShape, source: str) -> tuple[str, ...]:
    return plan.event_types if source == "event_type" else plan.fields


def _valid(fault: dict[str, Any]) -> dict[str, Any]:
    """``fault`` as drawn, or with its last-drawn parameters back at their defaults
    until the action's own validation accepts it (parameters that exclude each other,
    like ``retry_after_s`` and ``retry_after``)."""
    fault = dict(fault)
    while True:
        try:
            fault_from_dict(fault)
        except FaultSpecError:
            params = [k for k in fault if k not in ("phase", "action")]
            if not params:
                raise
            del fault[params[-1]]
            continue
        return fault


def _summary(api: str, stream: bool, script: dict[str, Any]) -> str:
    rules = "; ".join(_rule_text(r) for r in script["rules"])
    shape = ", ".join(f"{k}={v}" for k, v in script.items() if k != "rules")
    mode = "stream" if stream else "no stream"
    return f"fuzz: {api} ({mode}{', ' + shape if shape else ''}): {rules}."


def _rule_text(rule: dict[str, Any]) -> str:
    fault = rule["fault"]
    params = ", ".join(f"{k}={v}" for k, v in fault.items() if k not in ("phase", "action"))
    text = f"{fault['action']}@{fault['phase']}" + (f"({params})" if params else "")
    attempts = (rule.get("match") or {}).get("attempts")
    return text + (f" on attempts {attempts}" if attempts else "")
