"""Scenario files: the catalog loads, and bad input names the file, the field and what is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.faults import ACTIONS
from harness.scenario import (
    CATALOG_DIR,
    ScenarioError,
    load_catalog,
    load_scenario,
    scenario_from_dict,
    select,
)

GOOD = """
name = "{name}"
summary = "A stall."
references = ["hermes-agent#10324"]
api = "chat"

[[script.rules]]
fault = {{ phase = "event:3", action = "hang" }}

[watchdog]
stream_idle_s = 5
first_byte_s = "off"

[expected]
reference = "error:StreamIdleTimeout"
openai-sdk = "hung"
"""


def write(tmp_path: Path, text: str, name: str = "case") -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path


def error_for(tmp_path: Path, text: str) -> ScenarioError:
    path = write(tmp_path, text)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(path) in str(info.value)
    return info.value


def test_catalog_loads_and_every_scenario_expects_both_default_targets():
    catalog = load_catalog()
    assert len(catalog) >= 30
    for s in catalog:
        assert Path(s.path).stem == s.name
        assert {"reference", "openai-sdk"} <= set(s.expected), s.name
        assert s.references, s.name


def test_no_catalog_deadline_races_the_ceiling():
    # A deadline handed to targets that ends a call at the ceiling makes the verdict a
    # race: the client ending itself 20 ms before the runner stops it is `safe`, 20 ms
    # after it is `hung` (the pydantic-ai audit met it on the kernel in-flight cases).
    names = ("first_byte_s", "stream_idle_s", "stale_call_s", "hard_ceiling_s", "read_timeout_s")
    for s in load_catalog():
        for name in names:
            value = getattr(s.watchdog, name, None)
            if isinstance(value, int | float) and s.ceiling_s:
                assert abs(value - s.ceiling_s) >= 0.1 * s.ceiling_s, (s.name, name, value)


def test_catalog_covers_the_design_failure_rows_for_both_streaming_apis():
    names = {s.name for s in load_catalog()}
    for api in ("chat", "responses"):
        for row in (
            "no_first_byte",
            "mid_stream_stall",
            "fin_mid_stream",
            "close_delimited_fin",
            "rst_mid_stream",
            "comment_drip",
            "truncated_no_terminal",
            "malformed_chunk",
        ):
            assert f"{api}_{row}" in names
    for extra in (
        "fail_twice_then_succeed",
        "rate_limited_retry_after",
        "stall_on_reused_connection",
        "utf8_split_across_chunks",
        "large_prompt_hard_ceiling",
        "html_502_page",
        "late_first_byte_within_budget",
        "keepalive_comments_then_content",
        "steady_slow_token_drip",
    ):
        assert extra in names


def test_good_file_parses_script_watchdog_and_expectations(tmp_path):
    s = load_scenario(write(tmp_path, GOOD.format(name="case")))
    assert str(s.script.rules[0].fault) == "hang@event:3(duration_s=None)"
    assert s.watchdog.as_settings() == {"stream_idle_s": 5, "first_byte_s": None}
    assert s.expected_for("reference").error == "StreamIdleTimeout"
    assert s.expected_for("openai-sdk").kind == "hung"
    assert not s.is_alive


def test_unknown_top_level_key_lists_the_allowed_keys(tmp_path):
    err = error_for(tmp_path, "colour = 'red'\n" + GOOD.format(name="case"))
    assert err.field == "colour"
    assert "unknown key" in str(err)
    assert "summary" in err.allowed and "script" in err.allowed and "expected" in err.allowed


def test_unknown_nested_key_lists_that_tables_keys(tmp_path):
    text = GOOD.format(name="case").replace("[watchdog]", "[watchdog]\nfirst_bite_s = 3")
    err = error_for(tmp_path, text)
    assert err.field == "watchdog.first_bite_s"
    assert "first_byte_s" in err.allowed and "hard_ceiling_s" in err.allowed


def test_wrong_type_names_the_field_and_the_expected_type(tmp_path):
    err = error_for(
        tmp_path, GOOD.format(name="case").replace('api = "chat"', 'api = "chat"\nstream = "yes"')
    )
    assert err.field == "stream"
    assert err.allowed == "true, false"


def test_unknown_api_lists_the_apis(tmp_path):
    err = error_for(
        tmp_path, GOOD.format(name="case").replace('api = "chat"', 'api = "completions"')
    )
    assert err.field == "api"
    assert "chat" in err.allowed and "responses" in err.allowed


def test_unknown_fault_action_lists_every_action(tmp_path):
    err = error_for(
        tmp_path, GOOD.format(name="case").replace('action = "hang"', 'action = "hangg"')
    )
    assert err.field == "script.rules[0].fault.action"
    for name in ACTIONS:
        assert name in err.allowed


def test_phase_not_valid_for_the_action_names_the_phases_it_takes(tmp_path):
    err = error_for(
        tmp_path,
        GOOD.format(name="case").replace(
            'phase = "event:3", action = "hang"', 'phase = "request", action = "malformed"'
        ),
    )
    assert err.field == "script.rules[0].fault.phase"
    assert "event:N" in err.allowed


def test_unknown_target_in_expected_lists_the_targets(tmp_path):
    err = error_for(tmp_path, GOOD.format(name="case") + 'curl = "ok"\n')
    assert err.field == "expected.curl"
    assert "reference" in err.allowed and "openai-sdk" in err.allowed


def test_unknown_outcome_lists_the_outcomes(tmp_path):
    err = error_for(
        tmp_path, GOOD.format(name="case").replace('openai-sdk = "hung"', 'openai-sdk = "stuck"')
    )
    assert err.field == "expected.openai-sdk"
    assert "truncated_as_complete" in err.allowed and "error:ClassName" in err.allowed


def test_negative_deadline_is_rejected_with_the_field(tmp_path):
    err = error_for(
        tmp_path, GOOD.format(name="case").replace("stream_idle_s = 5", "stream_idle_s = -1")
    )
    assert err.field == "watchdog.stream_idle_s"


def test_invalid_toml_and_name_mismatch_are_reported(tmp_path):
    assert "not valid TOML" in str(error_for(tmp_path, "name = \n"))
    path = write(tmp_path, GOOD.format(name="other"), name="case")
    with pytest.raises(ScenarioError, match="differs from the file name") as info:
        load_scenario(path)
    assert info.value.field == "name"


def test_prompt_is_padded_to_prompt_bytes():
    s = scenario_from_dict(
        {
            "name": "x",
            "summary": "s",
            "expected": {"reference": "ok"},
            "request": {"prompt": "hi", "prompt_bytes": 1000},
        }
    )
    content = s.request.messages()[-1]["content"]
    assert len(content.encode()) == 1000 and content.startswith("hi ")


def test_select_matches_globs_and_names_unknown_patterns():
    catalog = load_catalog(CATALOG_DIR)
    chosen = select(catalog, ["chat_*_stream_stall", "nonstream_healthy"])
    assert [s.name for s in chosen] == ["chat_mid_stream_stall", "nonstream_healthy"]
    with pytest.raises(ScenarioError, match="matches no scenario") as info:
        select(catalog, ["no_such_*"])
    assert "chat_healthy_stream" in info.value.allowed


def test_network_table_is_validated_and_names_its_field(tmp_path):
    text = (
        GOOD.format(name="case")
        + '\n[network]\nbackend = "relay"\nrelay = { mode = "swallow_close" }\n'
    )
    s = load_scenario(write(tmp_path, text))
    assert s.backend == "relay"
    bad = GOOD.format(name="case") + '\n[network]\nbackend = "carrier-pigeon"\n'
    err = error_for(tmp_path, bad)
    assert err.field.startswith("network")
    assert "relay" in err.allowed and "kernel" in err.allowed


def test_time_scale_floor_and_kernel_scenarios_run_in_real_time():
    s = scenario_from_dict(
        {"name": "x", "summary": "s", "expected": {"reference": "ok"}, "min_time_scale": 0.3}
    )
    assert s.time_scale_for(0.01) == 0.3
    assert s.time_scale_for(1.0) == 1.0
    kernel = load_scenario(CATALOG_DIR / "kernel_dead_peer_mid_stream.toml")
    assert kernel.time_scale_for(0.01) == 1.0


def test_pause_and_keepalive_knobs_parse():
    s = scenario_from_dict(
        {
            "name": "x",
            "summary": "s",
            "expected": {"reference": "ok"},
            "request": {"calls": 2, "pause_s": 1},
            "watchdog": {"keepalive_idle_s": 1, "tcp_user_timeout_s": "off"},
        }
    )
    assert s.request.pause_s == 1
    assert s.watchdog.as_settings() == {"keepalive_idle_s": 1, "tcp_user_timeout_s": None}


def test_swallow_close_rule_puts_a_swallowing_relay_in_front_of_a_server_fin(tmp_path):
    text = GOOD.format(name="case").replace('action = "hang"', 'action = "swallow_close"')
    s = load_scenario(write(tmp_path, text))
    assert s.backend == "relay" and s.network.relay.mode == "swallow_close"
    (rule,) = s.script.rules
    assert (str(rule.fault.phase), rule.fault.action.name) == ("event:3", "fin")
    # the long form means the same, and a conflicting [network] table is named
    same = text + '\n[network]\nbackend = "relay"\nrelay = { mode = "swallow_close" }\n'
    assert load_scenario(write(tmp_path, same)).network == s.network
    bad = text + '\n[network]\nbackend = "relay"\nrelay = { mode = "hold" }\n'
    err = error_for(tmp_path, bad)
    assert err.field == "network" and "swallow_close" in err.allowed


def test_catalog_has_the_issue_8_rows_with_an_expectation_for_every_target():
    by_name = {s.name: s for s in load_catalog()}
    messages = [s for s in by_name.values() if s.api == "messages"]
    for row in (
        "healthy_stream",
        "mid_stream_stall",
        "ping_drip",
        "rst_mid_stream",
        "fin_mid_stream",
        "truncated_no_terminal",
    ):
        assert f"messages_{row}" in by_name
    for s in messages:  # the bare SDK does not speak it: said explicitly
        assert s.expected["openai-sdk"] == "not_applicable", s.name
        assert "hermes" in s.expected, s.name  # hermes runs it in anthropic_messages mode
    for api in ("", "responses_", "messages_"):
        for row in (
            "late_first_byte_within_budget",
            "keepalive_comments_then_content",
            "steady_slow_token_drip",
        ):
            s = by_name[api + row]
            assert s.is_alive and s.expected["reference"] == "ok", s.name
    for name in (
        "stall_upload_150kb",
        "stall_upload_1mb",
        "chat_content_length_fin",
        "responses_content_length_fin",
        "nonstream_close_delimited_fin",
        "responses_nonstream_close_delimited_fin",
        "pooled_connection_race_fin",
        "pooled_connection_race_rst",
    ):
        assert {"reference", "openai-sdk", "hermes"} <= set(by_name[name].expected), name
    sizes = {by_name[n].request.prompt_bytes for n in ("stall_upload_150kb", "stall_upload_1mb")}
    assert sizes == {150 * 1024, 1024 * 1024}


def test_request_budget_can_be_overridden_per_target(tmp_path):
    text = (
        GOOD.format(name="case")
        + "\n[budget]\nmax_requests = 3\n[budget.max_requests_for]\nhermes = 20\n"
    )
    s = load_scenario(write(tmp_path, text))
    assert s.budget.max_requests_of("hermes") == 20
    assert s.budget.max_requests_of("reference") == 3
    bad = GOOD.format(name="case") + "\n[budget.max_requests_for]\ncurl = 2\n"
    err = error_for(tmp_path, bad)
    assert err.field == "budget.max_requests_for.curl" and "hermes" in err.allowed


def test_experimental_scenarios_validate_too() -> None:
    # Kept out of the default catalog (see each file's header) but still loadable.
    from harness.paths import CATALOG_DIR
    from harness.scenario import load_catalog

    names = [s.name for s in load_catalog(CATALOG_DIR / "experimental")]
    assert "toxiproxy_proxy_down_between_calls" in names


def test_a_targets_time_scale_floor_raises_its_cases_and_only_its_own():
    from harness.planning import case_time_scale
    from harness.targets.hermes import HERMES_MIN_TIME_SCALE

    s = scenario_from_dict({"name": "x", "summary": "s", "expected": {"reference": "ok"}})
    assert case_time_scale(s, "hermes", 0.05) == HERMES_MIN_TIME_SCALE
    assert case_time_scale(s, "hermes", 1.0) == 1.0  # a floor, never a ceiling
    assert case_time_scale(s, "reference", 0.05) == 0.05
    floored = scenario_from_dict(
        {"name": "y", "summary": "s", "expected": {"reference": "ok"}, "min_time_scale": 0.5}
    )
    assert case_time_scale(floored, "hermes", 0.05) == 0.5  # the higher floor wins
    kernel = load_scenario(CATALOG_DIR / "kernel_dead_peer_mid_stream.toml")
    assert case_time_scale(kernel, "hermes", 0.05) == 1.0
