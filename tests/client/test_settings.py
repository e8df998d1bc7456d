"""ClientSettings: defaults, eager validation, disabled deadlines, environment, repr."""

from __future__ import annotations

import math

import pytest

from harness.client.settings import (
    DEFAULT_FIRST_BYTE_S,
    DEFAULT_HARD_CEILING_S,
    ClientSettings,
    SettingsError,
)
from harness.environment import Environment, read_environment


def test_defaults_match_the_seed_project() -> None:
    s = ClientSettings()
    assert s.first_byte_s == DEFAULT_FIRST_BYTE_S == 120.0
    assert s.hard_ceiling_s == DEFAULT_HARD_CEILING_S == 1500.0
    assert (s.keepalive_idle_s, s.keepalive_interval_s, s.keepalive_count) == (30, 10, 3)


@pytest.mark.parametrize("off", [None, math.inf])
def test_none_and_inf_disable_a_deadline_and_it_is_never_shown_as_set(off: float | None) -> None:
    s = ClientSettings(stale_call_s=off, first_byte_s=off)
    assert s.stale_call_s is None and s.first_byte_s is None
    assert "stale_call_s" not in s.enabled_deadlines()
    assert "stale_call_s=off" in repr(s)
    assert "inf" not in repr(s)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("first_byte_s", math.nan),
        ("stream_idle_s", -1.0),
        ("stale_call_s", 0),
        ("hard_ceiling_s", -math.inf),
        ("hard_ceiling_s", "5"),
        ("keepalive_count", 0),
        ("max_attempts", 1.5),
        ("idle_counts_comments", 1),
        ("backoff_initial_s", math.inf),
    ],
)
def test_invalid_values_are_rejected_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(SettingsError) as info:
        ClientSettings(**{field: value})
    assert info.value.field == field
    assert field in str(info.value) and "allowed" in str(info.value)


def test_settings_are_frozen_and_keyword_only() -> None:
    s = ClientSettings()
    with pytest.raises(AttributeError):
        s.first_byte_s = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        ClientSettings(1.0)  # type: ignore[misc]


def test_backoff_max_below_initial_is_rejected() -> None:
    with pytest.raises(SettingsError, match="backoff_max_s"):
        ClientSettings(backoff_initial_s=2.0, backoff_max_s=1.0)


def test_environment_variables_apply_and_zero_disables() -> None:
    env = read_environment(
        {"HERMES_CODEX_TTFB_TIMEOUT_SECONDS": "0.4", "HERMES_CODEX_HARD_TIMEOUT_SECONDS": "3"}
    )
    s = ClientSettings.from_environment(env)
    assert (s.first_byte_s, s.hard_ceiling_s) == (0.4, 3.0)
    off = ClientSettings.from_environment(Environment(codex_ttfb_timeout_s=0.0))
    assert off.first_byte_s is None
    assert ClientSettings.from_environment(Environment()).first_byte_s == DEFAULT_FIRST_BYTE_S


def test_environment_overrides_win_over_variables() -> None:
    s = ClientSettings.from_environment(Environment(codex_hard_timeout_s=3.0), hard_ceiling_s=9.0)
    assert s.hard_ceiling_s == 9.0


def test_first_byte_deadline_is_disabled_for_very_large_prompts_only() -> None:
    s = ClientSettings()
    assert s.for_prompt(44_000).first_byte_s is None  # ~11k tokens, the seed's case
    assert s.for_prompt(4_000).first_byte_s == DEFAULT_FIRST_BYTE_S
    assert s.for_prompt(44_000).hard_ceiling_s == DEFAULT_HARD_CEILING_S
    assert (
        ClientSettings(ttfb_disable_above_tokens=None).for_prompt(10**6).first_byte_s
        == DEFAULT_FIRST_BYTE_S
    )
