"""Every environment variable the project reads, read here and nowhere else.

Code elsewhere takes an :class:`Environment` (or the values in it) as an argument;
``read_environment()`` is called once at an entry point (CLI, pytest plugin, target
child process). Tests build an ``Environment`` directly instead of patching
``os.environ``.

Variables:

==================================  =====================================================
``CI``                               set (non-empty, not "0"/"false") on CI machines:
                                     tiers that must run fail instead of skipping
``HERMES_LIVE_TESTS``                "1" enables the live tier
``OPENROUTER_API_KEY``               the live tier's key (never logged; see ``redact``)
``HERMES_LIVE_MODEL``                live model (default ``DEFAULT_LIVE_MODEL``)
``HERMES_LIVE_BASE_URL``             live base URL (default OpenRouter's)
``HERMES_CODEX_TTFB_TIMEOUT_SECONDS`` first-byte deadline (seed default 120 s)
``HERMES_CODEX_HARD_TIMEOUT_SECONDS`` hard ceiling over all attempts (seed default 1500 s)
``HARNESS_TIME_SCALE``               default time scale for ``harness run`` and the plugin
                                     (``check_time_scale``: > 0 and <= 100)
``HARNESS_TOXIPROXY_BIN``            path to the Toxiproxy server binary
``HARNESS_HERMES_PYTHON``            python of the hermes-agent virtualenv
``HARNESS_EXTRA_TARGETS``            "1": ci/setup builds the litellm / langchain / agents
                                     venvs, and their tests must run (fail on CI if missing)
``HARNESS_HERMES_REUSE``             "0": one hermes child per case (default: a clean child
                                     takes the next case; to compare outcomes both ways)
``HARNESS_FORK_CHILDREN``            "0": start every target child from scratch (default:
                                     fork it from a warm copy, ``targets.forking``)
``HARNESS_TARGET_PYTHON``            the interpreter ``package.module:Class`` targets' children
                                     run in (``--target-python`` sets it for a run)
==================================  =====================================================
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "DEFAULT_LIVE_BASE_URL",
    "DEFAULT_LIVE_MODEL",
    "Environment",
    "EnvironmentError_",
    "MAX_TIME_SCALE",
    "TARGET_PYTHON_VAR",
    "TIME_SCALE_ALLOWED",
    "check_time_scale",
    "read_environment",
]

DEFAULT_LIVE_MODEL = "openai/gpt-4o-mini"
DEFAULT_LIVE_BASE_URL = "https://openrouter.ai/api/v1"
#: The one rule for a time scale, wherever it comes from (CLI, environment, ini, code).
MAX_TIME_SCALE = 100.0
TIME_SCALE_ALLOWED = f"a number > 0 and <= {MAX_TIME_SCALE:g}"

#: Variables a target child process must not inherit from the caller's shell.
SCRUBBED_PREFIXES = ("HERMES_", "OPENAI_", "OPENROUTER_", "ANTHROPIC_")
SCRUBBED_NAMES = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
)


class EnvironmentError_(ValueError):
    """An environment variable has a value we cannot use; names the variable."""

    def __init__(self, name: str, value: str, allowed: str) -> None:
        self.name = name
        super().__init__(f"environment variable {name}={value!r} is not valid; allowed: {allowed}")


@dataclass(frozen=True)
class Environment:
    """A snapshot of the variables this project reads. Secrets are hidden from ``repr``."""

    ci: bool = False
    live_tests: bool = False
    openrouter_api_key: str | None = field(default=None, repr=False)
    live_model: str = DEFAULT_LIVE_MODEL
    live_base_url: str = DEFAULT_LIVE_BASE_URL
    codex_ttfb_timeout_s: float | None = None
    codex_hard_timeout_s: float | None = None
    time_scale: float | None = None
    toxiproxy_bin: str | None = None
    hermes_python: str | None = None
    extra_targets: bool = False
    hermes_reuse: bool = True
    fork_children: bool = True
    target_python: str | None = None

    @property
    def live_enabled(self) -> bool:
        return self.live_tests and bool(self.openrouter_api_key)


#: The variable ``--target-python`` sets (the runner hands it to every child start).
TARGET_PYTHON_VAR = "HARNESS_TARGET_PYTHON"


def read_environment(environ: Mapping[str, str] | None = None) -> Environment:
    """Read and validate the project's variables from ``environ`` (default ``os.environ``)."""
    env = os.environ if environ is None else environ
    return Environment(
        ci=_flag(env.get("CI")),
        live_tests=env.get("HERMES_LIVE_TESTS", "").strip() == "1",
        openrouter_api_key=(env.get("OPENROUTER_API_KEY") or "").strip() or None,
        live_model=(env.get("HERMES_LIVE_MODEL") or "").strip() or DEFAULT_LIVE_MODEL,
        live_base_url=(env.get("HERMES_LIVE_BASE_URL") or "").strip() or DEFAULT_LIVE_BASE_URL,
        codex_ttfb_timeout_s=_seconds(env, "HERMES_CODEX_TTFB_TIMEOUT_SECONDS"),
        codex_hard_timeout_s=_seconds(env, "HERMES_CODEX_HARD_TIMEOUT_SECONDS"),
        time_scale=_time_scale(env, "HARNESS_TIME_SCALE"),
        toxiproxy_bin=(env.get("HARNESS_TOXIPROXY_BIN") or "").strip() or None,
        hermes_python=(env.get("HARNESS_HERMES_PYTHON") or "").strip() or None,
        extra_targets=(env.get("HARNESS_EXTRA_TARGETS") or "").strip() == "1",
        hermes_reuse=(env.get("HARNESS_HERMES_REUSE") or "").strip() != "0",
        fork_children=(env.get("HARNESS_FORK_CHILDREN") or "").strip() != "0",
        target_python=(env.get(TARGET_PYTHON_VAR) or "").strip() or None,
    )


def scrubbed(environ: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``environ`` without proxy, provider and ``HERMES_*`` variables, for a
    target child process whose result must not depend on the caller's shell."""
    return {
        k: v
        for k, v in environ.items()
        if k not in SCRUBBED_NAMES and not k.startswith(SCRUBBED_PREFIXES)
    }


def check_time_scale(value: object, *, what: str = "time_scale") -> float:
    """``value`` as a time scale, or ValueError ``"<what> <value> is not valid; allowed: ..."``.

    The one validator for every source (``--time-scale``, ``HARNESS_TIME_SCALE``, the
    pytest option and ini, ``RunSettings``): finite, > 0, <= ``MAX_TIME_SCALE``."""
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            number = None
    if number is None or not 0 < number <= MAX_TIME_SCALE:  # also rejects nan and inf
        raise ValueError(f"{what} {value!r} is not valid; allowed: {TIME_SCALE_ALLOWED}")
    return number


def _time_scale(env: Mapping[str, str], name: str) -> float | None:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return None
    try:
        return check_time_scale(raw.strip(), what=name)
    except ValueError:
        raise EnvironmentError_(name, raw, TIME_SCALE_ALLOWED) from None


def _flag(value: str | None) -> bool:
    return bool(value) and value.strip().lower() not in ("0", "false", "no", "")


def _seconds(env: Mapping[str, str], name: str, *, positive: bool = False) -> float | None:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        raise EnvironmentError_(name, raw, "a number of seconds") from None
    if value != value or value < 0 or (positive and value == 0):
        raise EnvironmentError_(
            name, raw, "a number of seconds > 0" if positive else "a number >= 0"
        )
    return value
