"""The ``[contract]`` table of a scenario file: overrides of the derived contract.

Every field is optional; an unset one takes the default :mod:`harness.contract.derive`
computes from the fault script. Durations are scenario seconds (times the run's
``time_scale``)::

    [contract]
    ideal = "reply"            # reply: only the complete reply passes, an error fails;
                               # reply_or_error: a clean typed error is safe
    bound_s = 30               # the call must end within this (default: ceiling_s)
    max_requests = 4           # LLM requests for the whole case (default: [budget], else
                               # 5 per call)
    retry_after_s = 2.0        # no retry sooner than this after a Retry-After answer
    no_retry = true            # the fault is not retryable (400, 401, content filter):
                               # one request per call
    max_requests_per_window = 5
    window_s = 1.0             # no more than that many requests in any such window
    alive_after = true         # a healthy follow-up call through the same client must work
    no_leaks = true            # nothing left open (threads, sockets) after the call returned
    dead_peer_bound_s = 120    # a silent/dead-peer fault: the transport's posture must notice
                               # a dead peer within this, real seconds (default 120)

Not here: the defaults (``harness.contract.derive``) or the judgement.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["IDEALS", "ContractSpec"]

IDEALS = ("reply", "reply_or_error")


class ContractSpec(BaseModel):
    """The overrides a scenario states; None: derive it."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    ideal: Literal["reply", "reply_or_error"] | None = None
    bound_s: float | None = Field(default=None, gt=0)
    max_requests: int | None = Field(default=None, ge=1)
    retry_after_s: float | None = Field(default=None, gt=0)
    no_retry: bool | None = None
    max_requests_per_window: int | None = Field(default=None, ge=1)
    window_s: float | None = Field(default=None, gt=0)
    alive_after: bool | None = None
    no_leaks: bool | None = None
    dead_peer_bound_s: float | None = Field(default=None, gt=0)
