"""harness.netem.prereq: a missing prerequisite skips locally, fails in CI, and says what
to install."""

from __future__ import annotations

import pytest

from harness.environment import Environment
from harness.netem import prereq


def test_missing_prerequisite_skips_locally_with_the_reason() -> None:
    with pytest.raises(pytest.skip.Exception, match="install me"):
        prereq.require("install me", env=Environment(ci=False))


def test_missing_prerequisite_fails_in_ci() -> None:
    with pytest.raises(pytest.fail.Exception, match="CI requires this tier: install me"):
        prereq.require("install me", env=Environment(ci=True))


def test_no_reason_means_the_tier_runs() -> None:
    assert prereq.require(None, env=Environment(ci=True)) is None


def test_toxiproxy_bin_variable_wins_and_a_bad_value_is_named(tmp_path) -> None:
    bad = tmp_path / "nope"
    env = Environment(toxiproxy_bin=str(bad))
    assert prereq.toxiproxy_binary(env) is None
    assert prereq.toxiproxy_missing(env) == f"HARNESS_TOXIPROXY_BIN={bad} is not an executable file"
    good = tmp_path / "server"
    good.write_text("#!/bin/sh\n")
    good.chmod(0o755)
    assert prereq.toxiproxy_binary(Environment(toxiproxy_bin=str(good))) == good


def test_install_hint_names_the_pinned_version_and_cache_path() -> None:
    assert "toxiproxy/v2/cmd/server@v2.12.0" in prereq.TOXIPROXY_INSTALL
    assert prereq.DEFAULT_TOXIPROXY_BIN.parts[-4:] == (".cache", "toxiproxy", "bin", "server")


def test_netns_reason_is_none_or_says_what_is_needed() -> None:
    reason = prereq.netns_missing()
    assert reason is None or any(w in reason for w in ("root", "iproute2", "Linux", "failed"))


def test_a_backend_is_missing_for_its_tiers_reason_and_the_server_and_relay_never_are() -> None:
    from harness.netem.prereq import backend_missing, netns_missing, toxiproxy_missing

    assert backend_missing("server") is None and backend_missing("relay") is None
    assert backend_missing("toxiproxy") == toxiproxy_missing()
    assert backend_missing("kernel") == netns_missing()
