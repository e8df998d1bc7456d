"""Contract verdicts: what *any* correct client must do in a scenario, and whether it did.

An expectation says what one target did last time (the regression gate); a contract
says what every client should do, so a client nobody wrote expectations for is still
judged. Three steps, each its own module:

- :mod:`harness.contract.spec`: the optional ``[contract]`` table of a scenario file
  (validated with the scenario, fields left unset take the derived defaults);
- :mod:`harness.contract.derive`: the :class:`Contract` of a scenario, derived from its
  fault script (which faults a retry can get past, Retry-After, non-retryable
  statuses, slow-but-alive streams) with the ``[contract]`` overrides applied;
- :mod:`harness.contract.verdict`: the pure judgement of one case's :class:`Facts`
  against a contract: ``pass`` (the complete reply, every check clean), ``safe`` (a
  clean typed error where the contract allows one, every check clean) or ``fail``,
  with the failed checks named (:data:`CHECKS`, the registry of
  :mod:`harness.contract.checks`: one module per check).

Not here: running the case (``harness.runner``) or the expectation (``harness.outcome``).
"""

from harness.contract.derive import Contract, contract_for
from harness.contract.facts import Facts
from harness.contract.spec import ContractSpec
from harness.contract.verdict import CHECKS, VERDICTS, Verdict, judge

__all__ = [
    "CHECKS",
    "VERDICTS",
    "Contract",
    "ContractSpec",
    "Facts",
    "Verdict",
    "contract_for",
    "judge",
]
