"""The live-with-a-fault check against the real provider (opt-in, like the live tier).

Skipped unless ``HERMES_LIVE_TESTS=1`` and ``OPENROUTER_API_KEY`` are set; the same code
runs in default CI against the local fault server (test_fault_check.py). A real stream
goes through the fault proxy, which stalls it and cuts it with a FIN after 2 events.
"""

from __future__ import annotations

import pytest

from harness.environment import EnvironmentError_, read_environment
from harness.live.config import DEFAULT_CALL_CEILING_S, SKIP_REASON, live_config, skip_reason
from harness.live.fault_check import run_fault_check
from harness.live.redact import Redactor


def _environment():
    try:
        return read_environment(), None
    except EnvironmentError_ as exc:
        return None, str(exc)


ENV, ENV_ERROR = _environment()
REASON = ENV_ERROR or (skip_reason(ENV) if ENV is not None else SKIP_REASON)

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(REASON is not None, reason=REASON or ""),
    pytest.mark.timeout(int(2 * DEFAULT_CALL_CEILING_S + 30)),
]


def test_a_real_stream_stalled_or_cut_by_the_proxy_raises_a_typed_error_in_time(tmp_path):
    config = live_config(ENV, max_tokens=200)
    redactor = Redactor([config.api_key])
    results = run_fault_check(config, redactor=redactor, record_dir=tmp_path)
    details = "\n".join(f"{r.name}: {r.summary()}" for r in results)
    assert all(r.ok for r in results), details
    for path in tmp_path.iterdir():
        assert config.api_key not in path.read_text()
