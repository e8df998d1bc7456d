"""Retry policy: which errors to retry, how long to wait, and when to give up.

- Only retryable kinds are retried (``HarnessError.is_retryable()``): transport errors,
  stalls other than the hard ceiling, truncated or malformed streams, and provider
  statuses 408, 409, 429 and 5xx. Everything else is raised as is.
- A provider's ``Retry-After`` (delta seconds or an HTTP date) is honoured, capped at
  ``retry_after_max_s``; otherwise exponential backoff with jitter
  (``initial * 2**(n-1)``, capped at ``backoff_max_s``, times a factor drawn from
  ``[1 - jitter, 1]`` with the injectable ``random`` source).
- The total budget is ``max_attempts`` and the call's hard ceiling: a wait that would
  cross the ceiling is not started. When the policy gives up it raises
  :class:`RetriesExhausted` with every attempt's error.

Waiting itself is the watchdog's (a condition wait against the deadline, not a sleep).
Not here: running attempts (``client.py``).
"""

from __future__ import annotations

import email.utils
import math
import random as _random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.client.errors import HarnessError, ProviderError
from harness.client.settings import ClientSettings

__all__ = ["RetryPolicy", "parse_retry_after"]


def parse_retry_after(value: str | None, *, now: Callable[[], float] = time.time) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delta seconds (``"2"``, ``"1.5"``) or
    an HTTP date (``"Wed, 21 Oct 2015 07:28:00 GMT"``, relative to ``now()``, never
    negative). None when absent or unparseable."""
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        seconds = None
    if seconds is not None:
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None or when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - now())


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    """When and how long to wait before the next attempt."""

    max_attempts: int = 3
    backoff_initial_s: float = 0.5
    backoff_max_s: float = 8.0
    multiplier: float = 2.0
    jitter: float = 0.5
    retry_after_max_s: float = 60.0
    random: Callable[[], float] = field(default=_random.random, repr=False)

    @classmethod
    def from_settings(cls, settings: ClientSettings, **overrides: object) -> RetryPolicy:
        values: dict[str, object] = {
            "max_attempts": settings.max_attempts,
            "backoff_initial_s": settings.backoff_initial_s,
            "backoff_max_s": settings.backoff_max_s,
            "retry_after_max_s": settings.retry_after_max_s,
        }
        values.update(overrides)
        return cls(**values)  # type: ignore[arg-type]

    def should_retry(self, error: HarnessError, attempt: int) -> bool:
        """True if ``error`` (from attempt number ``attempt``) is worth another attempt."""
        return attempt < self.max_attempts and error.is_retryable()

    def delay_s(self, error: HarnessError, attempt: int) -> float:
        """Seconds to wait after attempt number ``attempt`` failed with ``error``."""
        if isinstance(error, ProviderError) and error.retry_after_s is not None:
            return min(error.retry_after_s, self.retry_after_max_s)
        base = min(self.backoff_max_s, self.backoff_initial_s * self.multiplier ** (attempt - 1))
        return base * (1.0 - self.jitter * self.random())
