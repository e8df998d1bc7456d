"""The harness's own lateness in one case: where the harness, not the client, broke a
scenario's timing promise, so the case says nothing about the client.

Two measurements, each scheduled against actual:

- **pacing**: the fault server stamps every paced event with the loop time it was due
  (``scheduled`` in the ``event_sent`` record, ``harness.server.pacing``); an event
  written later than that by more than the tolerance is a gap the scenario did not
  script (a starved server loop, not a slow provider);
- **starvation**: how long the target child's busiest-waiting thread sat on a CPU run
  queue during the case (``harness.leaks.starved_s``, the kernel's ``schedstat``): a
  client kept from running by the machine's load cannot be blamed for a deadline its
  own code would have met.

The tolerance is the smallest gap the server scheduled between two events (the
scenario's finest timing promise), never below :data:`MIN_TOLERANCE_S`. Where no event was
paced the scenario made no timing promise the server kept a record of, so starvation
voids nothing there (a client that fails a burst of events under load failed on its own). Late by more than that, the client
saw a gap at least twice as long as scripted, or was kept from running for as long as
one: slow-but-alive scenarios keep their deadlines several gaps away, so less than one
gap of the harness's own lateness cannot explain a kill.

:func:`void_reason` applies them only where it matters: to a slow-but-alive or fault-free
scenario (``Scenario.is_alive``) whose case would count against the client (a mismatch
with its expectation, or a failed verdict where it has none). Such a case is **void**:
the runner runs it again (``DEFAULT_VOID_RETRIES``) and every report counts voids apart;
a case that passed under lateness is kept (the client coped) -- save a pass on a wait the
client owed (a ``Retry-After``) that came late enough only by the time the target sat on
a run queue in that very gap: load, not the client, made that wait, so it is void too.

Pure: the timeline is the server's records as dictionaries. Not here: reading the
run queue (``harness.leaks``), rerunning (``harness.runner``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_VOID_RETRIES",
    "LATE_FRACTION",
    "MIN_TOLERANCE_S",
    "Lateness",
    "measure",
    "void_reason",
]

#: Of the smallest scheduled gap: how late the harness may be before a case is void.
LATE_FRACTION = 1.0
#: The floor of the tolerance (real seconds): below it, late is the loop's resolution.
MIN_TOLERANCE_S = 0.05
#: Times the runner runs a void case again before it reports it void.
DEFAULT_VOID_RETRIES = 2


@dataclass(frozen=True, kw_only=True)
class Lateness:
    """What one case measured of the harness's own timing (real seconds)."""

    #: The latest a paced event went out past its scheduled time (None: nothing paced).
    pacing_late_s: float | None
    #: The longest one target thread waited for a CPU during the case (None: unknown).
    starved_s: float | None
    #: How late the harness may be in this case before it broke its promise.
    tolerance_s: float
    #: Whether any event was paced (a timing promise the server recorded).
    paced: bool = True

    def broken(self) -> str:
        """Which promise the harness broke, as evidence ("" when it kept them)."""
        tol = self.tolerance_s
        if self.pacing_late_s is not None and self.pacing_late_s > tol:
            return (
                f"the fault server wrote a paced event {self.pacing_late_s:.3f} s after it was "
                f"due (tolerance {tol:.3f} s)"
            )
        if self.paced and self.starved_s is not None and self.starved_s > tol:
            return (
                f"a target thread waited {self.starved_s:.3f} s for a CPU during the case "
                f"(tolerance {tol:.3f} s): the machine's load, not the client"
            )
        return ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "pacing_late_s": self.pacing_late_s,
            "starved_s": self.starved_s,
            "tolerance_s": self.tolerance_s,
            "paced": self.paced,
        }


def measure(
    timeline: Iterable[Mapping[str, Any]], *, starved_s: float | None, time_scale: float
) -> Lateness:
    """The case's :class:`Lateness` from the server's timeline and the child's starvation."""
    late: float | None = None
    due: dict[Any, float] = {}  # request -> the previous event's scheduled time
    gap: float | None = None
    for e in timeline:
        if e.get("kind") != "event_sent":
            continue
        scheduled = (e.get("detail") or {}).get("scheduled")
        if not isinstance(scheduled, int | float):
            continue
        behind = float(e.get("t", 0.0)) - float(scheduled)
        late = behind if late is None else max(late, behind)
        request = e.get("request")
        if request in due and scheduled > due[request]:
            step = float(scheduled) - due[request]
            gap = step if gap is None else min(gap, step)
        due[request] = float(scheduled)
    finest = gap if gap is not None else max(time_scale, 0.0)
    return Lateness(
        pacing_late_s=late,
        starved_s=starved_s,
        tolerance_s=max(MIN_TOLERANCE_S, LATE_FRACTION * finest),
        paced=gap is not None,
    )


def void_reason(
    lateness: Lateness, *, alive: bool, counts_against: bool, load_made: str = ""
) -> str:
    """Why the case is void ("" when it stands): the harness broke a timing promise of an
    alive scenario in a case that would otherwise count against the client; or the case
    passed a wait the client owed only by the time load kept it from running
    (``load_made``: the check's evidence of that, ``harness.contract.checks.retry_after``)."""
    if not counts_against:
        return load_made
    if not alive:
        return ""
    return lateness.broken()
