"""The fuzzer's space and strategies: read from the registries, every draw a valid scenario."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

from harness.apis import APIS
from harness.faults import ACTIONS, fault_from_dict
from harness.faults.network.kernel import SHAPES
from harness.faults.network.toxics import TOXIC_TYPES, toxic_from_dict
from harness.faults.network.trigger import parse_trigger
from harness.fuzz.findings import scenario_toml
from harness.fuzz.space import (
    BACKEND_MIN_TIME_SCALE,
    POSTURE_SIDES,
    action_spaces,
    dialects_for,
    durations_past,
    plan_shape,
    toxic_spaces,
    triggers,
)
from harness.fuzz.strategies import (
    EVENTS,
    KERNEL_WATCHDOG,
    _network,
    _valid_toxic,
    network_text,
    scenario_data,
    scenario_name,
)
from harness.relay.modes import MODES
from harness.scenario import scenario_from_dict

pytestmark = pytest.mark.timeout(120)

_DRAWS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_DRAWS
@given(scenario_data(APIS))
def test_every_drawn_scenario_validates_with_the_scenario_loader(data):
    scenario = scenario_from_dict(data)
    assert 1 <= len(scenario.script.rules) <= 3
    assert scenario.name == scenario_name(data)
    covered: set[int] = set()
    for i, rule in enumerate(scenario.script.rules):
        assert "server" in rule.fault.action.backends
        attempts = rule.match.attempts
        # no rule is shadowed by the ones before it (first match wins)
        assert attempts is None or not attempts <= covered, data["script"]
        assert attempts is not None or i == len(scenario.script.rules) - 1
        covered |= attempts or set()


@_DRAWS
@given(st.sampled_from(APIS).flatmap(lambda api: scenario_data([api], ["drop_event"])))
def test_plan_derived_parameters_name_the_reply_s_own_events(data):
    scenario = scenario_from_dict(data)
    shape = plan_shape(
        scenario.api,
        scenario.stream,
        scenario.script.reply,
        scenario.script.dialect,
        EVENTS,
    )
    (rule,) = [r for r in scenario.script.rules if r.fault.name == "drop_event"][:1]
    assert rule.fault.action.type in ("", *shape.event_types)
    assert rule.fault.phase.n <= len(shape.kinds)


def test_the_space_is_every_action_the_server_plays_and_nothing_else():
    names = {space.name for space in action_spaces()}
    assert names == {n for n, cls in ACTIONS.items() if "server" in cls.backends}
    assert "swallow_close" not in names  # relay only


def test_each_parameter_starts_at_its_default_and_every_value_validates():
    for space in action_spaces():
        cls = ACTIONS[space.name]
        defaults = cls()
        for name, values in space.params:
            assert values[0] == getattr(defaults, name), (space.name, name)
            for value in values:
                phase = space.phases[0]
                phase = f"{phase}:0" if phase in ("event", "bytes") else phase
                fault_from_dict({"phase": phase, "action": space.name, name: value})


def test_choices_come_from_the_action_s_validation_and_past_defaults_are_drawn():
    spaces = {s.name: dict(s.params) for s in action_spaces()}
    assert set(spaces["cut_tool_call"]["at"]) == {"string", "json", "utf8"}
    assert set(spaces["inband_error"]["kind"]) >= {"overloaded", "rate_limit"}
    # a Retry-After past the reference's 60 s cap, and an HTTP date
    assert any(v and v > 60 for v in spaces["status"]["retry_after_s"])
    assert any(v and v.endswith("GMT") for v in spaces["status"]["retry_after"])


def test_a_measured_posture_s_deadlines_are_drawn_either_side_for_every_duration():
    # harness posture --json's entry: the silent call gave up after 5 s (real), the dead
    # peer is noticed within 40 s; at time scale 0.5 a case plays scenario s x 0.5
    entry = {"gave_up_after_s": 5.0, "dead_peer_bound_s": 40.0, "reuse": True}
    durations = durations_past(entry, 0.5)
    assert durations == tuple(
        round(v * side / 0.5, 3) for v in (5.0, 40.0) for side in POSTURE_SIDES
    )
    assert min(durations) < 10.0 < max(d for d in durations if d < 20)  # inside and past
    spaces = {s.name: dict(s.params) for s in action_spaces(durations=durations)}
    plain = {s.name: dict(s.params) for s in action_spaces()}
    for action, param in (("hang", "duration_s"), ("slow", "delay_s"), ("drip", "interval_s")):
        assert set(durations) <= set(spaces[action][param]), (action, param)
        assert not set(durations) & set(plain[action][param])
    # a Retry-After is not a duration the posture measures
    assert spaces["status"]["retry_after_s"] == plain["status"]["retry_after_s"]
    # a silent call still waiting at the hold measured no deadline: nothing is added
    assert durations_past({"gave_up_after_s": None, "dead_peer_bound_s": None}, 1.0) == ()


@given(scenario_data(["chat"], ["hang"], durations=(4.0, 6.25)))
@_DRAWS
def test_drawn_durations_past_a_posture_validate(data):
    scenario_from_dict(data, file="<drawn>")


def test_event_boundaries_are_the_plan_s_real_events():
    chat = plan_shape("chat", True, "tool_call", None, EVENTS)
    assert chat.kinds[0] == "open" and chat.kinds[-1] == "terminal"
    first_args = chat.kinds.index("tool_args")
    # right after the role chunk, at the first argument fragment, before [DONE]
    assert {1, first_args, len(chat.kinds) - 1} <= set(chat.boundaries)
    assert chat.describe(1).startswith("after open")
    responses = plan_shape("responses", True, "text", None, EVENTS)
    closes = [i + 1 for i, k in enumerate(responses.kinds) if k == "close"]
    assert closes[0] in responses.boundaries  # after an item's done event
    assert "response.completed" in responses.event_types


def test_dialects_are_the_registry_s_for_the_api():
    assert dialects_for("chat")[0] is None
    assert "openrouter" in dialects_for("chat")
    assert "openrouter" not in dialects_for("messages")


# ------------------------------------------------------------------ network backends

_NETWORK = ("relay", "toxiproxy", "kernel")


@_DRAWS
@given(scenario_data(APIS, backends=("server", *_NETWORK)))
def test_every_drawn_network_case_validates_and_carries_its_backend_s_floor(data):
    scenario = scenario_from_dict(data)
    if scenario.backend == "server":
        assert scenario.network is None and len(scenario.script.rules) >= 1
        return
    # the network may be the whole fault
    assert 0 <= len(scenario.script.rules) <= 3
    assert scenario.min_time_scale == BACKEND_MIN_TIME_SCALE[scenario.backend]
    # the drawn table is what the scenario holds, and its summary names it
    assert data["network"]["backend"] == scenario.backend
    assert network_text(data["network"]) in scenario.summary
    if scenario.backend == "kernel":
        assert scenario.watchdog.tcp_user_timeout_s == KERNEL_WATCHDOG["tcp_user_timeout_s"]
        if scenario.network.kernel.shape == "in_flight":
            assert scenario.request.calls == 2


@pytest.mark.parametrize(
    ("backend", "value", "values"),
    [
        *(("relay", mode, lambda net: net["relay"]["mode"]) for mode in MODES),
        *(("toxiproxy", kind, lambda net: net["toxics"][0]["type"]) for kind in TOXIC_TYPES),
        *(("kernel", shape, lambda net: net["kernel"]["shape"]) for shape in SHAPES),
    ],
)
def test_each_backend_s_space_is_read_from_its_registry(backend, value, values):
    # every entry of each backend's registry can be drawn: searched for, not sampled
    # (300 random draws missed two of Toxiproxy's eight toxics once)
    plan = plan_shape("chat", True, "text", None, EVENTS)
    found = find(
        _network(plan, backend),  # the network table alone: the rest is drawn elsewhere
        lambda net: values(net) == value,
        settings=settings(max_examples=2000, database=None, phases=(Phase.generate,)),
    )
    assert found["backend"] == backend


def test_toxic_attributes_start_at_their_default_and_every_draw_validates():
    for space in toxic_spaces():
        required = {a for a, _ in space.attributes if TOXIC_TYPES[space.type][a][1] is None}
        for attr, values in space.attributes:
            default = TOXIC_TYPES[space.type][attr][1]
            if default is not None:
                assert values[0] == default, (space.type, attr)
        # every combination the strategy can draw: valid as drawn, or with the attribute
        # that depends on another back at its default (a slicer's size_variation)
        for combo in itertools.product(*(values for _, values in space.attributes)):
            drawn = {
                "type": space.type,
                **dict(zip([a for a, _ in space.attributes], combo, strict=True)),
            }
            kept = _valid_toxic(drawn)
            toxic_from_dict(kept)
            assert required <= set(kept)


def test_triggers_are_the_plan_s_points_earliest_first():
    plan = plan_shape("chat", True, "text", None, EVENTS)
    points = triggers(plan)
    assert points[:3] == ("start", "request", "headers")
    assert points[-1] == "done:1"
    assert {f"event:{n}" for n in plan.boundaries if n} <= set(points)
    for point in points:
        parse_trigger(point)


def test_a_drawn_network_table_is_alive_only_where_it_lets_the_stream_through():
    def alive(net):
        data = {
            "name": "x",
            "summary": "x",
            "api": "chat",
            "script": {"rules": []},
            "network": net,
        }
        return scenario_from_dict(data).is_alive

    assert alive({"backend": "relay", "relay": {"mode": "pass"}})
    assert not alive({"backend": "relay", "relay": {"mode": "hold"}})
    assert alive({"backend": "toxiproxy", "toxics": [{"type": "latency", "latency": 100}]})
    assert not alive({"backend": "toxiproxy", "toxics": [{"type": "timeout"}]})
    assert not alive({"backend": "toxiproxy", "toxics": [{"type": "limit_data", "bytes": 1}]})
    assert not alive({"backend": "kernel", "kernel": {"cut_at": "event:1"}})


def test_a_network_finding_is_written_as_a_scenario_file_that_loads_again(tmp_path):
    import tomllib

    data = {
        "name": "",
        "summary": "a network finding",
        "api": "chat",
        "stream": True,
        "ceiling_s": 60,
        "script": {"rules": []},
        "watchdog": {"first_byte_s": 5},
    }
    for net in (
        {"backend": "relay", "relay": {"mode": "idle_cut", "idle_cut_s": 0.5}, "at": "event:1"},
        {"backend": "toxiproxy", "toxics": [{"type": "timeout", "at": "headers"}]},
        {"backend": "kernel", "kernel": {"cut_at": "event:1", "shape": "waiting"}},
    ):
        one = {**data, "network": net, "name": f"net_{net['backend']}"}
        text = scenario_toml(one)
        back = tomllib.loads(text)
        assert back["network"] == net, text
        scenario_from_dict(back)
