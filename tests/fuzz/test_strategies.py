"""The fuzzer's space and strategies: read from the registries, every draw a valid scenario."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.apis import APIS
from harness.faults import ACTIONS, fault_from_dict
from harness.fuzz.space import action_spaces, dialects_for, plan_shape
from harness.fuzz.strategies import EVENTS, scenario_data, scenario_name
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
