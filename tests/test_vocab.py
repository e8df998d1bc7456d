"""The vocabularies (``harness.vocab``): each fact written once and read by every user."""

from __future__ import annotations

import pytest

from harness.apis import API_BY_PATH, APIS, TERMINAL_MARKERS, api_of_path
from harness.client.errors import ProviderError
from harness.client.settings import ClientSettings
from harness.faults import ACTIONS, DIALECTS, script_from_dict
from harness.guard.watch import Watch
from harness.scenario import ScenarioError, load_scenario
from harness.vocab.dialects import DIALECT_APIS, PROFILES
from harness.vocab.statuses import RETRYABLE_STATUSES

pytestmark = pytest.mark.timeout(30)


def test_every_api_has_one_path_and_one_terminal_marker() -> None:
    assert set(API_BY_PATH.values()) == set(APIS) == set(TERMINAL_MARKERS)
    for path, api in API_BY_PATH.items():
        assert api_of_path(path) == api
        assert api_of_path("/gateway" + path + "/") == api  # under a mounted base path
    assert api_of_path("/v1/models") is None


def test_the_fault_scripts_dialects_are_the_profiles() -> None:
    assert DIALECTS == tuple(PROFILES)
    assert set(DIALECT_APIS) == set(PROFILES)
    assert all(api in APIS for apis in DIALECT_APIS.values() for api in apis)
    with pytest.raises(ValueError, match="openrouter"):
        script_from_dict({"dialect": "nonesuch"})


def test_a_scenarios_api_is_checked_against_the_registry(tmp_path) -> None:
    path = tmp_path / "bad_api.toml"
    path.write_text('name = "bad_api"\nsummary = "x"\napi = "completions"\n')
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    message = str(info.value)
    assert "api: 'completions' is not valid" in message
    assert all(api in message.split("allowed:")[1] for api in APIS)


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504, 529])
def test_a_transient_status_is_retried_by_the_client_and_let_through_by_the_guard(
    status: int,
) -> None:
    assert ProviderError("x", status=status).is_retryable()
    watch = Watch.for_request("/v1/chat/completions", {}, ClientSettings())
    assert watch.response(status, {"retry-after": "1"}, ceiling_left_s=30.0) == {}


@pytest.mark.parametrize("status", [400, 401, 404, 501, 505, 511])
def test_a_status_no_retry_fixes_is_retried_by_neither_face(status: int) -> None:
    assert status not in RETRYABLE_STATUSES
    assert not ProviderError("x", status=status).is_retryable()
    watch = Watch.for_request("/v1/chat/completions", {}, ClientSettings())
    assert watch.response(status, {}, ceiling_left_s=30.0) == {"x-should-retry": "false"}


def test_the_guard_stops_a_retry_whose_retry_after_cannot_fit() -> None:
    watch = Watch.for_request("/v1/responses", {}, ClientSettings())
    assert watch.response(429, {"retry-after": "60"}, ceiling_left_s=30.0) == {
        "x-should-retry": "false"
    }
    assert watch.response(200, {"retry-after": "60"}, ceiling_left_s=30.0) == {}


def test_fault_traits_are_class_attributes_of_the_actions() -> None:
    assert {name for name, cls in ACTIONS.items() if cls.corrupting} == {"malformed"}
    assert {name for name, cls in ACTIONS.items() if cls.relay_mode} == {"swallow_close"}
    stalls = {name for name, cls in ACTIONS.items() if cls().upload_stall() is not None}
    assert stalls == {"stall_upload"}
