"""What a hermes driver run is asked to do: the call spec, validated, and the mapping of
reference-client settings onto hermes's own environment variables and config.

Pure and stdlib-only: it runs inside hermes-agent's virtualenv as part of
the ``hermes_driver`` package and in the harness's venv, where
``harness.targets.hermes`` reads :data:`SETTING_ENV` and friends for reports.

Not here: running hermes (``turns``) or the process entry (``main``).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "API_MODES",
    "DEFAULT_API_KEY",
    "DEFAULT_CONTEXT_LENGTH",
    "DEFAULT_MODEL",
    "MIN_SCALED_S",
    "SETTING_ENV",
    "UNMAPPED_SETTINGS",
    "SpecError",
    "hermes_config",
    "hermes_env",
    "merge",
    "parse_spec",
    "spec_from_job",
]

DEFAULT_MODEL = "test-model"
DEFAULT_API_KEY = "sk-harness"
#: Pinned so hermes resolves the context window from config, not by probing the
#: server (it POSTs /api/show to any base URL otherwise).
DEFAULT_CONTEXT_LENGTH = 128_000
API_MODES = {
    "chat": "chat_completions",
    "chat_completions": "chat_completions",
    "responses": "codex_responses",
    "codex_responses": "codex_responses",
    "messages": "anthropic_messages",
    "anthropic_messages": "anthropic_messages",
}


#: Reference-client setting -> the hermes environment variable with the same meaning.
#: ``None`` (disabled) is written as ``0`` where hermes documents 0 as "off"; where it
#: has no off switch the variable is left at hermes's default.
#:
#: * first_byte_s: codex TTFB watchdog (no stream event since the attempt started).
#: * stream_idle_s: codex event-gap watchdog (SSE comments are not events to it).
#: * stale_call_s: the chat streaming stale detector (no chunk for N s; comments never
#:   count), i.e. "no content progress".
#: * hard_ceiling_s: ``HERMES_CODEX_HARD_TIMEOUT_SECONDS``, which hermes applies only to
#:   the openai-codex backend (provider "openai-codex"): set, but inert here.
#: * read_timeout_s: httpx's read timeout for chat streams.
#:
#: ``HERMES_API_CALL_STALE_TIMEOUT`` (a per-attempt wall clock that fires even on a
#: healthy stream) has no reference counterpart and keeps hermes's default: off for a
#: local base URL.
SETTING_ENV: dict[str, tuple[str, ...]] = {
    "first_byte_s": ("HERMES_CODEX_TTFB_TIMEOUT_SECONDS",),
    "stream_idle_s": ("HERMES_CODEX_EVENT_STALE_TIMEOUT_SECONDS",),
    "stale_call_s": ("HERMES_STREAM_STALE_TIMEOUT",),
    "hard_ceiling_s": ("HERMES_CODEX_HARD_TIMEOUT_SECONDS",),
    "read_timeout_s": ("HERMES_STREAM_READ_TIMEOUT",),
}
#: Variables where 0 means "watchdog off" in hermes.
_ZERO_DISABLES = {
    "HERMES_CODEX_TTFB_TIMEOUT_SECONDS",
    "HERMES_CODEX_EVENT_STALE_TIMEOUT_SECONDS",
    "HERMES_CODEX_HARD_TIMEOUT_SECONDS",
}
#: The settings hermes has no knob for (kept in reports so nobody assumes they apply).
UNMAPPED_SETTINGS = (
    "connect_timeout_s",
    "backoff_initial_s",
    "backoff_max_s",
    "retry_after_max_s",
    "keepalive",
    "keepalive_idle_s",
    "keepalive_interval_s",
    "keepalive_count",
    "tcp_user_timeout_s",
    "idle_counts_comments",
    "ttfb_disable_above_tokens",
)
#: Never below hermes's own watchdog poll (0.3 s) by much: a scaled deadline of a few
#: milliseconds would only measure the poll interval.
MIN_SCALED_S = 0.05


class SpecError(ValueError):
    """The call spec is malformed; the message names the field and allowed values."""


def hermes_env(settings: dict[str, Any], time_scale: float = 1.0) -> dict[str, str]:
    """The hermes environment variables for reference-client ``settings`` (scenario
    seconds, ``None`` = off) scaled by ``time_scale``. Pure; shared with the adapter."""
    env: dict[str, str] = {}
    for name, variables in SETTING_ENV.items():
        if name not in settings:
            continue
        value = settings[name]
        seconds = None if value is None else max(float(value) * time_scale, MIN_SCALED_S)
        for var in variables:
            if seconds is not None:
                env[var] = f"{seconds:.6g}"
            elif var in _ZERO_DISABLES:
                env[var] = "0"
    return env


def hermes_config(settings: dict[str, Any]) -> dict[str, Any]:
    """config.yaml entries for ``settings``: ``max_attempts`` is hermes's
    ``agent.api_max_retries`` (its count of attempts, 1 = no retry)."""
    attempts = settings.get("max_attempts")
    if isinstance(attempts, int) and not isinstance(attempts, bool) and attempts >= 1:
        return {"agent": {"api_max_retries": attempts}}
    return {}


def spec_from_job(job: dict[str, Any], home: str) -> dict[str, Any]:
    """A driver spec for one runner job (``harness.targets.base.Job.to_dict()``)."""
    if job.get("api", "chat") not in ("chat", "responses", "messages"):
        raise SpecError(
            f"hermes does not speak api={job.get('api')!r}; allowed: chat, responses, messages"
        )
    users = [
        m.get("content")
        for m in job.get("messages") or ()
        if isinstance(m, dict) and m.get("role") == "user"
    ]
    message = users[-1] if users and isinstance(users[-1], str) and users[-1] else "hello"
    calls = job.get("calls", 1)
    if isinstance(calls, bool) or not isinstance(calls, int) or calls < 1:
        raise SpecError(f"job.calls={calls!r} is not valid; allowed: a whole number >= 1")
    return parse_spec(
        {
            "base_url": job.get("base_url"),
            "api_key": job.get("api_key"),
            "model": job.get("model"),
            "api": job.get("api", "chat"),
            "turns": [message] * calls,
            "rebuild_after": job.get("rebuild_after"),
            "pause_s": float(job.get("pause_s") or 0.0) * float(job.get("time_scale", 1.0)),
            "settings": dict(job.get("settings") or {}),
            "time_scale": job.get("time_scale", 1.0),
            "hermes_home": home,
        }
    )


def parse_spec(raw: Any) -> dict[str, Any]:
    """Validate a raw spec eagerly and return a normalised copy."""
    if not isinstance(raw, dict):
        raise SpecError("spec must be a JSON object")
    base_url = raw.get("base_url")
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        raise SpecError("spec.base_url must be an http(s) URL string")
    api = raw.get("api", "chat")
    if api not in API_MODES:
        raise SpecError(f"spec.api={api!r} is not valid; allowed: {sorted(API_MODES)}")
    turns = _turns_from(raw)
    env = raw.get("env") or {}
    if not isinstance(env, dict) or not all(isinstance(k, str) for k in env):
        raise SpecError("spec.env must be an object of NAME: value")
    config = raw.get("config") or {}
    if not isinstance(config, dict):
        raise SpecError("spec.config must be an object")
    provider = raw.get("provider")
    if provider is not None and not isinstance(provider, str):
        raise SpecError("spec.provider must be a string or null")
    home = raw.get("hermes_home")
    if home is not None and not isinstance(home, str):
        raise SpecError("spec.hermes_home must be a path string or null")
    settings = raw.get("settings") or {}
    if not isinstance(settings, dict):
        raise SpecError("spec.settings must be an object of reference-client settings")
    time_scale = raw.get("time_scale", 1.0)
    if (
        isinstance(time_scale, bool)
        or not isinstance(time_scale, int | float)
        or not time_scale > 0
    ):
        raise SpecError(f"spec.time_scale={time_scale!r} is not valid; allowed: a number > 0")
    pause_s = raw.get("pause_s", 0.0)
    if isinstance(pause_s, bool) or not isinstance(pause_s, int | float) or not pause_s >= 0:
        raise SpecError(f"spec.pause_s={pause_s!r} is not valid; allowed: a number of seconds >= 0")
    env = {**hermes_env(settings, float(time_scale)), **{k: str(v) for k, v in env.items()}}
    config = merge(hermes_config(settings), config)
    if API_MODES[api] == "anthropic_messages" and base_url.rstrip("/").endswith("/v1"):
        base_url = base_url.rstrip("/")[: -len("/v1")]  # the anthropic SDK adds /v1/messages
    return {
        "base_url": base_url,
        "api_key": str(raw.get("api_key") or DEFAULT_API_KEY),
        "model": str(raw.get("model") or DEFAULT_MODEL),
        "api_mode": API_MODES[api],
        "provider": provider,
        "turns": turns,
        "rebuild_before": _rebuild_points(raw, len(turns)),
        "pause_s": float(pause_s),
        "env": env,
        "config": config,
        "hermes_home": home,
        # the reference-client settings as given (hermes+guard gives them to the guard)
        "settings": dict(settings),
        "time_scale": float(time_scale),
    }


def merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """``base`` updated by ``extra``, one level of nested tables merged."""
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def _rebuild_points(raw: dict[str, Any], count: int) -> frozenset[int]:
    """Turn indexes to rebuild the primary client before."""
    points = set()
    if raw.get("rebuild_between_turns"):
        points.update(range(1, count))
    after = raw.get("rebuild_after")
    if after is not None:
        if isinstance(after, bool) or not isinstance(after, int) or after < 1:
            raise SpecError(
                f"spec.rebuild_after={after!r} is not valid; allowed: a whole number >= 1 or null"
            )
        points.add(after)
    return frozenset(points)


def _turns_from(raw: dict[str, Any]) -> list[str]:
    if "turns" in raw:
        items = raw["turns"]
        if not isinstance(items, list) or not items:
            raise SpecError("spec.turns must be a non-empty list of messages")
        turns = []
        for i, item in enumerate(items):
            text = item.get("message") if isinstance(item, dict) else item
            if not isinstance(text, str) or not text:
                raise SpecError(f"spec.turns[{i}] must be a non-empty string or {{'message': str}}")
            turns.append(text)
        return turns
    messages = raw.get("messages")
    if isinstance(messages, list):
        turns = [
            m["content"]
            for m in messages
            if isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("content"), str)
        ]
        if turns:
            return turns
    raise SpecError("spec needs turns (list of strings) or messages with at least one user message")
