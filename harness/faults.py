"""The fault model: what goes wrong, where in a response, and for which requests.

A fault is ``(phase, action, params)``. The phase says *where* in the life of one
request it fires; the action says *what* the server (or relay, or kernel backend) does
there. A :class:`FaultScript` is an ordered list of :class:`Rule` objects, each a
:class:`Match` (which requests) plus a fault; the first matching rule wins and an
unmatched request gets a healthy response.

Phases::

    accept       connection accepted, request not read yet
    request      request read, nothing sent
    headers      status line and headers sent, no body
    event:N      after N SSE events of the body were sent (N >= 0)
    bytes:N      after N body bytes were sent (may split a chunk or a UTF-8 sequence)
    idle         between requests on a kept-alive connection

Actions (each a frozen dataclass below, registered by name in ``ACTIONS``)::

    hang          hold the socket open and silent; ``duration_s`` (None: until the peer goes)
    fin           close the connection (FIN) without ending the response
    half_close    shutdown the write side; keep reading until the peer closes
    rst           abort the connection (SO_LINGER 0 -> RST)
    drip          send SSE comment lines every ``interval_s``; no content, ever
    slow          delay every following event (``per="event"``) or byte by ``delay_s``
    status        answer with an HTTP error ``code``, optional ``retry_after_s``/``body``
    malformed     send one data line of broken JSON, then continue the stream
    truncate      end the body cleanly but without the terminal marker
    blackhole     drop packets in the kernel (kernel backend only)
    close_idle    close a kept-alive connection after ``after_s`` idle
    stall_upload  stop reading the request body after ``after_bytes``
    swallow_close relay only: the upstream closed, the client leg is kept open and silent

All durations are in *scenario seconds*: ``Fault.scaled(k)`` multiplies every one of
them by one ``time_scale`` factor. Invalid input raises :class:`FaultSpecError` naming
the field, the value and the allowed values.

This module is pure data: it does no I/O and imports nothing from the rest of the
package, so the server, the relay, the kernel backend and the scenario loader all
share it.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

__all__ = [
    "ACTIONS",
    "FRAMINGS",
    "PHASE_KINDS",
    "Action",
    "Fault",
    "FaultScript",
    "FaultSpecError",
    "Match",
    "Phase",
    "Rule",
    "fault_from_dict",
    "script_from_dict",
]

PHASE_KINDS = ("accept", "request", "headers", "event", "bytes", "idle")
FRAMINGS = ("chunked", "content-length", "close")
BACKENDS = ("server", "relay", "kernel", "toxiproxy")


class FaultSpecError(ValueError):
    """A fault, rule or script is invalid. Names the field, the value and what is allowed."""

    def __init__(self, field: str, value: Any, allowed: str) -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        super().__init__(f"{field}: {value!r} is not valid; allowed: {allowed}")


# --------------------------------------------------------------------------- phases


@dataclass(frozen=True)
class Phase:
    """Where in one request's life a fault fires. ``n`` is set for ``event`` and ``bytes``."""

    kind: str
    n: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in PHASE_KINDS:
            raise FaultSpecError("phase", self.kind, _phase_allowed())
        if self.kind in ("event", "bytes"):
            if not isinstance(self.n, int) or isinstance(self.n, bool) or self.n < 0:
                raise FaultSpecError("phase", f"{self.kind}:{self.n}", "N a whole number >= 0")
        elif self.n is not None:
            raise FaultSpecError("phase", f"{self.kind}:{self.n}", f"{self.kind} takes no :N")

    @classmethod
    def parse(cls, text: str | Phase) -> Phase:
        """Parse ``"event:3"``, ``"bytes:120"``, ``"headers"``..."""
        if isinstance(text, Phase):
            return text
        if not isinstance(text, str):
            raise FaultSpecError("phase", text, _phase_allowed())
        m = re.fullmatch(r"\s*([a-z_]+)\s*(?::\s*(-?\d+)\s*)?", text)
        if not m:
            raise FaultSpecError("phase", text, _phase_allowed())
        kind, n = m.group(1), m.group(2)
        return cls(kind, int(n) if n is not None else None)

    def __str__(self) -> str:
        return self.kind if self.n is None else f"{self.kind}:{self.n}"

    @property
    def in_body(self) -> bool:
        return self.kind in ("event", "bytes")


def _phase_allowed() -> str:
    return "accept, request, headers, event:N, bytes:N, idle"


# --------------------------------------------------------------------------- actions


@dataclass(frozen=True)
class Action:
    """Base of every action. Subclasses declare ``name``, ``phases`` and their params."""

    name: ClassVar[str] = ""
    phases: ClassVar[tuple[str, ...]] = PHASE_KINDS
    backends: ClassVar[tuple[str, ...]] = ("server", "relay")
    #: True when the response never completes normally after this action fires.
    terminal: ClassVar[bool] = True

    def scaled(self, k: float) -> Action:
        """A copy with every ``*_s`` duration multiplied by ``k`` (None stays None)."""
        changes = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name.endswith("_s") and v is not None:
                changes[f.name] = v * k
        return dataclasses.replace(self, **changes)

    def params(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}


ACTIONS: dict[str, type[Action]] = {}


def _register(cls: type[Action]) -> type[Action]:
    ACTIONS[cls.name] = cls
    return cls


def _check_duration(name: str, value: Any, *, optional: bool, positive: bool = False) -> None:
    if value is None and optional:
        return
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and (value > 0 if positive else value >= 0)
    if not ok:
        bound = "> 0" if positive else ">= 0"
        more = " or omitted (forever)" if optional else ""
        raise FaultSpecError(name, value, f"a finite number of seconds {bound}{more}")


@_register
@dataclass(frozen=True)
class Hang(Action):
    """Hold the socket open and silent for ``duration_s`` (None: until the peer closes)."""

    name: ClassVar[str] = "hang"
    duration_s: float | None = None

    def __post_init__(self) -> None:
        _check_duration("duration_s", self.duration_s, optional=True)


@_register
@dataclass(frozen=True)
class Fin(Action):
    """Close the connection with a FIN, wherever the response is."""

    name: ClassVar[str] = "fin"


@_register
@dataclass(frozen=True)
class HalfClose(Action):
    """Shut down the write side (FIN) but keep reading until the peer closes."""

    name: ClassVar[str] = "half_close"


@_register
@dataclass(frozen=True)
class Rst(Action):
    """Abort the connection with SO_LINGER 0, so the peer sees ECONNRESET."""

    name: ClassVar[str] = "rst"


@_register
@dataclass(frozen=True)
class Drip(Action):
    """Send ``: comment`` lines every ``interval_s`` and never any content."""

    name: ClassVar[str] = "drip"
    phases: ClassVar[tuple[str, ...]] = ("headers", "event", "bytes")
    interval_s: float = 1.0
    duration_s: float | None = None
    comment: str = "keepalive"

    def __post_init__(self) -> None:
        _check_duration("interval_s", self.interval_s, optional=False, positive=True)
        _check_duration("duration_s", self.duration_s, optional=True)
        if not isinstance(self.comment, str) or "\n" in self.comment or "\r" in self.comment:
            raise FaultSpecError("comment", self.comment, "one line of text")


@_register
@dataclass(frozen=True)
class Slow(Action):
    """Delay every following event (``per="event"``) or byte (``per="byte"``) by ``delay_s``.

    Not terminal: the response completes, just late.
    """

    name: ClassVar[str] = "slow"
    phases: ClassVar[tuple[str, ...]] = ("headers", "event", "bytes")
    terminal: ClassVar[bool] = False
    delay_s: float = 0.1
    per: str = "event"

    def __post_init__(self) -> None:
        _check_duration("delay_s", self.delay_s, optional=False)
        if self.per not in ("event", "byte"):
            raise FaultSpecError("per", self.per, "event, byte")


@_register
@dataclass(frozen=True)
class Status(Action):
    """Answer with HTTP ``code`` and an OpenAI-shaped error body (or ``body`` verbatim).

    ``retry_after_s`` sets a ``Retry-After`` header in whole seconds; ``retry_after``
    sets it verbatim (e.g. an HTTP date); ``content_type`` lets a 502 be an HTML page.
    """

    name: ClassVar[str] = "status"
    phases: ClassVar[tuple[str, ...]] = ("accept", "request")
    code: int = 500
    message: str = "injected error"
    body: str | None = None
    content_type: str = "application/json"
    retry_after_s: float | None = None
    retry_after: str | None = None
    headers: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.code, int) or isinstance(self.code, bool) or not 400 <= self.code <= 599:
            raise FaultSpecError("code", self.code, "an HTTP error status 400..599")
        _check_duration("retry_after_s", self.retry_after_s, optional=True)
        if self.retry_after_s is not None and self.retry_after is not None:
            raise FaultSpecError("retry_after", self.retry_after, "only one of retry_after_s, retry_after")
        if isinstance(self.headers, Mapping):
            object.__setattr__(self, "headers", tuple((str(k), str(v)) for k, v in self.headers.items()))
        for pair in self.headers:
            if not (isinstance(pair, tuple | list) and len(pair) == 2):
                raise FaultSpecError("headers", self.headers, "a table of header name = value")
        # lists of pairs (from to_dict / JSON) become the same tuples a table gives
        object.__setattr__(self, "headers", tuple((str(k), str(v)) for k, v in self.headers))


@_register
@dataclass(frozen=True)
class Malformed(Action):
    """Send one ``data:`` line of broken JSON at this point, then continue the stream."""

    name: ClassVar[str] = "malformed"
    phases: ClassVar[tuple[str, ...]] = ("event",)
    terminal: ClassVar[bool] = False
    payload: str = '{"id": "chatcmpl-broken", "choices": [{"delta": {"content": "x"'

    def __post_init__(self) -> None:
        if not isinstance(self.payload, str) or "\n" in self.payload:
            raise FaultSpecError("payload", self.payload, "one line of text")


@_register
@dataclass(frozen=True)
class Truncate(Action):
    """End the body cleanly here, without finish_reason / ``[DONE]`` / ``response.completed``."""

    name: ClassVar[str] = "truncate"
    phases: ClassVar[tuple[str, ...]] = ("headers", "event", "bytes")


@_register
@dataclass(frozen=True)
class Blackhole(Action):
    """Drop every packet in the kernel: no FIN, no RST. Kernel backend only."""

    name: ClassVar[str] = "blackhole"
    backends: ClassVar[tuple[str, ...]] = ("kernel",)


@_register
@dataclass(frozen=True)
class CloseIdle(Action):
    """Close a kept-alive connection after ``after_s`` with no request on it."""

    name: ClassVar[str] = "close_idle"
    phases: ClassVar[tuple[str, ...]] = ("idle",)
    after_s: float = 0.0
    rst: bool = False

    def __post_init__(self) -> None:
        _check_duration("after_s", self.after_s, optional=False)
        if not isinstance(self.rst, bool):
            raise FaultSpecError("rst", self.rst, "true, false")


@_register
@dataclass(frozen=True)
class StallUpload(Action):
    """Stop reading the request body after ``after_bytes``, so the client blocks in send."""

    name: ClassVar[str] = "stall_upload"
    phases: ClassVar[tuple[str, ...]] = ("accept",)
    after_bytes: int = 0
    duration_s: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.after_bytes, int) or isinstance(self.after_bytes, bool) or self.after_bytes < 0:
            raise FaultSpecError("after_bytes", self.after_bytes, "a whole number >= 0")
        _check_duration("duration_s", self.duration_s, optional=True)


@_register
@dataclass(frozen=True)
class SwallowClose(Action):
    """Relay only: the upstream closed; keep the client leg open and silent.

    The fault server rejects it. In a scenario (``harness.scenario``) a rule with this
    action is played by the server closing (``fin``) at the rule's phase behind a relay
    in ``swallow_close`` mode (``harness.relay``): the same as writing both by hand.
    """

    name: ClassVar[str] = "swallow_close"
    backends: ClassVar[tuple[str, ...]] = ("relay",)


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
                f"{where}.{key}", data[key], f"params of {action_name}: {', '.join(allowed_params) or 'none'}"
            )
    if phase is None:
        phase = cls.phases[0] if len(cls.phases) == 1 else None
        if phase is None:
            raise FaultSpecError(f"{where}.phase", None, _phase_allowed())
    try:
        if "headers" in data and isinstance(data["headers"], Mapping):
            data["headers"] = tuple((str(k), str(v)) for k, v in data["headers"].items())
        action = cls(**data)
        return Fault(Phase.parse(phase), action)
    except FaultSpecError as exc:
        raise FaultSpecError(f"{where}.{exc.field}", exc.value, exc.allowed) from None
    except TypeError as exc:  # wrong param types the dataclass could not take
        raise FaultSpecError(where, data, f"params of {action_name}: {', '.join(allowed_params)}") from exc


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
        if self.path is not None and (not isinstance(self.path, str) or not self.path.startswith("/")):
            raise FaultSpecError("match.path", self.path, "an absolute path such as /v1/chat/completions")
        for name in ("attempts", "connections", "request_on_connection"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, int) and not isinstance(value, bool):
                value = [value]
            try:
                items = frozenset(value)
            except TypeError:
                raise FaultSpecError(f"match.{name}", value, "a whole number >= 1 or a list of them") from None
            if not items or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 1 for i in items):
                raise FaultSpecError(f"match.{name}", value, "a whole number >= 1 or a list of them")
            object.__setattr__(self, name, items)

    def matches(self, *, path: str, attempt: int, connection: int, request_on_connection: int) -> bool:
        return (
            (self.path is None or self.path == path)
            and (self.attempts is None or attempt in self.attempts)
            and (self.connections is None or connection in self.connections)
            and (self.request_on_connection is None or request_on_connection in self.request_on_connection)
        )

    def to_dict(self) -> dict[str, Any]:
        return {k: _plain(v) for k, v in dataclasses.asdict(self).items() if v is not None}


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
    """

    rules: tuple[Rule, ...] = ()
    framing: str = "chunked"
    events: int = 8
    event_interval_s: float = 0.0
    first_byte_delay_s: float = 0.0
    keepalive_comment_s: float | None = None
    idle_timeout_s: float | None = None
    content: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "rules", tuple(self.rules))
        if self.content is not None and (not isinstance(self.content, str) or not self.content):
            raise FaultSpecError("content", self.content, "a non-empty string or omitted")
        if self.framing not in FRAMINGS:
            raise FaultSpecError("framing", self.framing, ", ".join(FRAMINGS))
        if not isinstance(self.events, int) or isinstance(self.events, bool) or not 1 <= self.events <= 100_000:
            raise FaultSpecError("events", self.events, "a whole number 1..100000")
        _check_duration("event_interval_s", self.event_interval_s, optional=False)
        _check_duration("first_byte_delay_s", self.first_byte_delay_s, optional=False)
        _check_duration("keepalive_comment_s", self.keepalive_comment_s, optional=True, positive=True)
        _check_duration("idle_timeout_s", self.idle_timeout_s, optional=True)
        for i, rule in enumerate(self.rules):
            if not isinstance(rule, Rule):
                raise FaultSpecError(f"rules[{i}]", rule, "a Rule")

    def rule_for(
        self, *, path: str, attempt: int, connection: int, request_on_connection: int
    ) -> Rule | None:
        """The first rule whose match accepts this request, or None for a healthy reply."""
        for rule in self.rules:
            if rule.match.matches(
                path=path, attempt=attempt, connection=connection, request_on_connection=request_on_connection
            ):
                return rule
        return None

    def scaled(self, k: float) -> FaultScript:
        """A copy with every duration (script and faults) multiplied by ``time_scale`` ``k``."""
        _check_duration("time_scale", k, optional=False, positive=True)
        return dataclasses.replace(
            self,
            rules=tuple(Rule(r.fault.scaled(k), r.match) for r in self.rules),
            event_interval_s=self.event_interval_s * k,
            first_byte_delay_s=self.first_byte_delay_s * k,
            keepalive_comment_s=None if self.keepalive_comment_s is None else self.keepalive_comment_s * k,
            idle_timeout_s=None if self.idle_timeout_s is None else self.idle_timeout_s * k,
        )

    def to_dict(self) -> dict[str, Any]:
        d = {k: _plain(v) for k, v in dataclasses.asdict(self).items() if k != "rules"}
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


def _plain(value: Any) -> Any:
    """JSON-friendly copy: frozensets become sorted lists, tuples lists."""
    if isinstance(value, frozenset | set):
        return sorted(value)
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value
