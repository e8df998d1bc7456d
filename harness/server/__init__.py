"""The fault-injecting SSE server: OpenAI chat/Responses and Anthropic Messages over
real sockets, failing at exact, scripted points of a response.

Public names: :class:`FaultServer` (thread wrapper, the usual entry point),
:class:`TimelineEvent`, :class:`RequestRecord`, :class:`ServerError`.
"""

from harness.server.fault_server import FaultServer, ServerError
from harness.server.timeline import RequestRecord, TimelineEvent

__all__ = ["FaultServer", "RequestRecord", "ServerError", "TimelineEvent"]
