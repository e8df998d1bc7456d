"""The ``accounting`` check: no more attempts claimed (counted or logged by the client) than
reached the server ("claims 3 attempts, 1 reached the wire": retries the client says it made
and never did).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.contract.check import Check, register

if TYPE_CHECKING:
    from harness.contract.derive import Contract
    from harness.contract.facts import Facts

__all__ = ["Accounting"]


@register
class Accounting(Check):
    name = "accounting"
    rank = 140
    fails_when = (
        "the client claims more model-call attempts (counted or logged) than reached the server's "
        "wire"
    )
    needs = (
        "the client's own attempt count against the fault server's records "
        "(`harness/contract/causes.py` `wire_attempts`): each request to an API route, plus a "
        "connection that brought bytes but never a whole request head (an attempt a fault ate) and a "
        "model-call connection the server closed first (a next attempt may have been written onto "
        "it); endpoint probes (`GET /v1/models`, `/api/tags`, `/props`, `/version` ...) and idle "
        "pre-opened connections are no attempts"
    )
    shown_in = "`attempts` (claimed) against `requests` (seen), in the JSON's evidence"

    def applies(self, contract: Contract, facts: Facts) -> bool:
        return facts.claimed_attempts is not None and facts.wire_attempts is not None

    def holds(self, contract: Contract, facts: Facts) -> bool:
        return (
            facts.claimed_attempts is None
            or facts.wire_attempts is None
            or facts.claimed_attempts <= facts.wire_attempts
        )

    def evidence(self, contract: Contract, facts: Facts) -> str:
        wire = facts.wire_attempts
        return f"claims {facts.claimed_attempts} attempts, {wire} reached the wire" + (
            ": it counts retries it never made" if wire is not None else ""
        )
