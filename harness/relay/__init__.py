"""A TCP relay (a stand-in for a proxy or load balancer) in front of the fault server.

What it is for: the middlebox shape of the CLOSE-WAIT hang (docs/architecture.md, "Verified
mechanics"). The provider closes, the relay's upstream socket sits in CLOSE_WAIT, and
the client's leg stays ESTABLISHED and silent; keepalive cannot see it because the
relay's kernel answers probes. Modes (``pass``, ``swallow_close``, ``idle_cut``,
``hold``; :mod:`harness.relay.modes`, one strategy each, documented there) are switchable
at runtime with :meth:`Relay.set_mode`.

Each relay keeps its own timeline of both legs (:class:`RelayEvent`): accepted,
upstream_connected, bytes each way (cumulative), upstream_fin, swallowed, client_fin,
fin_forwarded / fin_not_forwarded, idle_cut, reset, answered (bytes the relay wrote in the
upstream's place: :meth:`Relay.close_connections`), closed, mode changes, and ``tcp``
events with the kernel TCP states of the four sockets of a connection (client, relay client leg, relay upstream leg,
upstream server) read from /proc by :mod:`harness.tcpstate`, sampled on every event
and on a bounded schedule (``sample_interval_s``, at most ``max_samples`` per
connection), recorded only when something changed.

What it is not: an HTTP proxy. It moves bytes; it never parses them. It runs its own
asyncio loop in a background thread, like the fault server, so sync tests can use it.

    with Relay(upstream=("127.0.0.1", srv_port), mode="swallow_close") as relay:
        client = OpenAI(base_url=relay.base_url, ...)
        relay.wait_for("swallowed", timeout=5)

The package, one job per module: ``settings`` (RelaySettings), ``modes`` (the
strategies), ``legs`` (one connection and what a mode may do to it), ``timeline``
(events, waiting on them), ``sampling`` (TCP states), ``middlebox`` (the relay).
"""

from harness.relay.middlebox import Relay, RelayError
from harness.relay.modes import MODES
from harness.relay.sampling import LEGS
from harness.relay.settings import RelaySettings, relay_settings_from_dict
from harness.relay.timeline import RelayConnection, RelayEvent

__all__ = [
    "LEGS",
    "MODES",
    "Relay",
    "RelayConnection",
    "RelayError",
    "RelayEvent",
    "RelaySettings",
    "relay_settings_from_dict",
]
