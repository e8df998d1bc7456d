"""The verdict of one case: pure judgement of what happened against the scenario's contract.

The checks are the registry's (``harness.contract.checks``, one module per check; a
failed one is named in ``Verdict.failed_checks``, in the registry's order; a check whose
fact is unknown -- no follow-up made, leaks not readable -- is not failed). Their table
is ``docs/contract.md``, written from the registry by ``harness docs``.

``pass``: the complete reply and every check clean. ``safe``: a clean typed error where
the contract allows one (``ideal = "reply_or_error"``), every check clean. ``fail``:
anything else. ``not_run``: the case never ran -- a missing tier (``skipped``) or a
target that does not speak the scenario's API (``not_applicable``), a target that never
got to the wire (``did_not_start``); no check was judged,
so it is neither a pass nor a fail (every report counts it apart, as not run).
``not_exercised``: the case ran but what the scenario tests never happened -- its fault
never fired, or the target made fewer calls than the job asks
(``harness.contract.reach``, the reason in ``Facts.unreached``); no check is judged,
so it is neither a pass nor a fail either (counted apart from both).

Not here: the contract's derivation (``harness.contract.derive``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.contract.check import checks
from harness.contract.derive import Contract
from harness.contract.facts import Facts
from harness.outcome import NOT_RUN as NOT_RUN_KINDS

__all__ = [
    "CHECKS",
    "NOT_EXERCISED",
    "NOT_RUN",
    "VERDICTS",
    "Facts",
    "Verdict",
    "judge",
]

#: The verdict of a case that never ran (no check judged it).
NOT_RUN = "not_run"
#: The verdict of a case that ran but never met its fault (``harness.contract.reach``).
NOT_EXERCISED = "not_exercised"
VERDICTS = ("pass", "safe", "fail", NOT_RUN, NOT_EXERCISED)
#: Every check's name, in the verdict's order (read from the registry).
CHECKS = tuple(c.name for c in checks())


@dataclass(frozen=True)
class Verdict:
    verdict: str
    failed_checks: tuple[str, ...] = field(default=())


def judge(contract: Contract, facts: Facts) -> Verdict:
    """The verdict of ``facts`` under ``contract`` (pure)."""
    kind = facts.outcome.kind
    if kind in NOT_RUN_KINDS:
        return Verdict(NOT_RUN)
    if facts.unreached is not None:
        return Verdict(NOT_EXERCISED)
    failed = [c.name for c in checks() if not c.holds(contract, facts)]
    if failed:
        return Verdict("fail", tuple(failed))
    return Verdict("pass" if kind == "ok" else "safe")
