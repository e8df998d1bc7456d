"""Scenario files: load ``harness/catalog/*.toml`` into frozen, validated :class:`Scenario` objects.

A scenario is one reproducible transport failure (or one healthy-but-slow call that must
*not* be killed): the request a target makes, the fault script the server plays, the
watchdog settings of the reference target, the runner's outer ceiling, and the outcome
expected from every target. A file looks like::

    name = "mid_stream_stall"
    summary = "Status and three events, then silence with the connection open."
    references = ["hermes-agent#10324"]
    api = "chat"              # chat | responses | messages
    stream = true
    ceiling_s = 60            # runner's outer ceiling, scenario seconds

    [request]
    prompt = "Say something."
    prompt_bytes = 0          # pad the prompt to at least this many bytes

    [script]                  # harness.faults.script_from_dict
    events = 8
    [[script.rules]]
    fault = { phase = "event:3", action = "hang" }

    [watchdog]                # reference target's deadlines, scenario seconds or "off"
    stream_idle_s = 5

    [network]                 # optional: relay / toxiproxy / kernel in between
    backend = "relay"         # (harness.network_spec; swallow_close rules imply a relay)
    relay = { mode = "idle_cut", idle_cut_s = 3 }

    [budget]                  # optional: the most LLM requests the server may see
    max_requests = 3
    [budget.max_requests_for] # optional per-target override
    hermes = 12

    [contract]                # optional: overrides of what any correct client must do
    max_requests = 4          # (harness.contract.spec; defaults derive from the script)

    [expected]                # optional: the regression gate per target
    reference = "error:StreamIdleTimeout"   # matched against the error's class or any base
    openai-sdk = "hung"

Every case is judged by its target's expectation where one exists (here or in an
overlay, ``harness.expectations``) and by the contract verdict (``harness.contract``).

A target that does not speak the ``api`` (``Target.apis``) is not run: ``not_applicable``.
Durations are scenario seconds, times the run's one ``time_scale``. Bad input raises
:class:`ScenarioError` naming the file, the field path and the allowed values (exit 2).

Not here: running scenarios (``harness.runner``) or judging outcomes (``harness.outcome``).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness import scenario_pace
from harness.apis import APIS, ApiName
from harness.contract.spec import ContractSpec
from harness.faults import FaultScript, FaultSpecError, script_from_dict
from harness.network_spec import network_for
from harness.outcome import Expected
from harness.paths import CATALOG_DIR
from harness.scenario_errors import (
    SECONDS_FIELDS,
    ScenarioError,
    check_expected,
    from_validation,
    read_toml,
)

__all__ = [
    "APIS",
    "DEFAULT_CEILING_S",
    "DEFAULT_MODEL",
    "Budget",
    "RequestSpec",
    "Scenario",
    "ScenarioError",
    "WatchdogSpec",
    "load_catalog",
    "load_scenario",
    "select",
]

DEFAULT_MODEL = "test-model"
DEFAULT_CEILING_S = 60.0
DEFAULT_PROMPT = "Answer with a few words."

_OFF = "off"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class ToolSpec(_Model):
    """A function tool the job offers; ``parameters``: the JSON schema its calls follow."""

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class RequestSpec(_Model):
    """What the target asks for. ``prompt_bytes`` pads the prompt (large-request cases)."""

    prompt: str = DEFAULT_PROMPT
    system: str | None = None
    prompt_bytes: int = Field(default=0, ge=0, le=16_000_000)
    model: str = DEFAULT_MODEL
    max_tokens: int | None = Field(default=None, ge=1)
    #: Sequential calls on one client (each must return the full reply).
    calls: int = Field(default=1, ge=1, le=10)
    #: Rebuild the client after this many calls (closed-client reuse, #10933 / #11266).
    rebuild_after: int | None = Field(default=None, ge=1)
    #: Pause between sequential calls, scenario seconds (an agent thinking between turns).
    pause_s: float = Field(default=0.0, ge=0, le=3600)
    #: The tools each call offers; None: ``record_note`` (``replies.DEFAULT_TOOL_SPEC``)
    #: on a tool-call script, else none; ``[]``: none (a tool-call script answers text).
    tools: tuple[ToolSpec, ...] | None = None
    #: An agent loop: after a reply that asks for tools, the job runs them and calls the
    #: model again with their results, up to this many times per call (a fault on the
    #: second model call is reached only so). 0: the first reply is the call's answer.
    tool_rounds: int = Field(default=0, ge=0, le=5)

    def messages(self) -> list[dict[str, str]]:
        """The chat messages, with the prompt padded to ``prompt_bytes``."""
        prompt = self.prompt
        missing = self.prompt_bytes - len(prompt.encode("utf-8"))
        if missing > 0:
            prompt += " " + "x" * (missing - 1) if missing > 1 else " "
        out = [{"role": "system", "content": self.system}] if self.system else []
        out.append({"role": "user", "content": prompt})
        return out


Seconds = float | Literal["off"]


class WatchdogSpec(_Model):
    """The reference target's settings (``harness.client.ClientSettings`` fields).

    Durations are scenario seconds (``"off"`` disables a deadline); the reference
    target multiplies them, and the client's own defaults for unset ones, by the run's
    ``time_scale``. Unset fields keep the client's defaults.
    """

    first_byte_s: Seconds | None = None
    stream_idle_s: Seconds | None = None
    stale_call_s: Seconds | None = None
    hard_ceiling_s: Seconds | None = None
    connect_timeout_s: Seconds | None = None
    read_timeout_s: Seconds | None = None
    idle_counts_comments: bool | None = None
    ttfb_disable_above_tokens: int | None = Field(default=None, ge=1)
    max_attempts: int | None = Field(default=None, ge=1, le=20)
    backoff_initial_s: float | None = Field(default=None, ge=0)
    backoff_max_s: float | None = Field(default=None, ge=0)
    retry_after_max_s: float | None = Field(default=None, ge=0)
    #: Kernel keepalive knobs: whole kernel seconds, never time-scaled.
    keepalive: bool | None = None
    keepalive_idle_s: int | None = Field(default=None, ge=1)
    keepalive_interval_s: int | None = Field(default=None, ge=1)
    keepalive_count: int | None = Field(default=None, ge=1)
    tcp_user_timeout_s: Seconds | None = None

    @field_validator(*SECONDS_FIELDS)
    @classmethod
    def _positive(cls, value: Seconds | None) -> Seconds | None:
        if isinstance(value, float | int) and not value > 0:
            raise ValueError('must be a number of seconds > 0 or "off"')
        return value

    def as_settings(self) -> dict[str, Any]:
        """Set fields only, unscaled, ``"off"`` as None (``ClientSettings`` keywords)."""
        return {
            name: None if value == _OFF else value
            for name, value in self.model_dump(exclude_none=True).items()
        }


class Budget(_Model):
    """Optional limits checked by the runner next to the outcome: part of each target's
    regression gate (the contract derives its own request budget from the fault).

    ``max_requests`` is the most LLM API requests the server may see for one case;
    ``max_requests_for`` overrides it per target (the expectation key), e.g. for an agent
    whose own recovery legitimately asks more (``[budget.max_requests_for] hermes = 20``).
    """

    max_requests: int | None = Field(default=None, ge=1)
    max_requests_for: dict[str, int] = Field(default_factory=dict)

    @field_validator("max_requests_for")
    @classmethod
    def _at_least_one(cls, value: dict[str, int]) -> dict[str, int]:
        for target, n in value.items():
            if n < 1:
                raise ValueError(f"{target}: must be a whole number >= 1")
        return value

    def max_requests_of(self, target: str) -> int | None:
        """The request budget for ``target`` (its override, else ``max_requests``)."""
        return self.max_requests_for.get(target, self.max_requests)


class _ScenarioFields(_Model):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_]*$")
    summary: str = Field(min_length=1)
    references: list[str] = Field(default_factory=list)
    api: ApiName = "chat"
    stream: bool = True
    ceiling_s: float = Field(default=DEFAULT_CEILING_S, gt=0)
    #: The fastest this scenario replays faithfully: a run's time scale below it is raised
    #: to it for this scenario (a relay's or proxy's own latency does not shrink).
    #: Kernel-backend scenarios always run at 1.0 (kernel timers are real seconds).
    min_time_scale: float | None = Field(default=None, gt=0, le=100)
    tags: list[str] = Field(default_factory=list)
    #: True: the response is slow but alive, so any deadline that fires is a false kill.
    #: Default: alive unless some fault rule stops progress.
    alive: bool | None = None
    env: dict[str, str] = Field(default_factory=dict)
    #: A recorded cassette (path relative to the scenario file) that stands in for the
    #: synthetic healthy reply: the catalog on real provider bytes (harness.record).
    cassette: str | None = None
    request: RequestSpec = Field(default_factory=RequestSpec)
    watchdog: WatchdogSpec = Field(default_factory=WatchdogSpec)
    budget: Budget = Field(default_factory=Budget)
    #: Overrides of the contract derived from the fault script (``harness.contract``).
    contract: ContractSpec = Field(default_factory=ContractSpec)
    #: target -> expected outcome; optional: a target without one is judged by the
    #: contract verdict alone (other targets keep theirs in ``harness.expectations`` overlays).
    expected: dict[str, str] = Field(default_factory=dict)


class Scenario(_ScenarioFields):
    """One validated scenario. ``script`` is the fault script; ``expected`` maps target -> outcome."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, strict=False, arbitrary_types_allowed=True
    )

    script: FaultScript
    #: ``harness.faults.network.spec.NetworkSpec`` from a ``[network]`` table; None: the fault
    #: server directly (no relay, proxy or kernel fault in between).
    network: Any = None
    path: str = ""

    def time_scale_for(self, run_scale: float) -> float:
        """The time scale this scenario runs at within a run at ``run_scale``."""
        if self.backend == "kernel":
            return 1.0
        return max(run_scale, self.min_time_scale or 0.0)

    @property
    def backend(self) -> str:
        """``server`` (default), ``relay``, ``toxiproxy`` or ``kernel``."""
        return "server" if self.network is None else self.network.backend

    def expected_for(self, target: str) -> Expected | None:
        """The parsed expectation for ``target``, or None when the scenario has none."""
        text = self.expected.get(target)
        return None if text is None else Expected.parse(text)

    @property
    def is_alive(self) -> bool:
        """True when no deadline should fire: ``alive``, else as derived
        (:func:`harness.scenario_pace.derived_alive`)."""
        return self.alive if self.alive is not None else scenario_pace.derived_alive(self)

    def to_dict(self) -> dict[str, Any]:
        data = self.model_dump(exclude={"script", "path", "network"})
        data["script"] = self.script.to_dict()
        if self.network is not None:
            data["network"] = self.network.to_dict()
        return data


def load_scenario(path: str | Path, *, targets: Iterable[str] | None = None) -> Scenario:
    """Read and validate one scenario file.

    ``targets`` are the target names an ``expected`` key may use (default: any target
    name: registered, an entry point, or ``package.module:Class``). Raises :class:`ScenarioError` on any problem.
    """
    path = Path(path)
    return scenario_from_dict(read_toml(path), file=str(path), stem=path.stem, targets=targets)


def scenario_from_dict(
    raw: Mapping[str, Any],
    *,
    file: str = "<scenario>",
    stem: str | None = None,
    targets: Iterable[str] | None = None,
) -> Scenario:
    """Validate already-parsed data (``load_scenario`` without the file read)."""
    data = dict(raw)
    script_raw = data.pop("script", None)
    network_raw = data.pop("network", None)
    try:
        fields = _ScenarioFields.model_validate(data)
    except ValidationError as exc:
        raise from_validation(
            file, exc, root=_ScenarioFields, extra_keys=("script", "network")
        ) from None
    try:
        script = script_from_dict(script_raw, where="script")
    except FaultSpecError as exc:
        raise ScenarioError(file, exc.field, f"{exc.value!r} is not valid", exc.allowed) from None
    try:
        script, network = network_for(script, network_raw, where="network")
    except FaultSpecError as exc:
        raise ScenarioError(file, exc.field, _problem(exc), exc.allowed) from None
    if stem is not None and fields.name != stem:
        raise ScenarioError(file, "name", f"{fields.name!r} differs from the file name", repr(stem))
    known = _target_check(targets)
    for table, keys in (
        ("budget.max_requests_for", fields.budget.max_requests_for),
        ("expected", fields.expected),
    ):
        for target in keys:
            if not known(target):
                raise ScenarioError(file, f"{table}.{target}", "unknown target", _allowed(targets))
    for target, text in fields.expected.items():
        check_expected(file, f"expected.{target}", text)
    values = fields.model_dump()
    if fields.cassette is not None:
        values["cassette"] = _cassette_path(fields.cassette, file=file)
    return Scenario(**values, script=script, network=network, path=file)


def load_catalog(directory: str | Path = CATALOG_DIR) -> list[Scenario]:
    """Every ``*.toml`` in ``directory``, sorted by name. Raises on the first bad file."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ScenarioError(str(directory), "(directory)", "no such directory")
    return [load_scenario(p) for p in sorted(directory.glob("*.toml"))]


def select(scenarios: Sequence[Scenario], patterns: Sequence[str]) -> list[Scenario]:
    """Scenarios whose name matches any glob pattern (all when ``patterns`` is empty).

    A pattern that matches nothing raises :class:`ScenarioError` listing the names.
    """
    if not patterns:
        return list(scenarios)
    names = [s.name for s in scenarios]
    chosen: list[Scenario] = []
    for pattern in patterns:
        stem = Path(pattern).stem if pattern.endswith(".toml") else pattern
        hits = [s for s in scenarios if fnmatch.fnmatchcase(s.name, stem)]
        if not hits:
            raise ScenarioError(
                "(arguments)", "scenario", f"{pattern!r} matches no scenario", ", ".join(names)
            )
        chosen.extend(s for s in hits if s not in chosen)
    return chosen


# --------------------------------------------------------------------------- helpers


def _cassette_path(cassette: str, *, file: str) -> str:
    path = Path(file).parent / cassette if not Path(cassette).is_absolute() else Path(cassette)
    if not path.is_file():
        raise ScenarioError(file, "cassette", f"{cassette!r}: no such file", "a .cassette file")
    return str(path)


def _problem(exc: FaultSpecError) -> str:
    """A network error's problem text: a conflict explains itself, a bad value is named."""
    return exc.problem if getattr(exc, "problem", None) else f"{exc.value!r} is not valid"


def _target_check(targets: Iterable[str] | None) -> Any:
    """A predicate for ``expected`` keys: the names given, else any target name
    (registered, entry point, ``package.module:Class``; nothing is imported)."""
    if targets is not None:
        names = frozenset(targets)
        return names.__contains__
    from harness.targets import MUTANT_PREFIX, is_target  # registry only, no client import

    return lambda name: is_target(name) and not name.startswith(MUTANT_PREFIX)


def _allowed(targets: Iterable[str] | None) -> str:
    if targets is not None:
        return ", ".join(sorted(targets))
    from harness.targets import registered_targets

    return ", ".join(sorted(registered_targets())) + ", package.module:Class"
