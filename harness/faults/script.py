"""Faults, rules and scripts: which action fires where, for which requests.

A :class:`FaultScript` is an ordered list of :class:`Rule` objects, each a
:class:`Match` (which requests) plus a :class:`Fault` (an action at a phase); the first
matching rule wins and an unmatched request gets a healthy response. The script also
says how a healthy reply looks (framing, pacing, ``reply`` shape, ``dialect``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.faults.base import (
    ACTIONS,
    Action,
    FaultSpecError,
    Phase,
    check_duration,
    phase_allowed,
    plain,
)
from harness.vocab.dialects import DIALECTS

__all__ = [
    "DIALECTS",
    "FRAMINGS",
    "REPLY_SHAPES",
    "Fault",
    "FaultScript",
    "Match",
    "Rule",
    "fault_from_dict",
    "script_from_dict",
]

FRAMINGS = ("chunked", "content-length", "close")
#: What a healthy reply carries (``harness.server.apis`` documents each per API).
REPLY_SHAPES = ("text", "tool_call", "parallel_tool_calls", "reasoning")


# --------------------------------------------------------------------------- fault


@dataclass(frozen=True)
class Fault:
    """One fault: an action at a phase."""

    phase: Phase
    action: Action

    def __post_init__(self) -> None:
        if isinstance(self.phase, str):
            object.__setattr__(self, "phase", Phase.parse(self.phase))
        if not isinstance(self.action, Action):
            raise FaultSpecError("action", self.action, ", ".join(sorted(ACTIONS)))
        if self.phase.kind not in self.action.phases:
            raise FaultSpecError(
                "phase",
                str(self.phase),
                f"{', '.join(_phase_label(p) for p in self.action.phases)} (for action {self.action.name})",
            )

    @property
    def name(self) -> str:
        return self.action.name

    def scaled(self, k: float) -> Fault:
        return Fault(self.phase, self.action.scaled(k))

    def to_dict(self) -> dict[str, Any]:
        return {"phase": str(self.phase), "action": self.action.name, **self.action.params()}

    def __str__(self) -> str:
        extra = ", ".join(f"{k}={v}" for k, v in self.action.params().items())
        return f"{self.action.name}@{self.phase}" + (f"({extra})" if extra else "")


def _phase_label(kind: str) -> str:
    return f"{kind}:N" if kind in ("event", "bytes") else kind


def fault_from_dict(data: Mapping[str, Any], *, where: str = "fault") -> Fault:
    """Build a :class:`Fault` from ``{"phase": ..., "action": ..., **params}``.

    ``where`` prefixes field names in errors (``rules[0].fault.delay_s``).
    """
    if not isinstance(data, Mapping):
        raise FaultSpecError(where, data, "a table with phase, action and its params")
    data = dict(data)
    action_name = data.pop("action", None)
    phase = data.pop("phase", None)
    if action_name not in ACTIONS:
        raise FaultSpecError(f"{where}.action", action_name, ", ".join(sorted(ACTIONS)))
    cls = ACTIONS[action_name]
    allowed_params = [f.name for f in dataclasses.fields(cls)]
    for key in data:
        if key not in allowed_params:
            raise FaultSpecError(
                f"{where}.{key}",
                data[key],
                f"params of {action_name}: {', '.join(allowed_params) or 'none'}",
            )
    if phase is None:
        phase = cls.phases[0] if len(cls.phases) == 1 else None
        if phase is None:
            raise FaultSpecError(f"{where}.phase", None, phase_allowed())
    try:
        if "headers" in data and isinstance(data["headers"], Mapping):
            data["headers"] = tuple((str(k), str(v)) for k, v in data["headers"].items())
        action = cls(**data)
        return Fault(Phase.parse(phase), action)
    except FaultSpecError as exc:
        raise FaultSpecError(f"{where}.{exc.field}", exc.value, exc.allowed) from None
    except TypeError as exc:  # wrong param types the dataclass could not take
        raise FaultSpecError(
            where, data, f"params of {action_name}: {', '.join(allowed_params)}"
        ) from exc


# --------------------------------------------------------------------------- scripts


@dataclass(frozen=True)
class Match:
    """Which requests a rule applies to. Every set field must match; unset matches all.

    ``attempts`` counts matching-path requests since the script was loaded (1-based);
    ``connections`` counts accepted connections (1-based); ``request_on_connection``
    is the index of the request on its connection (2 = the first reuse of a pooled one).
    """

    path: str | None = None
    attempts: frozenset[int] | None = None
    connections: frozenset[int] | None = None
    request_on_connection: frozenset[int] | None = None

    def __post_init__(self) -> None:
        if self.path is not None and (
            not isinstance(self.path, str) or not self.path.startswith("/")
        ):
            raise FaultSpecError(
                "match.path", self.path, "an absolute path such as /v1/chat/completions"
            )
        for name in ("attempts", "connections", "request_on_connection"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, int) and not isinstance(value, bool):
                value = [value]
            try:
                items = frozenset(value)
            except TypeError:
                raise FaultSpecError(
                    f"match.{name}", value, "a whole number >= 1 or a list of them"
                ) from None
            if not items or not all(
                isinstance(i, int) and not isinstance(i, bool) and i >= 1 for i in items
            ):
                raise FaultSpecError(
                    f"match.{name}", value, "a whole number >= 1 or a list of them"
                )
            object.__setattr__(self, name, items)

    def matches(
        self, *, path: str, attempt: int, connection: int, request_on_connection: int
    ) -> bool:
        return (
            (self.path is None or self.path == path)
            and (self.attempts is None or attempt in self.attempts)
            and (self.connections is None or connection in self.connections)
            and (
                self.request_on_connection is None
                or request_on_connection in self.request_on_connection
            )
        )

    def to_dict(self) -> dict[str, Any]:
        return {k: plain(v) for k, v in dataclasses.asdict(self).items() if v is not None}


@dataclass(frozen=True)
class Rule:
    """A match plus the fault to inject on matching requests."""

    fault: Fault
    match: Match = field(default_factory=Match)

    def to_dict(self) -> dict[str, Any]:
        return {"match": self.match.to_dict(), "fault": self.fault.to_dict()}


@dataclass(frozen=True)
class FaultScript:
    """Everything the server needs to answer one scenario's requests.

    ``framing`` is how response bodies are delimited; ``events`` is how many content
    deltas a healthy streamed reply has; ``event_interval_s`` paces a healthy stream;
    ``keepalive_comment_s`` sends a ``: keepalive`` comment on that period while
    pacing (a healthy server with keep-alive comments); ``idle_timeout_s`` closes a
    kept-alive connection left idle (None: never). ``content``, when set, replaces the
    seeded reply words (split on spaces into deltas): the live tier's dry run uses it to
    hand back an error sentinel inside an otherwise successful reply.

    ``reply`` is what a healthy reply carries: ``text``; ``tool_call`` (one function
    call whose arguments stream in ``events`` fragments); ``parallel_tool_calls`` (two);
    ``reasoning`` (``reasoning_events`` reasoning deltas, then the text); ``tool`` names
    the offered tool a tool call names (default: the first the request offers). ``dialect``
    shapes the healthy bytes like one real server (None: the API's reference shape).
    ``answer_tool`` names the tool through which the model gives its final answer where a
    request offers it (an agent framework's own, e.g. smolagents' ``final_answer``): the
    text a reply would carry goes as one call of it instead, its first parameter the text.
    """

    rules: tuple[Rule, ...] = ()
    framing: str = "chunked"
    events: int = 8
    event_interval_s: float = 0.0
    first_byte_delay_s: float = 0.0
    keepalive_comment_s: float | None = None
    idle_timeout_s: float | None = None
    content: str | None = None
    reply: str = "text"
    reasoning_events: int = 4
    dialect: str | None = None
    #: The offered tool a tool-call reply names (None, or not offered: the first offered).
    tool: str | None = None
    #: The offered tool the final answer is a call of (None, or not offered: text).
    answer_tool: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "rules", tuple(self.rules))
        if self.reply not in REPLY_SHAPES:
            raise FaultSpecError("reply", self.reply, ", ".join(REPLY_SHAPES))
        if self.dialect is not None and self.dialect not in DIALECTS:
            raise FaultSpecError("dialect", self.dialect, ", ".join(DIALECTS) + " or omitted")
        n = self.reasoning_events
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 10_000:
            raise FaultSpecError("reasoning_events", n, "a whole number 1..10000")
        for knob in ("tool", "answer_tool"):
            value = getattr(self, knob)
            if value is not None and (not isinstance(value, str) or not value):
                raise FaultSpecError(knob, value, "a tool's name or omitted")
        if self.content is not None and (not isinstance(self.content, str) or not self.content):
            raise FaultSpecError("content", self.content, "a non-empty string or omitted")
        if self.framing not in FRAMINGS:
            raise FaultSpecError("framing", self.framing, ", ".join(FRAMINGS))
        if (
            not isinstance(self.events, int)
            or isinstance(self.events, bool)
            or not 1 <= self.events <= 100_000
        ):
            raise FaultSpecError("events", self.events, "a whole number 1..100000")
        check_duration("event_interval_s", self.event_interval_s, optional=False)
        check_duration("first_byte_delay_s", self.first_byte_delay_s, optional=False)
        check_duration(
            "keepalive_comment_s", self.keepalive_comment_s, optional=True, positive=True
        )
        check_duration("idle_timeout_s", self.idle_timeout_s, optional=True)
        for i, rule in enumerate(self.rules):
            if not isinstance(rule, Rule):
                raise FaultSpecError(f"rules[{i}]", rule, "a Rule")

    def rule_for(
        self, *, path: str, attempt: int, connection: int, request_on_connection: int
    ) -> Rule | None:
        """The first rule whose match accepts this request, or None for a healthy reply."""
        for rule in self.rules:
            if rule.match.matches(
                path=path,
                attempt=attempt,
                connection=connection,
                request_on_connection=request_on_connection,
            ):
                return rule
        return None

    def scaled(self, k: float) -> FaultScript:
        """A copy with every duration (script and faults) multiplied by ``time_scale`` ``k``."""
        check_duration("time_scale", k, optional=False, positive=True)
        return dataclasses.replace(
            self,
            rules=tuple(Rule(r.fault.scaled(k), r.match) for r in self.rules),
            event_interval_s=self.event_interval_s * k,
            first_byte_delay_s=self.first_byte_delay_s * k,
            keepalive_comment_s=None
            if self.keepalive_comment_s is None
            else self.keepalive_comment_s * k,
            idle_timeout_s=None if self.idle_timeout_s is None else self.idle_timeout_s * k,
        )

    def to_dict(self) -> dict[str, Any]:
        d = {k: plain(v) for k, v in dataclasses.asdict(self).items() if k != "rules"}
        d["rules"] = [r.to_dict() for r in self.rules]
        return {k: v for k, v in d.items() if v is not None}


def script_from_dict(data: Mapping[str, Any] | None, *, where: str = "script") -> FaultScript:
    """Build a :class:`FaultScript` from plain data (TOML table, control-API JSON)."""
    if data is None:
        return FaultScript()
    if not isinstance(data, Mapping):
        raise FaultSpecError(where, data, "a table")
    data = dict(data)
    allowed = [f.name for f in dataclasses.fields(FaultScript)]
    for key in data:
        if key not in allowed:
            raise FaultSpecError(f"{where}.{key}", data[key], ", ".join(allowed))
    rules_in = data.pop("rules", ()) or ()
    if not isinstance(rules_in, Iterable) or isinstance(rules_in, str | Mapping):
        raise FaultSpecError(f"{where}.rules", rules_in, "a list of rules")
    rules = [_rule_from_dict(r, where=f"{where}.rules[{i}]") for i, r in enumerate(rules_in)]
    try:
        return FaultScript(rules=tuple(rules), **data)
    except FaultSpecError as exc:
        raise FaultSpecError(f"{where}.{exc.field}", exc.value, exc.allowed) from None
    except TypeError as exc:
        raise FaultSpecError(where, data, ", ".join(allowed)) from exc


def _rule_from_dict(data: Any, *, where: str) -> Rule:
    if not isinstance(data, Mapping):
        raise FaultSpecError(where, data, "a table with match and fault")
    extra = set(data) - {"match", "fault"}
    if extra:
        raise FaultSpecError(f"{where}.{sorted(extra)[0]}", data[sorted(extra)[0]], "match, fault")
    match_in = data.get("match") or {}
    if not isinstance(match_in, Mapping):
        raise FaultSpecError(f"{where}.match", match_in, "a table")
    allowed = [f.name for f in dataclasses.fields(Match)]
    for key in match_in:
        if key not in allowed:
            raise FaultSpecError(f"{where}.match.{key}", match_in[key], ", ".join(allowed))
    try:
        match = Match(**match_in)
    except FaultSpecError as exc:
        raise FaultSpecError(f"{where}.{exc.field}", exc.value, exc.allowed) from None
    return Rule(fault_from_dict(data.get("fault"), where=f"{where}.fault"), match)
