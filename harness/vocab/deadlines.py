"""The reference stack's deadline settings, by name: what a scenario's ``[watchdog]``
table, the client's settings and the targets that scale them all name."""

from __future__ import annotations

__all__ = ["DEADLINES", "OPTIONAL_SECONDS"]

#: The four deadlines of a call, in the order a call meets them.
DEADLINES = ("first_byte_s", "stream_idle_s", "stale_call_s", "hard_ceiling_s")
#: The settings that take seconds or None (off): the deadlines and the socket timeouts.
OPTIONAL_SECONDS = (*DEADLINES, "connect_timeout_s", "read_timeout_s", "tcp_user_timeout_s")
