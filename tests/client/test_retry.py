"""Retry policy: retryable kinds, Retry-After (seconds and HTTP date), backoff with jitter."""

from __future__ import annotations

import email.utils

import pytest

from harness.client import ClientSettings, errors
from harness.client.retry import RetryPolicy, parse_retry_after


@pytest.mark.parametrize(("value", "expected"), [("2", 2.0), (" 1.5 ", 1.5), ("0", 0.0)])
def test_retry_after_seconds(value: str, expected: float) -> None:
    assert parse_retry_after(value) == expected


def test_retry_after_http_date_is_relative_to_now() -> None:
    date = email.utils.formatdate(1_000_030, usegmt=True)
    assert parse_retry_after(date, now=lambda: 1_000_000.0) == pytest.approx(30.0)
    assert parse_retry_after(date, now=lambda: 1_000_100.0) == 0.0  # past dates: no wait


@pytest.mark.parametrize("value", [None, "", "soon", "-3", "inf", "nan", "Wed, 99 Foo"])
def test_retry_after_garbage_is_none(value: str | None) -> None:
    assert parse_retry_after(value) is None


def test_backoff_is_exponential_capped_and_jittered_by_the_injected_source() -> None:
    p = RetryPolicy(
        backoff_initial_s=1.0, backoff_max_s=3.0, jitter=0.5, random=lambda: 0.0, max_attempts=9
    )
    err = errors.PeerReset("x")
    assert [p.delay_s(err, n) for n in (1, 2, 3, 4)] == [1.0, 2.0, 3.0, 3.0]
    half = RetryPolicy(backoff_initial_s=1.0, backoff_max_s=3.0, jitter=0.5, random=lambda: 1.0)
    assert half.delay_s(err, 2) == 1.0


def test_retry_after_wins_over_backoff_and_is_capped() -> None:
    p = RetryPolicy(retry_after_max_s=5.0, random=lambda: 0.0)
    assert p.delay_s(errors.ProviderError("x", status=429, retry_after_s=2.0), 1) == 2.0
    assert p.delay_s(errors.ProviderError("x", status=429, retry_after_s=500.0), 1) == 5.0


def test_only_retryable_kinds_are_retried_and_attempts_are_bounded() -> None:
    p = RetryPolicy(max_attempts=3)
    assert p.should_retry(errors.FirstByteTimeout("x"), 1)
    assert p.should_retry(errors.ProviderError("x", status=503), 2)
    assert not p.should_retry(errors.PeerReset("x"), 3)
    assert not p.should_retry(errors.HardCeiling("x"), 1)
    assert not p.should_retry(errors.ProviderError("x", status=401), 1)
    assert not p.should_retry(errors.RetriesExhausted("x", attempts=[]), 1)


def test_policy_from_settings() -> None:
    p = RetryPolicy.from_settings(
        ClientSettings(max_attempts=5, backoff_initial_s=0.1, backoff_max_s=0.2)
    )
    assert (p.max_attempts, p.backoff_initial_s, p.backoff_max_s) == (5, 0.1, 0.2)
