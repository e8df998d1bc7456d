"""The live tier's provider configuration and its cost and time bounds.

Built from a :class:`harness.environment.Environment` (the one place variables are
read): the tier is enabled only by ``HERMES_LIVE_TESTS=1`` *and* ``OPENROUTER_API_KEY``;
``HERMES_LIVE_MODEL`` picks the model (a cheap default) and ``HERMES_LIVE_BASE_URL``
points the tier elsewhere (the dry run points it at the local fault server).

Bounds: every call asks for at most ``max_tokens`` tokens and is stopped by the
reference client's hard ceiling ``call_ceiling_s``; a run starts no new call once
``run_ceiling_s`` has passed, so the worst case is ``run_ceiling_s + call_ceiling_s``.

Not here: running calls (``session``), redaction (``redact``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from harness.environment import Environment

if TYPE_CHECKING:
    from harness.client.settings import ClientSettings

__all__ = [
    "DEFAULT_CALL_CEILING_S",
    "DEFAULT_FIRST_BYTE_S",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_RUN_CEILING_S",
    "LiveConfig",
    "LiveConfigError",
    "LiveDisabled",
    "SKIP_REASON",
    "live_config",
    "skip_reason",
]

#: Enough for the one word the prompts ask for, and little else: cost stays negligible.
DEFAULT_MAX_TOKENS = 16
DEFAULT_FIRST_BYTE_S = 30.0
DEFAULT_CALL_CEILING_S = 60.0
DEFAULT_RUN_CEILING_S = 300.0

SKIP_REASON = (
    "live tier disabled: set HERMES_LIVE_TESTS=1 and OPENROUTER_API_KEY to run real "
    "provider round trips (the dry run against the local fault server always runs)"
)


class LiveConfigError(ValueError):
    """A live setting has a value we cannot use; names the field and what is allowed."""

    def __init__(self, field: str, value: Any, allowed: str) -> None:
        self.field = field
        super().__init__(f"{field}: {value!r} is not valid; allowed: {allowed}")


class LiveDisabled(RuntimeError):
    """The live tier was asked for but its switches are not set (message: SKIP_REASON)."""


@dataclass(frozen=True, kw_only=True)
class LiveConfig:
    """Where the live calls go and how much they may cost. The key is hidden from repr."""

    base_url: str
    api_key: str = field(repr=False)
    model: str
    max_tokens: int = DEFAULT_MAX_TOKENS
    first_byte_s: float = DEFAULT_FIRST_BYTE_S
    call_ceiling_s: float = DEFAULT_CALL_CEILING_S
    run_ceiling_s: float = DEFAULT_RUN_CEILING_S

    def __post_init__(self) -> None:
        parts = urlsplit(self.base_url) if isinstance(self.base_url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise LiveConfigError("base_url", self.base_url, "an http:// or https:// URL")
        if not isinstance(self.api_key, str) or not self.api_key.strip():
            # Never echo the value: it is (or is meant to be) a secret.
            raise LiveConfigError("api_key", "<hidden>", "a non-empty string")
        if not isinstance(self.model, str) or not self.model.strip():
            raise LiveConfigError("model", self.model, "a model name such as openai/gpt-4o-mini")
        if (
            not isinstance(self.max_tokens, int)
            or isinstance(self.max_tokens, bool)
            or not 1 <= self.max_tokens <= 1024
        ):
            raise LiveConfigError("max_tokens", self.max_tokens, "a whole number 1..1024")
        for name in ("first_byte_s", "call_ceiling_s", "run_ceiling_s"):
            value = getattr(self, name)
            ok = isinstance(value, int | float) and not isinstance(value, bool)
            if not (ok and math.isfinite(value) and value > 0):
                raise LiveConfigError(name, value, "a finite number of seconds > 0")

    def client_settings(self) -> ClientSettings:
        """The reference client's settings for this tier: its hard ceiling is the call
        ceiling, its first-byte deadline ``first_byte_s`` (never above the ceiling)."""
        from harness.client.settings import ClientSettings

        return ClientSettings(
            first_byte_s=min(self.first_byte_s, self.call_ceiling_s),
            hard_ceiling_s=self.call_ceiling_s,
        )


def skip_reason(env: Environment) -> str | None:
    """Why the real live tier cannot run in ``env`` (naming both switches), or None."""
    return None if env.live_enabled else SKIP_REASON


def live_config(env: Environment, **overrides: Any) -> LiveConfig:
    """The real live tier's config from ``env``; raises :class:`LiveDisabled` unless both
    ``HERMES_LIVE_TESTS=1`` and ``OPENROUTER_API_KEY`` are set."""
    reason = skip_reason(env)
    if reason is not None:
        raise LiveDisabled(reason)
    values: dict[str, Any] = {
        "base_url": env.live_base_url,
        "api_key": env.openrouter_api_key,
        "model": env.live_model,
    }
    values.update(overrides)
    return LiveConfig(**values)
