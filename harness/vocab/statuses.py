"""HTTP statuses and retries: the one set a retry can fix, and the set it cannot.

:data:`RETRYABLE_STATUSES` is the reference client's retry policy
(``harness.client.errors.ProviderError.is_retryable``) and the guard's
(``harness.guard.watch``: it tells the SDK not to retry what the reference would not,
and not to wait out a Retry-After that cannot fit): timeouts, conflicts, rate limits,
the transient server errors and the CDN's (Cloudflare 520-524) and Anthropic's
overloaded (529). Not every 5xx: 501 Not Implemented, 505 HTTP Version Not Supported,
507/508/510/511 say the request itself cannot succeed there, so a retry repeats it for
nothing. Adding a retryable status is one number here.
"""

from __future__ import annotations

__all__ = ["NON_RETRYABLE_STATUSES", "RETRYABLE_STATUSES", "is_retryable_status"]

RETRYABLE_STATUSES: frozenset[int] = frozenset(
    {408, 409, 429, 500, 502, 503, 504, 520, 521, 522, 523, 524, 529}
)
#: Statuses no retry can fix (a contract requires no retry): bad request (context
#: length, content filter), auth, not found, too large, unprocessable.
NON_RETRYABLE_STATUSES: frozenset[int] = frozenset({400, 401, 403, 404, 413, 422})


def is_retryable_status(status: int) -> bool:
    """True when retrying a response with this status can succeed."""
    return status in RETRYABLE_STATUSES
