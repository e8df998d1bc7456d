"""The fault space the fuzzer draws from, read from the registries (no second list).

* **Actions** come from :data:`harness.faults.ACTIONS`: each one's phases from its
  ``phases``, its parameters from its dataclass fields, and each parameter's values from
  its type, its default and its own validation (a bad value is tried and the
  :class:`FaultSpecError` it raises names the allowed choices, as the fault reference
  does). The default is always the first value, so a shrunk script keeps the action as
  documented unless another value is what fails.
* **Phases** ``event:N`` range over the *real* counted units of the reply plan the fault
  server builds for that API and reply shape (:func:`harness.server.apis.plan_reply`):
  the role chunk or ``message_start``, tool-argument fragments, item boundaries, the
  terminal event. ``bytes:N`` ranges over the plan's body bytes.
* **Dialects** from :data:`harness.vocab.dialects.DIALECT_APIS`.
* **Network backends** between the target and the server, from their own registries: the
  relay's modes (:data:`harness.relay.modes.MODES`), every Toxiproxy toxic with its
  attributes (:data:`harness.faults.network.toxics.TOXIC_TYPES`: the default first, then
  values of its unit), the kernel dead peer's shapes
  (:data:`harness.faults.network.kernel.SHAPES`), each fired at a point of the reply plan
  (:func:`triggers`). :func:`backends_missing` says which cannot run on this machine.

A few parameters name something of the reply itself (an event type, a JSON field): their
values are read from the plan's units. Parameters past a client's usual caps (a
Retry-After beyond the reference's 60 s cap, an HTTP date) are in :data:`PAST_DEFAULTS`;
durations on either side of the deadlines a target's measured posture shows come from
:func:`durations_past`.

Not here: Hypothesis (``harness.fuzz.strategies``), running anything.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.apis import api_for
from harness.client.settings import DEFAULT_RETRY_AFTER_MAX_S
from harness.faults import ACTIONS, PHASE_KINDS, FaultSpecError
from harness.faults.base import Action
from harness.faults.network.spec import NETWORK_BACKENDS
from harness.faults.network.toxics import TOXIC_TYPES
from harness.replies import DEFAULT_TOOL_SPEC, TOOL_REPLY_SHAPES, tools_for_api
from harness.server.apis import ReplyPlan, plan_reply
from harness.vocab.dialects import DIALECT_APIS
from harness.vocab.statuses import NON_RETRYABLE_STATUSES, RETRYABLE_STATUSES

__all__ = [
    "BACKEND_MIN_TIME_SCALE",
    "DEFAULT_BACKENDS",
    "PAST_DEFAULTS",
    "ActionSpace",
    "PlanShape",
    "ToxicSpace",
    "POSTURE_SIDES",
    "action_spaces",
    "backends_missing",
    "durations_past",
    "dialects_for",
    "plan_shape",
    "toxic_spaces",
    "triggers",
]

#: Values past a client's usual defaults, per (action, parameter): the reference caps a
#: Retry-After at 60 s; an HTTP date (past, or far future) is legal and rarely parsed.
PAST_DEFAULTS: Mapping[tuple[str, str], tuple[Any, ...]] = {
    ("status", "retry_after_s"): (1.0, DEFAULT_RETRY_AFTER_MAX_S * 1.5),
    ("status", "retry_after"): (
        "Wed, 21 Oct 2015 07:28:00 GMT",
        "Fri, 01 Jan 2100 00:00:00 GMT",
    ),
    ("status", "code"): tuple(sorted(RETRYABLE_STATUSES)) + tuple(sorted(NON_RETRYABLE_STATUSES)),
    ("status", "content_type"): ("text/html",),
}
#: Scenario seconds tried for a duration (after its default): short, near a deadline,
#: past every deadline of the reference's catalog watchdog.
_DURATIONS = (0.5, 3.0, 30.0)
#: Where a measured deadline is drawn: just inside it, and just past it.
POSTURE_SIDES = (0.8, 1.25)
_COUNTS = (2, 50)
_BYTES = (1, 4096)
#: Relay-only and kernel actions need a network backend: not drawn for the server.
_BACKEND = "server"
#: Network backends drawn when none is named, in shrink order (the server alone first).
#: ``kernel`` runs in real time (kernel timers do not scale), 5-30 s a case: named only.
DEFAULT_BACKENDS = ("server", "relay", "toxiproxy")
#: The time-scale floor of a drawn case per backend, as the catalog's network scenarios
#: set it: the in-process relay adds 0.1-1 s of latency under load, Toxiproxy's steps
#: add tens of ms, kernel timers are real time.
BACKEND_MIN_TIME_SCALE: Mapping[str, float] = {"relay": 0.5, "toxiproxy": 0.2, "kernel": 1.0}
#: Values per toxic attribute unit, after the attribute's default (ms and us scale with
#: the run's time scale; bytes and KB/s do not).
_TOXIC_VALUES: Mapping[str, tuple[int, ...]] = {
    "ms": (100, 1000, 30000),
    "us": (0, 1000),
    "bytes": (1, 512, 4096),
    "KB/s": (1, 64),
}
#: A representative request per API (the body shapes the plan, not the reply text).
_PROMPT = [{"role": "user", "content": "Answer with a few words."}]


@dataclass(frozen=True)
class ActionSpace:
    """One action as the fuzzer sees it: its phase kinds (in :data:`PHASE_KINDS` order,
    earliest first) and, per parameter, the values to draw (default first)."""

    name: str
    phases: tuple[str, ...]
    params: tuple[tuple[str, tuple[Any, ...]], ...]
    #: parameters whose values come from the reply plan (``"event_type"``, ``"field"``)
    from_plan: Mapping[str, str] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True)
class PlanShape:
    """The counted units of one healthy reply: their kinds, event names and fields."""

    kinds: tuple[str, ...]
    event_types: tuple[str, ...]
    fields: tuple[str, ...]
    body_bytes: int

    @property
    def boundaries(self) -> tuple[int, ...]:
        """``event:N`` values where the kind of unit changes (the first tool-argument
        fragment, after an item's ``done``, before the terminal event), and right after
        the first event (the role chunk, ``response.created``, ``message_start``)."""
        cuts = {0, 1, len(self.kinds)}
        for i in range(1, len(self.kinds)):
            if self.kinds[i] != self.kinds[i - 1]:
                cuts.update((i, i + 1))
        return tuple(sorted(c for c in cuts if c <= len(self.kinds)))

    def describe(self, n: int) -> str:
        """What ``event:n`` is in words: after which unit, before which."""
        before = self.kinds[n - 1] if 0 < n <= len(self.kinds) else "headers"
        after = self.kinds[n] if n < len(self.kinds) else "end"
        return f"after {before}, before {after}"


@functools.cache
def action_spaces(
    backend: str = _BACKEND, durations: tuple[float, ...] = ()
) -> tuple[ActionSpace, ...]:
    """Every registered action the ``backend`` plays, sorted by name; ``durations``
    (scenario seconds, :func:`durations_past`) are drawn for every duration parameter
    after the fixed ones."""
    return tuple(
        _space(cls, durations) for name, cls in sorted(ACTIONS.items()) if backend in cls.backends
    )


def durations_past(posture: Mapping[str, Any], time_scale: float) -> tuple[float, ...]:
    """Scenario seconds on either side of a deadline the target's measured posture shows
    (one target's entry of ``harness posture --json``): the silent call's give-up time
    and the dead-peer bound while waiting, each at :data:`POSTURE_SIDES` of itself. The
    posture is measured in real seconds; a case plays ``seconds x time_scale``. () when
    the posture shows no deadline (the silent call was still waiting at the hold)."""
    found: list[float] = []
    for key in ("gave_up_after_s", "dead_peer_bound_s"):
        value = posture.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            found += [round(value * side / time_scale, 3) for side in POSTURE_SIDES]
    return tuple(dict.fromkeys(found))


@dataclass(frozen=True)
class ToxicSpace:
    """One Toxiproxy toxic type as the fuzzer sees it: per attribute, the values to draw
    (its default first where it has one)."""

    type: str
    attributes: tuple[tuple[str, tuple[int, ...]], ...]


@functools.cache
def toxic_spaces() -> tuple[ToxicSpace, ...]:
    """Every toxic type of :data:`TOXIC_TYPES`, in its order."""
    return tuple(
        ToxicSpace(
            kind,
            tuple(
                (attr, tuple(dict.fromkeys((*(() if d is None else (d,)), *_TOXIC_VALUES[unit]))))
                for attr, (unit, d) in attrs.items()
            ),
        )
        for kind, attrs in TOXIC_TYPES.items()
    )


def triggers(plan: PlanShape) -> tuple[str, ...]:
    """Points of the reply at which a network fault fires (a toxic's or the relay's
    ``at``, the kernel's ``cut_at``), earliest first: before the call, once the request
    was read, once the headers were sent, after the plan's boundary events, at its end."""
    events = tuple(f"event:{n}" for n in plan.boundaries if n >= 1)
    return ("start", "request", "headers", *events, "done:1")


def backends_missing(backends: tuple[str, ...]) -> dict[str, str]:
    """Per backend of ``backends`` that cannot run on this machine, why (the relay and
    the server always can)."""
    from harness.netem.prereq import backend_missing

    unknown = [b for b in backends if b not in NETWORK_BACKENDS]
    if unknown:
        raise ValueError(f"unknown backend {unknown[0]!r}; allowed: {', '.join(NETWORK_BACKENDS)}")
    reasons = {b: backend_missing(b) for b in backends}
    return {b: r for b, r in reasons.items() if r is not None}


def dialects_for(api: str) -> tuple[str | None, ...]:
    """None (the API's reference shape) first, then every dialect that shapes ``api``."""
    return (None, *(name for name, apis in DIALECT_APIS.items() if api in apis))


@functools.cache
def plan_shape(api: str, stream: bool, reply: str, dialect: str | None, events: int) -> PlanShape:
    """The fault server's own healthy plan for this request shape."""
    body: dict[str, Any] = {**api_for(api).request_template(_PROMPT), "stream": stream}
    if reply in TOOL_REPLY_SHAPES:  # as the job offers it: the server calls offered tools
        body["tools"] = tools_for_api([DEFAULT_TOOL_SPEC], api)
    plan = plan_reply(api, body, events=events, shape=reply, dialect=dialect)
    return PlanShape(
        kinds=plan.kinds,
        event_types=_event_types(plan),
        fields=_fields(plan),
        body_bytes=sum(len(u) for u in plan.units),
    )


# --------------------------------------------------------------------------- helpers


def _space(cls: type[Action], durations: tuple[float, ...] = ()) -> ActionSpace:
    phases = tuple(k for k in PHASE_KINDS if k in cls.phases)
    params: list[tuple[str, tuple[Any, ...]]] = []
    from_plan: dict[str, str] = {}
    for f in dataclasses.fields(cls):
        default = _default(f)
        source = _plan_source(cls, f.name)
        if source is not None:
            from_plan[f.name] = source
            params.append((f.name, (default,)))
            continue
        extra = PAST_DEFAULTS.get((cls.name, f.name)) or _values(cls, f, default, durations)
        values = tuple(dict.fromkeys((default, *extra)))
        params.append((f.name, tuple(v for v in values if _valid(cls, f.name, v))))
    return ActionSpace(cls.name, phases, tuple(params), from_plan)


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    raise ValueError(f"action field {f.name} has no default")  # every action has defaults


def _values(
    cls: type[Action], f: dataclasses.Field, default: Any, durations: tuple[float, ...] = ()
) -> tuple[Any, ...]:
    """Values for one field from its type and the action's validation (every float
    field is a duration in seconds)."""
    kind = str(f.type)
    optional = "None" in kind
    if kind.startswith("bool"):
        return (not default,)
    if kind.startswith("float"):
        return (*_DURATIONS, *durations, *((None,) if optional else ()))
    if kind.startswith("int"):
        return _BYTES if "bytes" in f.name else _COUNTS
    if kind.startswith("str"):
        return _choices(cls, f.name)
    return ()  # tuples of headers, free structures: the default only


def _choices(cls: type[Action], name: str) -> tuple[str, ...]:
    """The allowed words a choice field's validation names (``string, json, utf8``);
    () for free text (its message is a sentence, not a list)."""
    try:
        cls(**{name: "\x00not-valid"})
    except FaultSpecError as exc:
        words = [w.strip() for w in exc.allowed.split(",")]
        if len(words) > 1 and all(re.fullmatch(r"[a-z0-9_\-]+", w) for w in words):
            return tuple(words)
    except (TypeError, ValueError):
        pass  # not a string field after all: no choices to read
    return ()


def _valid(cls: type[Action], name: str, value: Any) -> bool:
    try:
        cls(**{name: value})
    except (FaultSpecError, TypeError, ValueError):
        return False
    return True


def _plan_source(cls: type[Action], name: str) -> str | None:
    """Parameters that name a part of the reply: an event's type or a JSON field."""
    if name == "type" and cls.alters_content:
        return "event_type"
    if name == "field" and cls.alters_content:
        return "field"
    return None


def _event_types(plan: ReplyPlan) -> tuple[str, ...]:
    names: list[str] = ["terminal"]
    for unit in plan.units:
        m = re.match(rb"event: ?([^\r\n]+)", unit)
        if m:
            names.append(m.group(1).decode())
        elif unit.strip() == b"data: [DONE]":
            names.append("[DONE]")
    return tuple(dict.fromkeys(names))


def _fields(plan: ReplyPlan) -> tuple[str, ...]:
    found: dict[str, None] = {}
    for unit in plan.units:
        for line in unit.splitlines():
            text = line[5:].strip() if line.startswith(b"data:") else line.strip()
            try:
                doc = json.loads(text)
            except ValueError:
                continue
            _keys(doc, found)
    return tuple(found)


def _keys(doc: Any, found: dict[str, None]) -> None:
    if isinstance(doc, dict):
        for k, v in doc.items():
            if v is not None:
                found.setdefault(k, None)
            _keys(v, found)
    elif isinstance(doc, list):
        for v in doc:
            _keys(v, found)
