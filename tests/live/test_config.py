"""Live config: switches, defaults, bounds and clear errors; the key stays hidden."""

from __future__ import annotations

import pytest

from harness.environment import (
    DEFAULT_LIVE_BASE_URL,
    DEFAULT_LIVE_MODEL,
    Environment,
    read_environment,
)
from harness.live.config import (
    DEFAULT_MAX_TOKENS,
    SKIP_REASON,
    LiveConfig,
    LiveConfigError,
    LiveDisabled,
    live_config,
    skip_reason,
)

FAKE_KEY = "sk-or-v1-FAKEKEY-config-0123456789abcdef"


@pytest.mark.parametrize(
    "environ",
    [
        {},
        {"HERMES_LIVE_TESTS": "1"},
        {"OPENROUTER_API_KEY": FAKE_KEY},
        {"HERMES_LIVE_TESTS": "true", "OPENROUTER_API_KEY": FAKE_KEY},
        {"HERMES_LIVE_TESTS": "1", "OPENROUTER_API_KEY": "   "},
    ],
)
def test_the_tier_is_disabled_unless_both_switches_are_set(environ):
    env = read_environment(environ)
    assert skip_reason(env) == SKIP_REASON
    assert "HERMES_LIVE_TESTS=1" in SKIP_REASON and "OPENROUTER_API_KEY" in SKIP_REASON
    with pytest.raises(LiveDisabled, match="HERMES_LIVE_TESTS=1 and OPENROUTER_API_KEY"):
        live_config(env)


def test_defaults_are_cheap_and_overrides_come_from_the_environment():
    env = read_environment({"HERMES_LIVE_TESTS": "1", "OPENROUTER_API_KEY": FAKE_KEY})
    config = live_config(env)
    assert (config.base_url, config.model, config.max_tokens) == (
        DEFAULT_LIVE_BASE_URL,
        DEFAULT_LIVE_MODEL,
        DEFAULT_MAX_TOKENS,
    )
    assert config.max_tokens <= 32

    env = read_environment(
        {
            "HERMES_LIVE_TESTS": "1",
            "OPENROUTER_API_KEY": FAKE_KEY,
            "HERMES_LIVE_MODEL": "meta/llama-tiny",
            "HERMES_LIVE_BASE_URL": "http://127.0.0.1:8080/v1",
        }
    )
    config = live_config(env)
    assert (config.base_url, config.model, config.api_key) == (
        "http://127.0.0.1:8080/v1",
        "meta/llama-tiny",
        FAKE_KEY,
    )


def test_the_key_is_not_in_repr():
    config = LiveConfig(base_url="http://127.0.0.1:1/v1", api_key=FAKE_KEY, model="m")
    assert FAKE_KEY not in repr(config)
    assert FAKE_KEY not in repr(Environment(openrouter_api_key=FAKE_KEY))


@pytest.mark.parametrize(
    ("field", "value", "allowed"),
    [
        ("base_url", "openrouter.ai/api/v1", "http:// or https:// URL"),
        ("base_url", "ftp://x/v1", "http:// or https:// URL"),
        ("model", "", "model name"),
        ("max_tokens", 0, "1..1024"),
        ("max_tokens", 5000, "1..1024"),
        ("max_tokens", True, "1..1024"),
        ("call_ceiling_s", float("inf"), "finite number of seconds > 0"),
        ("run_ceiling_s", float("nan"), "finite number of seconds > 0"),
        ("first_byte_s", -1, "finite number of seconds > 0"),
    ],
)
def test_bad_values_name_the_field_and_what_is_allowed(field, value, allowed):
    values = {"base_url": "http://127.0.0.1:1/v1", "api_key": FAKE_KEY, "model": "m", field: value}
    with pytest.raises(LiveConfigError, match=field) as info:
        LiveConfig(**values)
    assert allowed in str(info.value)
    assert info.value.field == field


def test_an_empty_key_error_never_echoes_the_value():
    with pytest.raises(LiveConfigError) as info:
        LiveConfig(base_url="http://127.0.0.1:1/v1", api_key=" ", model="m")
    assert "api_key" in str(info.value) and "<hidden>" in str(info.value)


def test_client_settings_bound_every_call():
    config = LiveConfig(
        base_url="http://127.0.0.1:1/v1",
        api_key=FAKE_KEY,
        model="m",
        call_ceiling_s=20,
        first_byte_s=45,
    )
    settings = config.client_settings()
    assert settings.hard_ceiling_s == 20
    assert settings.first_byte_s == 20  # never above the ceiling
