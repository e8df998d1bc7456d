"""Mutant stacks: the reference client with exactly one known bug put back, as targets.

A regression gate is only worth the regressions it catches. Each mutant here replaces
one seam of :class:`harness.client.Components` with a deliberately wrong version that
reintroduces a bug seen in a real agent; ``harness mutants`` runs the default catalog
against every mutant and reports which scenarios *kill* it (its outcome differs from
the scenario's ``reference`` expectation). A mutant no scenario kills is a hole in the
catalog.

=========================  ====================================================  ============
mutant                     the bug                                               seam
=========================  ====================================================  ============
``no-keepalive``           no SO_KEEPALIVE / KEEPIDLE / USER_TIMEOUT on sockets   keepalive_options
``closed-transport-reuse`` the transport is injected into the stored kwargs        transport_factory
                           without a copy; a rebuild reuses the closed one
                           (hermes-agent #10933)
``polling-watchdog``       deadlines checked by a ``join(timeout=0.3)`` loop,      watchdog_factory
                           not a condition wait: late by up to 0.3 s
``no-retirement``          a retired attempt still owns its stream: its late      retirement_check
                           bytes and errors are taken as the attempt's own
``no-truncation-guard``    a stream without its terminal marker is returned as    truncation_guard
                           complete
``retry-after-ignored``    ``Retry-After`` is never parsed; backoff instead        parse_retry_after
``ttfb-shown-disabled``    a disabled first-byte deadline is still described as   describe_deadlines
                           armed (at its default)
=========================  ====================================================  ============

Every stack target here (mutant or not) checks two invariants a scenario's outcome
cannot show by itself, and raises :class:`InvariantViolation` when one breaks:

* every socket the client opened has ``SO_KEEPALIVE`` set *in the kernel*
  (``getsockopt``) when its settings ask for keepalive;
* the deadline description taken at every attempt start never names a deadline the
  attempt's effective settings disable.

``mutant:none`` is the unmutated stack under the same checks: the baseline every kill
is measured against (it must match every ``reference`` expectation).

Target names are ``mutant:<name>``; :func:`load_mutant_target` resolves them (the target
loader in :mod:`harness.targets` calls it through :mod:`harness.mutants`). Importing this
module does not import the client.

Not here: the wrong seams themselves (``harness.targets.mutants.seams``), running the
catalog (``harness.mutants_cli``), the correct stack (``harness.client``).
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from harness.targets.base import CallResult, EventLog, Job, Target
from harness.vocab.deadlines import DEADLINES

__all__ = [
    "BASELINE_TARGET",
    "MUTANTS",
    "MUTANT_TARGETS",
    "DisabledDeadlineShown",
    "InvariantViolation",
    "KeepaliveNotSet",
    "Mutant",
    "StackTarget",
    "load_mutant_target",
    "mutant_components",
]


@dataclass(frozen=True)
class Mutant:
    """One known bug: its name, what it does wrong, where it was seen, the seam it replaces."""

    name: str
    bug: str
    seen_in: str
    seam: str
    #: the catalog scenario written to kill it (``harness mutants`` measures all of them)
    killed_by: str

    @property
    def target(self) -> str:
        return f"mutant:{self.name}"


MUTANTS: dict[str, Mutant] = {
    m.name: m
    for m in (
        Mutant(
            "no-keepalive",
            "sockets carry no TCP keepalive / user timeout options",
            "hermes-agent #10324 (CLOSE-WAIT hang), 0.19.0 dropped the options",
            "keepalive_options",
            "chat_healthy_stream",
        ),
        Mutant(
            "closed-transport-reuse",
            "transport injected into the stored kwargs without a copy; "
            "a rebuild reuses the closed httpx client",
            "hermes-agent #10933",
            "transport_factory",
            "sequential_calls_across_rebuild",
        ),
        Mutant(
            "polling-watchdog",
            "deadlines checked by a join(timeout=0.3) polling loop",
            "hermes-agent interruptible_api_call",
            "watchdog_factory",
            "first_byte_deadline_precision",
        ),
        Mutant(
            "no-retirement",
            "a retired attempt's late bytes and errors are taken as its own",
            "hermes-agent codex retirement token PR",
            "retirement_check",
            "chat_mid_stream_stall",
        ),
        Mutant(
            "no-truncation-guard",
            "a stream without its terminal marker is returned as complete",
            "hermes-agent codex retirement token PR (partial text as finish_reason=stop)",
            "truncation_guard",
            "chat_truncated_no_terminal",
        ),
        Mutant(
            "retry-after-ignored",
            "Retry-After is never parsed; plain backoff instead",
            "hermes-agent #26293",
            "parse_retry_after",
            "retry_after_beyond_hard_ceiling",
        ),
        Mutant(
            "ttfb-shown-disabled",
            "a disabled first-byte deadline is described as armed",
            "hermes-agent wait notice with non-finite deadlines",
            "describe_deadlines",
            "large_prompt_hard_ceiling",
        ),
    )
}

#: The unmutated stack under the same invariant checks: the mutation baseline.
BASELINE_TARGET = "mutant:none"


class InvariantViolation(Exception):
    """The stack broke a rule its outcome alone cannot show (socket options, display)."""


class KeepaliveNotSet(InvariantViolation):
    """A socket the client opened has no SO_KEEPALIVE although the settings ask for it."""


class DisabledDeadlineShown(InvariantViolation):
    """The deadline description names a deadline the effective settings disable."""


class StackTarget(Target):
    """The reference client stack with ``components()`` plugged in, plus the invariant
    checks. Subclasses set ``mutant`` (None: the unmutated baseline)."""

    name = BASELINE_TARGET
    apis = ("chat", "responses", "messages")
    reusable = True
    mutant: ClassVar[str | None] = None

    def prepare(self) -> None:
        # The same warm-up as the reference target: a cold first call must not be what
        # tells a mutant from the baseline.
        from harness.targets.runtime.warmup import warm_up

        warm_up(self._warm_call, apis=("chat", "responses"))

    def _warm_call(self, base_url: str, api: str, stream: bool) -> None:
        job = Job(
            base_url=base_url,
            api=api,
            stream=stream,
            messages=({"role": "user", "content": "warm up"},),
        )
        try:
            self.call(job, EventLog())
        except InvariantViolation:
            pass  # the warm-up only pays start-up costs; invariants are judged on real jobs

    def call(self, job: Job, log: EventLog) -> CallResult:
        from harness.client import ReferenceClient
        from harness.targets.clients.reference import job_calls, job_result, job_settings

        settings = job_settings(job)
        probe = _Probe()
        components = probe.instrument(mutant_components(self.mutant))
        replies: list[Any] = []
        error: BaseException | None = None
        with ReferenceClient(
            job.base_url, job.api_key, settings=settings, components=components
        ) as client:
            try:
                replies = job_calls(client, job, log)
            except Exception as exc:  # re-raised below unless an invariant broke first
                error = exc
            finally:
                probe.collect_sockets(client)
        for text in probe.descriptions:
            log.mark("deadlines", text)
        violation = probe.violation(settings)
        if violation is not None:
            raise violation from error
        if error is not None:
            raise error
        # as the reference target gives it (tool calls as text: without them the baseline
        # once took healthy tool-call replies for truncated ones and missed six scenarios)
        return job_result([r for r, _ in replies], attempts=sum(n for _, n in replies))


def mutant_components(name: str | None) -> Any:
    """The ``Components`` for mutant ``name`` (None: the correct stack)."""
    from harness.client import Components

    if name is None:
        return Components()
    if name not in MUTANTS:
        raise ValueError(f"unknown mutant {name!r}; allowed: {', '.join(MUTANTS)}")
    from harness.targets.mutants.seams import BUILDERS

    return Components(**{MUTANTS[name].seam: BUILDERS[name]()})


# --------------------------------------------------------------------------- the checks


class _Probe:
    """Records what the invariants need: descriptions at attempt start, live sockets."""

    def __init__(self) -> None:
        self.descriptions: list[str] = []
        self.disabled: list[set[str]] = []
        self.keepalive_off: list[str] = []
        self.sockets_seen = 0

    def instrument(self, components: Any) -> Any:
        import dataclasses

        inner = components.watchdog_factory
        probe = self

        def factory(state: Any, **kwargs: Any) -> Any:
            return _DescribingWatchdog(inner(state, **kwargs), probe)

        return dataclasses.replace(components, watchdog_factory=factory)

    def record_attempt(self, watchdog: Any) -> None:
        s = watchdog.state.settings
        self.disabled.append({n for n in DEADLINES if getattr(s, n) is None})
        self.descriptions.append(watchdog.describe_now())

    def collect_sockets(self, client: Any) -> None:
        """Read SO_KEEPALIVE back from the kernel for every socket the live client opened."""
        owned = getattr(client, "_owned", None)
        if owned is None:
            return
        for sock in owned.sockets.live():
            self.sockets_seen += 1
            try:
                on = sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE)
            except OSError:
                continue  # closed under us: nothing to read
            if not on:
                self.keepalive_off.append(repr(sock.getsockname()))

    def violation(self, settings: Any) -> InvariantViolation | None:
        if settings.keepalive and self.keepalive_off:
            return KeepaliveNotSet(
                f"SO_KEEPALIVE is off on {len(self.keepalive_off)} of "
                f"{self.sockets_seen} sockets although settings.keepalive is on"
            )
        from harness.client.deadlines import _LABELS

        for text, disabled in zip(self.descriptions, self.disabled, strict=True):
            shown = [n for n in disabled if _LABELS[n] in text]
            if shown:
                return DisabledDeadlineShown(
                    f"description {text!r} names disabled deadline(s) {shown}"
                )
        return None


class _DescribingWatchdog:
    """Wraps a watchdog: after each attempt starts, records its deadline description."""

    def __init__(self, inner: Any, probe: _Probe) -> None:
        self._inner = inner
        self._probe = probe

    def __enter__(self) -> _DescribingWatchdog:
        self._inner.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._inner.__exit__(*exc)

    def start_attempt(self, abort: Callable[[], None]) -> Any:
        token = self._inner.start_attempt(abort)
        self._probe.record_attempt(self._inner)
        return token

    @contextlib.contextmanager
    def attempt(self, abort: Callable[[], None]) -> Any:
        with self._inner.attempt(abort) as token:
            self._probe.record_attempt(self._inner)
            yield token

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


# --------------------------------------------------------------------------- registry


def _target_class(mutant: str) -> type[StackTarget]:
    cls_name = "".join(part.capitalize() for part in mutant.split("-")) + "Mutant"
    return type(
        cls_name,
        (StackTarget,),
        {
            "name": f"mutant:{mutant}",
            "mutant": mutant,
            "__doc__": MUTANTS[mutant].bug,
            "__module__": __name__,
        },
    )


#: target name -> target class, the baseline included.
MUTANT_TARGETS: dict[str, type[StackTarget]] = {BASELINE_TARGET: StackTarget}

for _mutant in MUTANTS.values():
    _cls = _target_class(_mutant.name)
    globals()[_cls.__name__] = _cls  # importable as module:Class too
    MUTANT_TARGETS[_mutant.target] = _cls


def load_mutant_target(name: str) -> type[StackTarget]:
    """The target class for ``mutant:<name>`` (``mutant:none``: the unmutated baseline)."""
    if name not in MUTANT_TARGETS:
        raise ValueError(f"unknown mutant target {name!r}; allowed: {', '.join(MUTANT_TARGETS)}")
    return MUTANT_TARGETS[name]
