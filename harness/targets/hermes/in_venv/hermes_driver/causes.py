"""What hermes caught and what it says it tried, per turn: the causes and claims.

Runs inside hermes-agent's virtualenv (a sibling of ``turns``; stdlib and hermes
only). hermes catches the SDK's exception, logs a summary and hands back text ("API
call failed after 3 retries: Connection error."), so the exception itself never
reaches the caller: :func:`watching` sees it where hermes summarises it
(``AIAgent._summarize_api_error``, called with every error it caught) and in any log
record that carries one, and reads hermes's own claims from its log ("API call failed
after 3 retries", "API call failed (attempt 2/3)"). The runner compares those claims
with the requests its server saw (the ``accounting`` check) and names the chain.

Not here: running the turn (``turns``), judging the claim (``harness.contract``).
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterator
from typing import Any

from .protocol import describe_chain

__all__ = ["TurnWatch", "watching"]

_FAILED_AFTER = re.compile(r"API call failed after (\d+) retries")
_ATTEMPT = re.compile(r"API call failed \(attempt (\d+)/\d+\)")


class TurnWatch(logging.Handler):
    """One turn's last caught exception (its chain) and hermes's claimed attempts."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.caught: list[dict[str, str]] | None = None
        #: Attempts hermes says it made on the call that failed (None: it said nothing).
        self.claimed: int | None = None
        #: The log line the claim comes from.
        self.claim = ""

    def saw(self, exc: BaseException) -> None:
        self.caught = describe_chain(exc)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # a bad %-format in hermes: nothing to read
            return
        after = _FAILED_AFTER.search(message)
        attempt = _ATTEMPT.search(message)
        if after is not None:
            self.claimed, self.claim = int(after.group(1)), after.group(0)
        elif attempt is not None and int(attempt.group(1)) > (self.claimed or 0):
            self.claimed, self.claim = int(attempt.group(1)), attempt.group(0)
        if record.exc_info and record.exc_info[1] is not None:
            self.saw(record.exc_info[1])


@contextlib.contextmanager
def watching(agent_cls: Any) -> Iterator[TurnWatch]:
    """Watch one turn of ``agent_cls`` (``run_agent.AIAgent``); restores both hooks."""
    watch = TurnWatch()
    root = logging.getLogger()
    root.addHandler(watch)
    original = agent_cls.__dict__.get("_summarize_api_error")
    if isinstance(original, staticmethod):
        summarize = original.__func__

        def summarize_and_keep(error: BaseException) -> Any:
            watch.saw(error)
            return summarize(error)

        agent_cls._summarize_api_error = staticmethod(summarize_and_keep)
    try:
        yield watch
    finally:
        root.removeHandler(watch)
        if isinstance(original, staticmethod):
            agent_cls._summarize_api_error = original
