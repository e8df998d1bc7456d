"""The real live tier: OpenRouter round trips through the reference client.

Skipped unless ``HERMES_LIVE_TESTS=1`` and ``OPENROUTER_API_KEY`` are both set (never in
default CI; the same code runs there as the dry run in test_dry_run.py). Bounded: a few
tokens per call, a hard ceiling per call and per run.
"""

from __future__ import annotations

import random

import pytest

from harness.environment import EnvironmentError_, read_environment
from harness.live.config import (
    DEFAULT_CALL_CEILING_S,
    DEFAULT_RUN_CEILING_S,
    SKIP_REASON,
    live_config,
    skip_reason,
)
from harness.live.redact import Redactor
from harness.live.session import plan_sequences, run_tier


def _environment():
    try:
        return read_environment(), None
    except EnvironmentError_ as exc:  # a bad unrelated variable must not hide the reason
        return None, str(exc)


ENV, ENV_ERROR = _environment()
REASON = ENV_ERROR or (skip_reason(ENV) if ENV is not None else SKIP_REASON)

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(REASON is not None, reason=REASON or ""),
    # The run ceiling stops new calls; one call may still run to its own ceiling.
    pytest.mark.timeout(int(DEFAULT_RUN_CEILING_S + DEFAULT_CALL_CEILING_S + 30)),
]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "non-stream"])
def test_three_sequential_chats_across_a_client_rebuild_all_succeed(stream):
    config = live_config(ENV)
    (cases,) = plan_sequences(random.Random(), streams=(stream,))
    run = run_tier(config, [cases], mode="live", redactor=Redactor([config.api_key]))
    details = "\n".join(f"{c.name}: {c.summary()}" for c in run.cases)
    assert [c.name for c in run.cases] == [c.name for c in cases]
    assert run.ok, f"live chats failed against {run.model}:\n{details}"


@pytest.mark.parametrize("target", ["reference", "openai-sdk", "hermes"])
def test_three_sequential_chats_through_each_built_in_target(target):
    """``harness live -t TARGET``: for hermes, three turns on one ``AIAgent`` with
    ``_replace_primary_openai_client`` between the second and the third."""
    import os

    from harness.live.targets import plan_target_sequences, run_target_tier

    config = live_config(ENV)
    run = run_target_tier(
        config,
        target,
        plan_target_sequences(random.Random(), streams=(True,)),
        environ=dict(os.environ),
        ci=ENV.ci,
        redactor=Redactor([config.api_key]),
    )
    details = "\n".join(f"{c.name}: {c.summary()}" for c in run.cases)
    if all(c.skipped for c in run.cases):
        pytest.skip(details)
    assert run.ok, f"live chats through {target} failed against {run.model}:\n{details}"
