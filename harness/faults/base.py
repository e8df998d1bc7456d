"""The parts every action shares: errors, phases, the :class:`Action` base and its registry.

An action is one small frozen dataclass in its own module under
:mod:`harness.faults.actions`, registered by name with :func:`register`. Its *data*
(params, allowed phases, backends) and its *server behaviour* (the hooks below) live in
that one module; the fault server only calls the hooks, in the order of one request:

    before_body(site)  the request head is parsed, the body unread   (accept phase)
    upload_stall()     how far to read the request body (stall_upload)
    after_body(site)   the body is read, nothing sent                 (request phase)
    edit_units(...)    the healthy reply's units, edited once per request (payload faults)
    fire(site)         the response reached the rule's phase          (headers, event:N,
                       bytes:N) or a connection-phase action fires
    at_idle(site)      the reply is done; the connection is idle      (idle phase)

``site`` is the server's view of one request at the point where the action fires (the
:class:`Site` protocol): the connection, the timeline, and for body phases the
writer's knobs. This package imports nothing from the rest of ``harness`` but its vocabularies
(``harness.vocab``): the server implements the protocol, the actions only call it.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

__all__ = [
    "ACTIONS",
    "BACKENDS",
    "PHASE_KINDS",
    "Action",
    "FaultSpecError",
    "Phase",
    "Site",
    "check_duration",
    "register",
]

PHASE_KINDS = ("accept", "request", "headers", "event", "bytes", "idle")
BACKENDS = ("server", "relay", "kernel", "toxiproxy")
#: The connection-ending actions' phases (and the default of an action that says none).
CONNECTION_PHASES = PHASE_KINDS


class FaultSpecError(ValueError):
    """A fault, rule or script is invalid. Names the field, the value and what is allowed."""

    def __init__(self, field: str, value: Any, allowed: str) -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        super().__init__(f"{field}: {value!r} is not valid; allowed: {allowed}")


@dataclass(frozen=True)
class Phase:
    """Where in one request's life a fault fires. ``n`` is set for ``event`` and ``bytes``."""

    kind: str
    n: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in PHASE_KINDS:
            raise FaultSpecError("phase", self.kind, phase_allowed())
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
            raise FaultSpecError("phase", text, phase_allowed())
        m = re.fullmatch(r"\s*([a-z_]+)\s*(?::\s*(-?\d+)\s*)?", text)
        if not m:
            raise FaultSpecError("phase", text, phase_allowed())
        kind, n = m.group(1), m.group(2)
        return cls(kind, int(n) if n is not None else None)

    def __str__(self) -> str:
        return self.kind if self.n is None else f"{self.kind}:{self.n}"

    @property
    def in_body(self) -> bool:
        return self.kind in ("event", "bytes")


def phase_allowed() -> str:
    return "accept, request, headers, event:N, bytes:N, idle"


class Site(Protocol):
    """What the server offers an action where it fires (see ``harness.server.sites``).

    ``conn`` is the connection (``close``, ``half_close``, ``reset``, ``wait_gone``,
    ``wait_input``, ``sleep_until``, ``flush``, ``drain``, ``gone``). The body-phase
    methods exist only while a response body is being written.
    """

    phase: str
    api: str
    conn: Any

    def now(self) -> float: ...
    def record(self, kind: str, **detail: Any) -> None: ...
    def ending(self) -> None:
        """The exchange ends here, before its body is read (the request is recorded now)."""

    async def respond(
        self, code: int, body: bytes, content_type: str, headers: Sequence[tuple[str, str]]
    ) -> None: ...
    def error_body(self, code: int, message: str) -> bytes: ...
    # body phases only
    async def end_body(self) -> None: ...
    def keepalive_unit(self, comment: str) -> bytes: ...
    async def write_keepalive(self, data: bytes, scheduled: float) -> None: ...
    def slow_events(self, delay_s: float) -> None: ...
    def slow_bytes(self, delay_s: float) -> None: ...


@dataclass(frozen=True)
class Action:
    """Base of every action. Subclasses declare ``name``, ``phases`` and their params,
    and override the hooks their behaviour needs (the module docstring lists them)."""

    name: ClassVar[str] = ""
    phases: ClassVar[tuple[str, ...]] = CONNECTION_PHASES
    backends: ClassVar[tuple[str, ...]] = ("server", "relay")
    #: True when the response never completes normally after this action fires.
    terminal: ClassVar[bool] = True
    #: True when the action ends the body *cleanly* where it fires (a ``bytes:N`` cut
    #: ends its chunk at N; a Content-Length body declares only what is sent).
    ends_body_cleanly: ClassVar[bool] = False
    #: True for payload edits whose body ends where ``edit_units`` stopped it: the writer
    #: fires the action after the last unit instead of at ``event:N``.
    fires_at_end: ClassVar[bool] = False
    #: How many units past the first one it changes a payload edit must see before it
    #: can decide (``swap_events``: 1); None when it needs the reply plan's structure
    #: (tool-call fragments), so it applies only to the server's own replies, never to
    #: a proxied or recorded stream (``harness.record.edits``).
    edit_lookahead: ClassVar[int | None] = 0
    #: True when the stream goes on after the action but cannot be trusted (a broken
    #: event): an error is the correct outcome, a complete reply is not possible.
    corrupting: ClassVar[bool] = False
    #: True when the stream can end "complete" with its content altered (an event
    #: duplicated, swapped, dropped, a field gone): on every request, no client gets the
    #: reply the provider meant, so detecting it and raising is correct.
    alters_content: ClassVar[bool] = False
    #: Relay-only actions: the relay mode (``harness.relay.modes``) that plays this
    #: action in front of a fault server closing (``fin``) at the rule's phase; the
    #: fault server itself rejects them. None: the fault server plays it.
    relay_mode: ClassVar[str | None] = None
    #: True when the edit of the reply's units is the whole fault (``fire`` does nothing):
    #: an edit that changes nothing did not fire.
    edit_only: ClassVar[bool] = False
    #: True when the action answers the request with an HTTP error status (its ``code``,
    #: and a ``Retry-After`` where it sends one): the contract reads those, and a retry
    #: after such an answer must wait it out.
    answers_status: ClassVar[bool] = False

    def silent_peer(self) -> bool:
        """True when the peer, as the client sees it, goes silent and stays so until the
        client gives up (no FIN, no RST, no bytes): a dead peer the transport itself must
        notice (``harness.contract.dead_peer``)."""
        return False

    def paced_s(self, units: int, body_bytes: int) -> float:
        """Scenario seconds this action alone adds to a healthy reply when it fires with
        ``units`` events and ``body_bytes`` bytes still to send (a delay per event or per
        byte); 0 for an action that sets no pace."""
        return 0.0

    def scaled(self, k: float) -> Action:
        """A copy with every ``*_s`` duration multiplied by ``k`` (None stays None)."""
        changes = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name.endswith("_s") and v is not None:
                changes[f.name] = v * k
        return dataclasses.replace(self, **changes)

    def params(self) -> dict[str, Any]:
        return {f.name: plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    # ------------------------------------------------------------------ server hooks

    async def before_body(self, site: Site) -> bool:
        """Accept phase, body unread. True when the exchange is over (the default
        fires and ends it); False to go on reading the body."""
        site.ending()
        site.record("fault", action=self.name, phase=site.phase)
        await self.fire(site)
        return True

    def upload_stall(self) -> tuple[int, float | None] | None:
        """(after_bytes, duration_s) to stop reading the request body; None: read it all."""
        return None

    async def after_body(self, site: Site) -> bool:
        """Request phase (or an accept-phase action answering after the body). True
        when the exchange is over."""
        site.record("fault", action=self.name, phase=site.phase)
        await self.fire(site)
        return True

    def applies(self, plan: Any) -> bool:
        """Does this payload fault have anything to act on in ``plan`` (the API's
        ``ReplyPlan``)? False: the reply goes out healthy and the fault does not fire."""
        return True

    def edit_units(
        self, units: list[tuple[bytes, bool]], n: int, plan: Any
    ) -> list[tuple[bytes, bool]]:
        """Edit the healthy reply's ``(bytes, counted)`` units once, before writing.
        ``n`` is the rule's ``event:N``; ``plan`` the API's ``ReplyPlan``."""
        return units

    async def fire(self, site: Site) -> None:
        """Do the action at ``site.phase``; return only if the response goes on
        (``terminal = False``) or ended cleanly through ``site.end_body()``."""
        raise FaultSpecError(
            "action", self.name, f"phases of {self.name}: {', '.join(self.phases)}"
        )

    async def at_idle(self, site: Site) -> bool:
        """Idle phase: by default wait for the next request's first bytes and fire
        without answering it (the close that races a pooled request). True when the
        connection goes on serving."""
        await site.conn.wait_input(None)
        if site.conn.gone:
            return False
        site.record("fault", action=self.name, phase="idle")
        await self.fire(site)
        return False


ACTIONS: dict[str, type[Action]] = {}


@dataclass(frozen=True)
class EventEdit(Action):
    """An action on the stream's events (``event:N`` only) after which it goes on."""

    phases: ClassVar[tuple[str, ...]] = ("event",)
    terminal: ClassVar[bool] = False


@dataclass(frozen=True)
class ContentEdit(EventEdit):
    """An event edit whose stream can end "complete" with its content altered; the
    edit is the whole fault."""

    alters_content: ClassVar[bool] = True
    edit_only: ClassVar[bool] = True


def register(cls: type[Action]) -> type[Action]:
    """Class decorator: make ``cls`` usable as ``action = cls.name`` in a script."""
    if not cls.name or cls.name in ACTIONS:
        raise ValueError(f"action name {cls.name!r} is empty or taken")
    ACTIONS[cls.name] = cls
    return cls


def check_duration(name: str, value: Any, *, optional: bool, positive: bool = False) -> None:
    if value is None and optional:
        return
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and (value > 0 if positive else value >= 0)
    if not ok:
        bound = "> 0" if positive else ">= 0"
        more = " or omitted (forever)" if optional else ""
        raise FaultSpecError(name, value, f"a finite number of seconds {bound}{more}")


def check_choice(name: str, value: Any, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise FaultSpecError(name, value, ", ".join(allowed))


def check_count(name: str, value: Any, *, low: int = 0) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise FaultSpecError(name, value, f"a whole number >= {low}")


def plain(value: Any) -> Any:
    """JSON-friendly copy: frozensets become sorted lists, tuples lists."""
    if isinstance(value, frozenset | set):
        return sorted(value)
    if isinstance(value, tuple):
        return [plain(v) for v in value]
    return value
