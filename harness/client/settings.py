"""The reference client's settings: one frozen, keyword-only object, validated eagerly.

Every deadline is a number of seconds or *disabled*. ``None`` and ``math.inf`` both mean
disabled and are stored as ``None``, so a disabled deadline can never be shown or
scheduled as if it were set; ``nan``, negative numbers and non-numbers are rejected
with an error naming the field and the allowed values.

Deadlines (what each one is, see ``watchdog.py`` for how they are enforced)::

    first_byte_s     attempt start -> first stream activity (TTFB)
    stream_idle_s    longest gap between activities once the stream has started
    stale_call_s     longest time without *content* progress (comments never count)
    hard_ceiling_s   the whole call: every attempt and every backoff wait
    connect_timeout_s / read_timeout_s   httpx's own per-operation timeouts (backstops)

``ClientSettings.from_environment(env)`` applies the ``HERMES_CODEX_*`` variables read by
:mod:`harness.environment` (the one place the environment is read); ``0`` there means
disabled, as in the seed project. ``for_prompt(chars)`` returns the settings for one
request: the first-byte deadline is turned off for very large prompts, whose time to
first token is legitimately long.

Not here: reading ``os.environ`` (see :mod:`harness.environment`), enforcement.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from harness.environment import Environment
from harness.vocab.deadlines import DEADLINES, OPTIONAL_SECONDS

__all__ = [
    "DEFAULT_BACKOFF_INITIAL_S",
    "DEFAULT_BACKOFF_MAX_S",
    "DEFAULT_CONNECT_TIMEOUT_S",
    "DEFAULT_FIRST_BYTE_S",
    "DEFAULT_HARD_CEILING_S",
    "DEFAULT_KEEPALIVE_COUNT",
    "DEFAULT_KEEPALIVE_IDLE_S",
    "DEFAULT_KEEPALIVE_INTERVAL_S",
    "DEFAULT_MAX_ATTEMPTS",
    "DEFAULT_READ_TIMEOUT_S",
    "DEFAULT_RETRY_AFTER_MAX_S",
    "DEFAULT_STALE_CALL_S",
    "DEFAULT_STREAM_IDLE_S",
    "DEFAULT_TCP_USER_TIMEOUT_S",
    "DEFAULT_TTFB_DISABLE_ABOVE_TOKENS",
    "ClientSettings",
    "SettingsError",
]

DEFAULT_FIRST_BYTE_S = 120.0  # the seed's HERMES_CODEX_TTFB_TIMEOUT_SECONDS default
DEFAULT_STREAM_IDLE_S = 60.0
DEFAULT_STALE_CALL_S = 300.0
DEFAULT_HARD_CEILING_S = 1500.0  # the seed's HERMES_CODEX_HARD_TIMEOUT_SECONDS default
DEFAULT_TTFB_DISABLE_ABOVE_TOKENS = 10_000  # the seed: ~11k-token prompts skip TTFB
DEFAULT_CONNECT_TIMEOUT_S = 10.0
DEFAULT_READ_TIMEOUT_S = 600.0  # the SDK's own default; a backstop, not a deadline
DEFAULT_KEEPALIVE_IDLE_S = 30
DEFAULT_KEEPALIVE_INTERVAL_S = 10
DEFAULT_KEEPALIVE_COUNT = 3
#: idle + interval * count: keepalive and user-timeout give up at about the same time.
DEFAULT_TCP_USER_TIMEOUT_S = 60.0
DEFAULT_MAX_ATTEMPTS = 3
DEFAULT_BACKOFF_INITIAL_S = 0.5
DEFAULT_BACKOFF_MAX_S = 8.0
DEFAULT_RETRY_AFTER_MAX_S = 60.0

#: Characters per token for the prompt-size estimate (the seed's rule of thumb).
CHARS_PER_TOKEN = 4


class SettingsError(ValueError):
    """A setting has a value we cannot use; names the field and what is allowed."""

    def __init__(self, field: str, value: Any, allowed: str) -> None:
        self.field = field
        self.value = value
        super().__init__(f"{field}: {value!r} is not valid; allowed: {allowed}")


@dataclass(frozen=True, kw_only=True, repr=False)
class ClientSettings:
    """Deadlines, keepalive, and retry policy for the reference client."""

    first_byte_s: float | None = DEFAULT_FIRST_BYTE_S
    stream_idle_s: float | None = DEFAULT_STREAM_IDLE_S
    stale_call_s: float | None = DEFAULT_STALE_CALL_S
    hard_ceiling_s: float | None = DEFAULT_HARD_CEILING_S
    #: SSE comments (and Anthropic ``ping``) satisfy the first-byte deadline and reset
    #: the idle timer; they never count as progress for ``stale_call_s``.
    idle_counts_comments: bool = True
    ttfb_disable_above_tokens: int | None = DEFAULT_TTFB_DISABLE_ABOVE_TOKENS
    connect_timeout_s: float | None = DEFAULT_CONNECT_TIMEOUT_S
    read_timeout_s: float | None = DEFAULT_READ_TIMEOUT_S
    keepalive: bool = True
    keepalive_idle_s: int = DEFAULT_KEEPALIVE_IDLE_S
    keepalive_interval_s: int = DEFAULT_KEEPALIVE_INTERVAL_S
    keepalive_count: int = DEFAULT_KEEPALIVE_COUNT
    tcp_user_timeout_s: float | None = DEFAULT_TCP_USER_TIMEOUT_S
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    backoff_initial_s: float = DEFAULT_BACKOFF_INITIAL_S
    backoff_max_s: float = DEFAULT_BACKOFF_MAX_S
    retry_after_max_s: float = DEFAULT_RETRY_AFTER_MAX_S

    def __post_init__(self) -> None:
        for name in OPTIONAL_SECONDS:
            object.__setattr__(self, name, _optional_seconds(name, getattr(self, name)))
        for name in ("idle_counts_comments", "keepalive"):
            if not isinstance(getattr(self, name), bool):
                raise SettingsError(name, getattr(self, name), "true, false")
        for name in ("keepalive_idle_s", "keepalive_interval_s", "keepalive_count", "max_attempts"):
            _whole(name, getattr(self, name), minimum=1)
        if self.ttfb_disable_above_tokens is not None:
            _whole("ttfb_disable_above_tokens", self.ttfb_disable_above_tokens, minimum=1)
        for name in ("backoff_initial_s", "backoff_max_s", "retry_after_max_s"):
            _seconds(name, getattr(self, name))
        if self.backoff_max_s < self.backoff_initial_s:
            raise SettingsError(
                "backoff_max_s",
                self.backoff_max_s,
                f">= backoff_initial_s ({self.backoff_initial_s})",
            )

    # ------------------------------------------------------------------ builders

    @classmethod
    def from_environment(cls, env: Environment, **overrides: Any) -> ClientSettings:
        """Settings with the ``HERMES_CODEX_*`` values of ``env`` applied (``0`` disables),
        then ``overrides``."""
        values: dict[str, Any] = {}
        if env.codex_ttfb_timeout_s is not None:
            values["first_byte_s"] = env.codex_ttfb_timeout_s or None
        if env.codex_hard_timeout_s is not None:
            values["hard_ceiling_s"] = env.codex_hard_timeout_s or None
        values.update(overrides)
        return cls(**values)

    def replace(self, **changes: Any) -> ClientSettings:
        """A validated copy with ``changes`` applied."""
        return dataclasses.replace(self, **changes)

    def for_prompt(self, prompt_chars: int) -> ClientSettings:
        """The settings for one request whose prompt has ``prompt_chars`` characters:
        the first-byte deadline is disabled above ``ttfb_disable_above_tokens``."""
        limit = self.ttfb_disable_above_tokens
        if self.first_byte_s is None or limit is None or prompt_chars // CHARS_PER_TOKEN <= limit:
            return self
        return self.replace(first_byte_s=None)

    # ------------------------------------------------------------------ display

    def enabled_deadlines(self) -> dict[str, float]:
        """Only the deadlines that are set: ``{"first_byte_s": 120.0, ...}``."""
        return {n: getattr(self, n) for n in DEADLINES if getattr(self, n) is not None}

    def __repr__(self) -> str:
        parts = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            parts.append(f"{f.name}={'off' if value is None else repr(value)}")
        return f"ClientSettings({', '.join(parts)})"


def _optional_seconds(name: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SettingsError(name, value, "a number of seconds > 0, or None / inf (off)")
    if value == math.inf:
        return None
    if math.isnan(value) or value <= 0:
        raise SettingsError(name, value, "a number of seconds > 0, or None / inf (off)")
    return float(value)


def _seconds(name: str, value: Any) -> None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0:
        raise SettingsError(name, value, "a finite number of seconds >= 0")


def _whole(name: str, value: Any, *, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise SettingsError(name, value, f"a whole number >= {minimum}")
