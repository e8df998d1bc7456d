"""The replaceable pieces of the reference stack, one seam each (mutants replace one).

Defaults are the correct implementations; ``ReferenceClient(..., components=...)``
takes a :class:`Components` with one of them swapped. See the package docstring for
the list of seams.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from harness.client.deadlines import DeadlineState, describe_deadlines
from harness.client.keepalive import keepalive_options
from harness.client.retry import parse_retry_after
from harness.client.streams import StreamReader, require_terminal
from harness.client.tokens import AttemptToken, owns_attempt
from harness.client.transport import KeepaliveBuilder, TransportFactory
from harness.client.watchdog import AsyncWatchdog, Watchdog

__all__ = ["Components"]


@dataclass(frozen=True)
class Components:
    """The replaceable pieces of the stack, one seam each (issue 7 builds mutants by
    replacing exactly one). Defaults are the correct implementations."""

    #: (platform, socket constants, settings) -> socket options.
    keepalive_options: KeepaliveBuilder = keepalive_options
    #: builds OwnedClient objects from a defensive copy of the caller's kwargs; None:
    #: ``TransportFactory(keepalive_builder=keepalive_options)``.
    transport_factory: TransportFactory | None = None
    #: (state, clock, describe) -> sync deadline enforcer (a context manager).
    watchdog_factory: Callable[..., Watchdog] = Watchdog
    #: (state, describe) -> async deadline enforcer.
    async_watchdog_factory: Callable[..., AsyncWatchdog] = AsyncWatchdog
    #: may this attempt still deliver deltas and a result?
    retirement_check: Callable[[AttemptToken], bool] = owns_attempt
    #: raises TruncatedStream unless the stream's terminal marker arrived.
    truncation_guard: Callable[[StreamReader], None] = require_terminal
    #: Retry-After header value -> seconds (or None).
    parse_retry_after: Callable[[str | None], float | None] = parse_retry_after
    #: (state, now) -> text naming the armed deadlines (disabled ones never shown).
    describe_deadlines: Callable[[DeadlineState, float], str] = describe_deadlines

    def transport(self) -> TransportFactory:
        return self.transport_factory or TransportFactory(keepalive_builder=self.keepalive_options)
