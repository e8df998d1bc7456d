"""The pytest plugin, exercised in isolated pytest runs (pytester)."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


def test_marker_runs_a_catalog_scenario_against_a_target(pytester):
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.transport_scenario("chat_truncated_no_terminal", target="openai-sdk")
        def test_truncation(scenario):
            assert scenario.outcome.kind == "truncated_as_complete"
            assert scenario.matched
        """
    )
    result = pytester.runpytest_subprocess("--harness-time-scale", "0.02", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_marker_runs_an_out_of_tree_target_whose_name_is_not_its_path(pytester):
    # The child must be started with the import path: "my-agent" is registered nowhere.
    pytester.makepyfile(
        my_agent="""
        from harness.targets.clients.openai_sdk import OpenAISDKTarget

        class MyAgent(OpenAISDKTarget):
            name = "my-agent"
        """
    )
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.transport_scenario("chat_truncated_no_terminal", target="my_agent:MyAgent")
        def test_truncation(scenario):
            assert scenario.target == "my_agent:MyAgent"
            assert scenario.outcome.kind == "truncated_as_complete", scenario.message
            assert scenario.expected == ""  # no expectation: judged by its verdict
        """
    )
    result = pytester.runpytest_subprocess("--harness-time-scale", "0.02", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_marker_is_registered_with_its_signature(pytester):
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(["*transport_scenario(name, target='reference')*"])


def test_every_option_has_an_ini_twin_with_the_same_help(pytester):
    result = pytester.runpytest("--help")
    for name in ("time-scale", "scenarios-dir", "case-timeout"):
        result.stdout.fnmatch_lines([f"*--harness-{name}*"])
        result.stdout.fnmatch_lines([f"*harness_{name.replace('-', '_')} (*"])


@pytest.mark.parametrize(
    ("ini", "env", "cli", "expected"),
    [
        (None, None, None, 0.05),
        ("0.5", None, None, 0.5),
        ("0.5", "0.25", None, 0.25),
        ("0.5", "0.25", "0.125", 0.125),
    ],
)
def test_time_scale_precedence_is_cli_then_env_then_ini_then_default(
    pytester, monkeypatch, ini, env, cli, expected
):
    if ini:
        pytester.makeini(f"[pytest]\nharness_time_scale = {ini}\n")
    if env:
        monkeypatch.setenv("HARNESS_TIME_SCALE", env)
    else:
        monkeypatch.delenv("HARNESS_TIME_SCALE", raising=False)
    pytester.makepyfile(
        f"""
        def test_scale(fault_server):
            assert fault_server.time_scale == {expected}
        """
    )
    args = ["--harness-time-scale", cli] if cli else []
    pytester.runpytest(*args).assert_outcomes(passed=1)


def test_harness_tests_get_the_default_timeout_unless_they_set_one(pytester):
    pytester.makepyfile(
        """
        import pytest

        def test_default(request, fault_server_factory):
            assert request.node.get_closest_marker("timeout").args == (7.0,)

        @pytest.mark.timeout(3)
        def test_own(request, fault_server_factory):
            assert request.node.get_closest_marker("timeout").args == (3,)

        def test_plain(request):
            assert request.node.get_closest_marker("timeout") is None
        """
    )
    pytester.runpytest("--harness-case-timeout", "7").assert_outcomes(passed=3)


def test_without_pytest_timeout_no_unknown_marker_is_added(pytester):
    # a repro directory runs in a venv with only the wheel and pytest: no warning there
    pytester.makepyfile(
        """
        def test_default(request, fault_server_factory):
            assert request.node.get_closest_marker("timeout") is None
        """
    )
    result = pytester.runpytest("-p", "no:timeout", "-W", "error::pytest.PytestUnknownMarkWarning")
    result.assert_outcomes(passed=1)


def test_fault_server_factory_builds_servers_with_scripts_and_stops_them(pytester):
    pytester.makepyfile(
        """
        import httpx
        from harness.faults import script_from_dict

        def test_two(fault_server_factory):
            script = script_from_dict({"rules": [{"fault": {"phase": "request", "action": "status", "code": 503}}]})
            a = fault_server_factory(script)
            b = fault_server_factory()
            assert a.url != b.url
            r = httpx.post(a.base_url + "/chat/completions", json={"model": "m", "messages": []})
            assert r.status_code == 503
        """
    )
    pytester.runpytest().assert_outcomes(passed=1)


def test_bad_option_value_is_a_usage_error_naming_the_option(pytester):
    pytester.makepyfile("def test_x(fault_server):\n    pass\n")
    result = pytester.runpytest("--harness-time-scale", "fast")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--harness-time-scale='fast' is not valid*"])


def test_scenario_fixture_without_the_marker_fails_clearly(pytester):
    pytester.makepyfile("def test_x(scenario):\n    pass\n")
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)  # fails in fixture setup
    result.stdout.fnmatch_lines(["*needs @pytest.mark.transport_scenario*"])
