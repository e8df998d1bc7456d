"""pytest plugin (entry point ``transport_harness``): fixtures, a marker and options.

Thin on purpose, like Hypothesis's plugin: this module imports only pytest at load
time; the harness (server, runner, scenarios) is imported inside the fixtures that use
it, so a test run that never touches them pays nothing and a broken harness module
cannot break unrelated test suites.

Fixtures::

    fault_server           a started FaultServer (127.0.0.1, free port, the run's time scale);
                           a script through indirect parametrization
    fault_server_factory   fault_server_factory(script=None, **kwargs) -> started FaultServer;
                           every server it made is stopped at teardown

A script is a ``FaultScript``, the dict a scenario's ``[script]`` table holds, or the
path of a TOML file holding that table (``harness.script_input``); bad input fails the
test with the scenario loader's one-line message (file, field, allowed values).
    scenario               the CaseResult of the test's ``transport_scenario`` marker

Marker::

    @pytest.mark.transport_scenario("chat_mid_stream_stall", target="reference")
    def test_stall(scenario):
        assert scenario.matched, scenario.message

Options (each with an ini twin sharing one help text; precedence CLI > environment
(``harness.environment``) > ini > default)::

    --harness-time-scale     / harness_time_scale      ($HARNESS_TIME_SCALE)
    --harness-scenarios-dir  / harness_scenarios_dir
    --harness-case-timeout   / harness_case_timeout    pytest-timeout for harness tests

Not here: the runner or the server themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

__all__ = ["OPTIONS", "Option", "option_value", "resolve_option"]

DEFAULT_TIME_SCALE = 0.05
DEFAULT_CASE_TIMEOUT_S = 60.0
MARKER = "transport_scenario"
#: Fixtures whose tests get the default per-test timeout.
_HARNESS_FIXTURES = frozenset({"fault_server", "fault_server_factory", "scenario"})


@dataclass(frozen=True)
class Option:
    """One option: CLI flag, ini name, environment field, parser, default and help."""

    name: str
    help: str
    parse: Callable[[str], Any]
    default: Any
    env_field: str | None = None

    @property
    def flag(self) -> str:
        return "--harness-" + self.name.replace("_", "-")

    @property
    def ini(self) -> str:
        return "harness_" + self.name


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise ValueError("must be > 0")
    return value


def _time_scale(text: str) -> float:
    from harness.environment import TIME_SCALE_ALLOWED, check_time_scale

    try:
        return check_time_scale(text)
    except ValueError:
        raise ValueError(TIME_SCALE_ALLOWED) from None


OPTIONS: tuple[Option, ...] = (
    Option(
        "time_scale",
        "multiply every scenario duration by this factor (1.0 real time, 0.01 fast CI)",
        _time_scale,
        DEFAULT_TIME_SCALE,
        env_field="time_scale",
    ),
    Option(
        "scenarios_dir",
        "directory of scenario TOML files (default: the bundled catalog)",
        str,
        None,
    ),
    Option(
        "case_timeout",
        "pytest-timeout seconds for tests that use the harness fixtures or marker",
        _positive_float,
        DEFAULT_CASE_TIMEOUT_S,
    ),
)
_BY_NAME = {o.name: o for o in OPTIONS}
_VALUES = pytest.StashKey[dict]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("transport_harness", "transport fault harness")
    for option in OPTIONS:
        group.addoption(option.flag, dest=f"harness_{option.name}", default=None, help=option.help)
        parser.addini(option.ini, help=option.help, default=None)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(name, target='reference'): run catalog scenario NAME against TARGET; "
        "the `scenario` fixture returns the CaseResult",
    )
    # Validated eagerly: a bad value stops the run at start-up with the option's name.
    config.stash[_VALUES] = {o.name: resolve_option(config, o.name) for o in OPTIONS}


def option_value(config: pytest.Config, name: str) -> Any:
    """The resolved value of option ``name`` for this run."""
    values = config.stash.get(_VALUES, None)
    return values[name] if values is not None else resolve_option(config, name)


def resolve_option(config: pytest.Config, name: str) -> Any:
    """The value of option ``name``: CLI, else environment, else ini, else default.

    A bad value raises ``pytest.UsageError`` naming the option and the source.
    """
    option = _BY_NAME[name]
    raw = config.getoption(f"harness_{name}")
    source = option.flag
    if raw is None and option.env_field is not None:
        from harness.environment import EnvironmentError_, read_environment

        try:
            value = getattr(read_environment(), option.env_field)
        except EnvironmentError_ as exc:
            raise pytest.UsageError(str(exc)) from None
        if value is not None:
            return value
    if raw is None:
        raw = config.getini(option.ini)
        source = f"ini {option.ini}"
    if raw is None or raw == "":
        return option.default
    try:
        return option.parse(str(raw))
    except ValueError as exc:
        raise pytest.UsageError(f"{source}={raw!r} is not valid: {exc}") from None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give harness tests a default pytest-timeout unless they set their own (only
    where pytest-timeout is installed: without it the marker is unknown, and each case
    still ends at its own ceiling)."""
    if not config.pluginmanager.hasplugin("timeout"):
        return
    timeout = None
    for item in items:
        uses = _HARNESS_FIXTURES.intersection(getattr(item, "fixturenames", ()))
        if not uses and item.get_closest_marker(MARKER) is None:
            continue
        if item.get_closest_marker("timeout") is not None:
            continue
        if timeout is None:
            timeout = option_value(config, "case_timeout")
        item.add_marker(pytest.mark.timeout(timeout))


@pytest.fixture
def fault_server(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A started fault server at the run's time scale; its script is the test's indirect
    parameter (``@pytest.mark.parametrize("fault_server", [script], indirect=True)``),
    else empty."""
    from harness.server import FaultServer

    script = _script(getattr(request, "param", None))
    with FaultServer(script, time_scale=option_value(request.config, "time_scale")) as server:
        yield server


@pytest.fixture
def fault_server_factory(request: pytest.FixtureRequest) -> Iterator[Callable[..., Any]]:
    """``make(script=None, **kwargs)`` -> a started FaultServer; all stopped at teardown."""
    from harness.server import FaultServer

    servers: list[Any] = []
    time_scale = option_value(request.config, "time_scale")

    def make(script: Any = None, **kwargs: Any) -> Any:
        kwargs.setdefault("time_scale", time_scale)
        server = FaultServer(_script(script), **kwargs).start()
        servers.append(server)
        return server

    try:
        yield make
    finally:
        for server in reversed(servers):
            server.stop()


@pytest.fixture
def scenario(request: pytest.FixtureRequest) -> Any:
    """Run the test's ``transport_scenario`` marker and return its CaseResult."""
    marker = request.node.get_closest_marker(MARKER)
    if marker is None:
        pytest.fail(
            f"the `scenario` fixture needs @pytest.mark.{MARKER}(name, target='reference')",
            pytrace=False,
        )
    name, target = _marker_args(*marker.args, **marker.kwargs)
    from harness.expectations import apply_overlays, overlays_for
    from harness.paths import CATALOG_DIR
    from harness.runner import RunSettings, run_cases
    from harness.scenario import ScenarioError, load_catalog, select
    from harness.targets import allowed_targets, is_target

    if not is_target(target):
        pytest.fail(f"{MARKER}: target {target!r} is not valid; allowed: {allowed_targets()}")
    directory = option_value(request.config, "scenarios_dir") or CATALOG_DIR
    try:
        catalog = load_catalog(directory)
        chosen = select(catalog, [name])
        # A shipped expectations overlay for the target gates it as it does in `harness run`.
        overlays = overlays_for([target], (), scenarios=[s.name for s in catalog])
        chosen = apply_overlays(chosen, overlays)
    except ScenarioError as exc:
        pytest.fail(str(exc), pytrace=False)
    settings = RunSettings(time_scale=option_value(request.config, "time_scale"), jobs=1)
    return run_cases([(chosen[0], target)], settings=settings)[0]


def _script(value: Any) -> Any:
    """A FaultScript from a FaultScript, a dict or a TOML path; bad input fails the test
    with one line."""
    from harness.scenario_errors import ScenarioError
    from harness.script_input import script_input

    try:
        return script_input(value)
    except ScenarioError as exc:
        problem = str(exc)  # failed outside the handler: no "during handling" chain
    pytest.fail(problem, pytrace=False)


def _marker_args(name: str, target: str = "reference") -> tuple[str, str]:
    """The marker's signature: ``transport_scenario(name, target="reference")``."""
    if not isinstance(name, str) or not isinstance(target, str):
        pytest.fail(f"{MARKER}(name, target='reference') takes strings", pytrace=False)
    return name, target
