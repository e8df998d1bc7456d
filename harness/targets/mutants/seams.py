"""The wrong seams of the mutant stacks: one builder per mutant, each returning the
single ``harness.client.Components`` field that puts its bug back.

They are wrong on purpose: do not fix them. The table of mutants (name, bug, seam,
designated killer) and the invariant checks are in :mod:`harness.targets.mutants`;
importing this module imports the client lazily, inside the builders.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["BUILDERS", "POLL_INTERVAL_S"]

#: The deliberately coarse poll of the ``polling-watchdog`` mutant (the seed's value).
POLL_INTERVAL_S = 0.3


# --------------------------------------------------------------------------- the bugs
# Each builder returns the one wrong seam. They are wrong on purpose: do not fix them.


def _no_keepalive() -> Callable[..., list[Any]]:
    def keepalive_options(platform: str, constants: Mapping[str, int], settings: Any) -> list[Any]:
        return []  # BUG: the socket keeps the OS defaults (no keepalive, no user timeout)

    return keepalive_options


def _closed_transport_reuse() -> Any:
    from harness.client.compat import httpx, openai
    from harness.client.transport import OwnedClient, SocketRegistry, TransportFactory

    class SharedTransportFactory(TransportFactory):
        """#10933: the keepalive transport is injected into the caller's kwargs in place."""

        def build(
            self,
            *,
            base_url: str,
            api_key: str,
            sdk_kwargs: Any,
            settings: Any,
            is_async: bool = False,  # mutant stacks run the sync client only
        ) -> Any:
            options = self.socket_options(settings)
            if "http_client" not in sdk_kwargs:
                # BUG: no defensive copy -- this lands in the client's stored kwargs, so
                # every later build reuses it, even after the first owner closed it.
                registry = SocketRegistry()
                sdk_kwargs["http_client"] = httpx.Client(
                    transport=httpx.HTTPTransport(socket_options=options),
                    event_hooks={"request": [registry.install]},
                    trust_env=False,
                )
                sdk_kwargs["_harness_registry"] = registry
            http = sdk_kwargs["http_client"]
            timeout = httpx.Timeout(
                connect=settings.connect_timeout_s,
                read=settings.read_timeout_s,
                write=settings.read_timeout_s,
                pool=settings.connect_timeout_s,
            )
            sdk = openai.OpenAI(
                base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout, http_client=http
            )
            return OwnedClient(sdk, http, sdk_kwargs["_harness_registry"], options)

    return SharedTransportFactory()


def _polling_watchdog() -> Callable[..., Any]:
    from harness.client.watchdog import Watchdog

    class PollingWatchdog(Watchdog):
        """MUTANT ONLY: the polling loop this project forbids everywhere else.

        It wakes every ``POLL_INTERVAL_S`` via ``join(timeout=...)`` on a helper thread
        and checks the deadlines then, the way the seed's ``interruptible_api_call``
        does: a deadline fires up to one poll interval late.
        """

        def _run(self) -> None:
            idle = threading.Thread(
                target=self._idle_until_stopped, name="mutant-poll-idle", daemon=True
            )
            idle.start()
            while idle.is_alive():
                idle.join(timeout=POLL_INTERVAL_S)  # deliberate polling (the bug under test)
                with self._cond:
                    if self._stopped:
                        return
                    if self._token is None:
                        continue
                    now = self.clock.now()
                    deadline = self.state.expired(now)
                    if deadline is not None:
                        self._fire(deadline, now)

        def _idle_until_stopped(self) -> None:
            with self._cond:
                while not self._stopped:
                    self.clock.wait(self._cond, None)

    return PollingWatchdog


def _no_retirement() -> Callable[[Any], bool]:
    def retirement_check(token: Any) -> bool:
        return True  # BUG: every attempt owns its stream forever, retired or not

    return retirement_check


def _no_truncation_guard() -> Callable[[Any], None]:
    def truncation_guard(reader: Any) -> None:
        return None  # BUG: a stream that ended without its terminal marker is "complete"

    return truncation_guard


def _retry_after_ignored() -> Callable[[str | None], float | None]:
    def parse_retry_after(value: str | None) -> float | None:
        return None  # BUG: the provider's Retry-After is dropped; plain backoff instead

    return parse_retry_after


def _ttfb_shown_disabled() -> Callable[[Any, float], str]:
    from harness.client.deadlines import describe_deadlines
    from harness.client.settings import DEFAULT_FIRST_BYTE_S

    def describe(state: Any, now: float) -> str:
        text = describe_deadlines(state, now)
        if state.settings.first_byte_s is None and state.first_byte_at is None and state.in_attempt:
            # BUG: "disabled" fell back to the default (`value or DEFAULT`) for display.
            shown = f"first byte in {DEFAULT_FIRST_BYTE_S:.2f} s"
            text = f"{shown}, {text}" if text else shown
        return text

    return describe


BUILDERS: dict[str, Callable[[], Any]] = {
    "no-keepalive": _no_keepalive,
    "closed-transport-reuse": _closed_transport_reuse,
    "polling-watchdog": _polling_watchdog,
    "no-retirement": _no_retirement,
    "no-truncation-guard": _no_truncation_guard,
    "retry-after-ignored": _retry_after_ignored,
    "ttfb-shown-disabled": _ttfb_shown_disabled,
}
