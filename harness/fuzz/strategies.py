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

A network backend, where one is drawn (the fault server alone first), puts a ``[network]``
table in front: a relay in one of its modes, one Toxiproxy toxic, or the kernel's dead
path, each fired at a point of the reply plan (:func:`harness.fuzz.space.triggers`). With
one, the script may have no rule at all (the network is the fault). The case takes the
backend's time-scale floor (:data:`~harness.fuzz.space.BACKEND_MIN_TIME_SCALE`), and a
kernel case the catalog's keepalive and TCP_USER_TIMEOUT for the reference (kernel
seconds, never scaled).

Not here: what the space is (``harness.fuzz.space``), running a draw (``harness.fuzz.search``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from harness.faults import FRAMINGS, REPLY_SHAPES, FaultSpecError, fault_from_dict
from harness.faults.network.kernel import SHAPES
from harness.faults.network.toxics import toxic_from_dict
from harness.fuzz.space import (
    BACKEND_MIN_TIME_SCALE,
    ActionSpace,
    PlanShape,
    ToxicSpace,
    action_spaces,
    dialects_for,
    plan_shape,
    toxic_spaces,
    triggers,
)
from harness.relay.modes import MODES

__all__ = [
    "EVENTS",
    "KERNEL_WATCHDOG",
    "MAX_RULES",
    "NETWORK_WATCHDOG",
    "WATCHDOG",
    "network_text",
    "scenario_data",
    "scenario_name",
]

MAX_RULES = 3
#: Text deltas (or argument fragments) of a healthy reply: the script's default.
EVENTS = 8
#: Attempts a rule matches: every request first, then fail-then-succeed, then the retry.
_ATTEMPTS: tuple[list[int] | None, ...] = (None, [1], [1, 2], [2])
#: The reference target's deadlines, as most catalog scenarios set them (scenario
#: seconds): inside the ceiling, so a correct client ends every fault before it.
WATCHDOG = {"first_byte_s": 5, "stream_idle_s": 5, "stale_call_s": 15, "hard_ceiling_s": 40}
CEILING_S = 60
#: The relay's idle limit (scenario seconds): its default, then shorter and longer.
_IDLE_CUTS = (5.0, 0.5, 30.0)
#: Behind a relay or Toxiproxy (time-scale floor 0.5 and 0.2 rather than 0.05): the same
#: first-byte and idle deadlines, a shorter stale-call and hard ceiling, so a hang costs
#: a few real seconds (the catalog's 60 s ceiling is 30 s at the relay's floor; a pacing toxic of 1 s a write still fits).
NETWORK_CEILING_S = 20
NETWORK_WATCHDOG = {"first_byte_s": 5, "stream_idle_s": 5, "stale_call_s": 8, "hard_ceiling_s": 16}
#: A kernel case runs in real time: a shorter ceiling, the catalog's kernel watchdog (a
#: dead path is noticed by keepalive 1 s + 1 s x 2 or TCP_USER_TIMEOUT 3 s).
KERNEL_CEILING_S = 30
KERNEL_WATCHDOG = {
    "first_byte_s": 5,
    "stream_idle_s": 5,
    "stale_call_s": 15,
    "hard_ceiling_s": 20,
    "keepalive": True,
    "keepalive_idle_s": 1,
    "keepalive_interval_s": 1,
    "keepalive_count": 2,
    "tcp_user_timeout_s": 3,
}


def scenario_data(
    apis: Sequence[str],
    actions: Sequence[str] = (),
    backends: Sequence[str] = ("server",),
    durations: Sequence[float] = (),
) -> st.SearchStrategy[dict[str, Any]]:
    """Scenario dicts (``harness.scenario.scenario_from_dict`` input) for ``apis``,
    drawing only ``actions`` (names) when given, else every action the server plays,
    behind one of ``backends`` (``server``: none; ``relay``, ``toxiproxy``, ``kernel``),
    with ``durations`` (scenario seconds past a target's measured deadlines) drawn for
    every duration parameter too."""
    every = action_spaces(durations=tuple(durations))
    spaces = tuple(s for s in every if not actions or s.name in actions)
    chosen = tuple(backends) or ("server",)
    return st.sampled_from(tuple(apis)).flatmap(lambda api: _for_api(api, spaces, chosen))


def scenario_name(data: dict[str, Any]) -> str:
    """A stable name from the content: the same script is the same scenario."""
    content = {k: v for k, v in data.items() if k not in ("name", "summary")}
    digest = hashlib.sha1(json.dumps(content, sort_keys=True).encode()).hexdigest()[:10]
    return f"fuzz_{data['api']}_{digest}"


def _for_api(
    api: str, spaces: tuple[ActionSpace, ...], backends: tuple[str, ...]
) -> st.SearchStrategy[dict[str, Any]]:
    return st.tuples(
        st.sampled_from((True, False)),
        st.sampled_from(REPLY_SHAPES),
        st.sampled_from(dialects_for(api)),
        st.sampled_from(FRAMINGS),
        st.sampled_from(backends),
    ).flatmap(lambda shape: _scenario(api, spaces, *shape))


def _scenario(
    api: str,
    spaces: tuple[ActionSpace, ...],
    stream: bool,
    reply: str,
    dialect: str | None,
    framing: str,
    backend: str = "server",
) -> st.SearchStrategy[dict[str, Any]]:
    plan = plan_shape(api, stream, reply, dialect, EVENTS)
    # behind a network backend the network may be the whole fault: no rule at all
    rules = st.lists(_rule(plan, spaces), min_size=int(backend == "server"), max_size=MAX_RULES)
    network = _network(plan, backend)

    def build(drawn_all: tuple[list[dict[str, Any]], dict[str, Any] | None]) -> dict[str, Any]:
        drawn, net = drawn_all
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
        if net is not None:
            _behind(data, net)
        data["name"] = scenario_name(data)
        data["summary"] = _summary(api, stream, script, net)
        return data

    return st.tuples(rules, network).map(build)


def _network(plan: PlanShape, backend: str) -> st.SearchStrategy[dict[str, Any] | None]:
    """The ``[network]`` table for ``backend`` (None for the server alone)."""
    at = st.sampled_from(triggers(plan))
    if backend == "relay":
        return st.builds(
            lambda mode, idle, when: _relay_table(mode, idle, when),
            st.sampled_from(MODES),
            st.sampled_from(_IDLE_CUTS),
            at,
        )
    if backend == "toxiproxy":
        return st.sampled_from(toxic_spaces()).flatmap(lambda space: _toxic_table(space, at))
    if backend == "kernel":
        return st.builds(
            lambda shape, when: {
                "backend": "kernel",
                "kernel": {"cut_at": "done:1" if shape == "in_flight" else when, "shape": shape},
            },
            st.sampled_from(SHAPES),
            at.filter(lambda t: t != "done:1"),
        )
    return st.none()


def _relay_table(mode: str, idle_cut_s: float, at: str) -> dict[str, Any]:
    relay: dict[str, Any] = {"mode": mode}
    if mode == "idle_cut" and idle_cut_s != _IDLE_CUTS[0]:
        relay["idle_cut_s"] = idle_cut_s
    table: dict[str, Any] = {"backend": "relay", "relay": relay}
    if at != "start":
        table["at"] = at
    return table


def _toxic_table(space: ToxicSpace, at: st.SearchStrategy[str]) -> st.SearchStrategy[dict]:
    attrs = st.fixed_dictionaries(
        {name: st.sampled_from(values) for name, values in space.attributes}
    )

    def table(values: dict[str, int], stream: str, when: str) -> dict[str, Any]:
        toxic: dict[str, Any] = {"type": space.type, **values}
        if stream != "downstream":
            toxic["stream"] = stream
        if when != "start":
            toxic["at"] = when
        return {"backend": "toxiproxy", "toxics": [_valid_toxic(toxic)]}

    return st.builds(table, attrs, st.sampled_from(("downstream", "upstream")), at)


def _valid_toxic(toxic: dict[str, Any]) -> dict[str, Any]:
    """``toxic`` as drawn, or with the attributes its validation refuses back at their
    defaults (those that depend on each other: a slicer's ``size_variation`` below its
    ``average_size``)."""
    toxic = dict(toxic)
    for _ in range(len(toxic)):
        try:
            toxic_from_dict(toxic)
        except FaultSpecError as exc:
            name = exc.field.rsplit(".", 1)[-1]
            if name not in toxic or name == "type":
                raise
            del toxic[name]
            continue
        return toxic
    raise AssertionError(f"no valid form of {toxic}")  # each pass drops one key


def _behind(data: dict[str, Any], net: dict[str, Any]) -> None:
    """Put ``data``'s case behind the network ``net``: the table, the backend's
    time-scale floor, and for the kernel its real-time ceiling, watchdog and shape."""
    backend = net["backend"]
    data["network"] = net
    data["min_time_scale"] = BACKEND_MIN_TIME_SCALE[backend]
    if backend in ("relay", "toxiproxy"):
        data["ceiling_s"] = NETWORK_CEILING_S
        data["watchdog"] = dict(NETWORK_WATCHDOG)
    if backend == "kernel":
        data["ceiling_s"] = KERNEL_CEILING_S
        data["watchdog"] = dict(KERNEL_WATCHDOG)
        if net["kernel"]["shape"] == "in_flight":
            # the path dies between two calls on one pooled connection
            data["request"] = {"calls": 2, "pause_s": 1}


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


def _summary(
    api: str, stream: bool, script: dict[str, Any], net: dict[str, Any] | None = None
) -> str:
    parts = [_rule_text(r) for r in script["rules"]]
    if net is not None:
        parts.insert(0, network_text(net))
    shape = ", ".join(f"{k}={v}" for k, v in script.items() if k != "rules")
    mode = "stream" if stream else "no stream"
    return f"fuzz: {api} ({mode}{', ' + shape if shape else ''}): {'; '.join(parts)}."


def network_text(net: dict[str, Any]) -> str:
    """A drawn ``[network]`` table in words: ``relay hold@event:3``,
    ``toxiproxy timeout[upstream](timeout=0)@headers``, ``kernel waiting@event:1``."""
    backend = net["backend"]
    if backend == "relay":
        relay = dict(net["relay"])
        mode = relay.pop("mode")
        params = ", ".join(f"{k}={v}" for k, v in relay.items())
        return f"relay {mode}" + (f"({params})" if params else "") + f"@{net.get('at', 'start')}"
    if backend == "toxiproxy":
        toxic = dict(net["toxics"][0])
        kind = toxic.pop("type")
        stream = toxic.pop("stream", "downstream")
        at = toxic.pop("at", "start")
        params = ", ".join(f"{k}={v}" for k, v in toxic.items())
        return f"toxiproxy {kind}[{stream}]" + (f"({params})" if params else "") + f"@{at}"
    kernel = net["kernel"]
    return f"kernel {kernel['shape']}@{kernel['cut_at']}"


def _rule_text(rule: dict[str, Any]) -> str:
    fault = rule["fault"]
    params = ", ".join(f"{k}={v}" for k, v in fault.items() if k not in ("phase", "action"))
    text = f"{fault['action']}@{fault['phase']}" + (f"({params})" if params else "")
    attempts = (rule.get("match") or {}).get("attempts")
    return text + (f" on attempts {attempts}" if attempts else "")
