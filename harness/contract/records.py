"""A fault rule's record as a key: the scenario's rule and the request it answered, told
the same (``status@request code=429``), for the checks that pair a status with a retry.

Not here: the facts (``harness.contract.facts``) or the contract (``derive``).
"""

from __future__ import annotations

import re

__all__ = ["status_key"]

_RECORD = re.compile(r"^\s*(\w+)@([^(\s]+)(?:\((.*)\))?\s*$")
_CODE = re.compile(r"(?:^|,\s*)code=(\d+)")


def status_key(record: str | None) -> str | None:
    """A rule's record as the server keeps it on a request
    (``status@request(code=429, retry_after_s=1.0)``), without the durations the server
    scales: ``status@request code=429``. The same for the scenario's rule and for the
    request it answered; None for no record."""
    m = _RECORD.match(record or "")
    if m is None:
        return None
    code = _CODE.search(m.group(3) or "")
    return f"{m.group(1).lower()}@{m.group(2)}" + (f" code={code.group(1)}" if code else "")
