"""The provider APIs the harness speaks, one row each: name, request path, end markers.

Every module that names an API, matches a request path to one, or asks how an API's
stream ends reads it here: the fault server's routes, the scenario model's ``api``
field, the judge's count of LLM calls, the reference client's stream reader, the guard
transport, command targets' ``harness-apis:`` header, the network triggers. Adding an
API is one :class:`Api` row in :data:`API_TABLE`.

    api        path                   keep-alive events   terminal (name in messages)
    chat       /v1/chat/completions   (``:`` comments)    ``data: [DONE]``
    responses  /v1/responses          (``:`` comments)    response.completed, response.incomplete
    messages   /v1/messages           ping                message_stop

The rules that read these tables (what one decoded item means) are
``harness.client.markers``'.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "API_BY_PATH",
    "API_TABLE",
    "APIS",
    "KEEPALIVE_EVENTS",
    "LLM_PATHS",
    "TERMINAL_EVENTS",
    "TERMINAL_MARKERS",
    "Api",
    "ApiName",
    "api_of_path",
]

#: The prefix of every API path under a server's root (a base URL ends with it).
PATH_PREFIX = "/v1"


@dataclass(frozen=True)
class Api:
    """One provider API."""

    name: str
    #: The request path below the base URL (``/v1`` is the base URL's part).
    route: str
    #: How an error message names the end marker a complete stream carries.
    terminal_marker: str
    #: Event names (SSE ``event:`` or JSON ``type``) that end a complete answer (chat has
    #: no event names: its marker is the data line ``[DONE]``).
    terminal_events: frozenset[str] = frozenset()
    #: Event names that are keep-alive traffic, never progress.
    keepalive_events: frozenset[str] = frozenset()

    @property
    def path(self) -> str:
        """The request path on a server's root: ``/v1/chat/completions``."""
        return PATH_PREFIX + self.route


API_TABLE: tuple[Api, ...] = (
    Api("chat", "/chat/completions", "[DONE]"),
    Api(
        "responses",
        "/responses",
        "response.completed",
        terminal_events=frozenset({"response.completed", "response.incomplete"}),
    ),
    Api(
        "messages",
        "/messages",
        "message_stop",
        terminal_events=frozenset({"message_stop"}),
        keepalive_events=frozenset({"ping"}),
    ),
)

#: The API names, in table order.
APIS: tuple[str, ...] = tuple(api.name for api in API_TABLE)
#: The API names as a type (pydantic validates a scenario's ``api`` against it).
ApiName = Literal[APIS]  # type: ignore[valid-type]  # built from the table: one edit adds an API
#: Request path on a server's root -> API name.
API_BY_PATH: dict[str, str] = {api.path: api.name for api in API_TABLE}
#: The request paths that are LLM calls (others, e.g. GET /v1/models probes, are not).
LLM_PATHS: frozenset[str] = frozenset(API_BY_PATH)
TERMINAL_MARKERS: dict[str, str] = {api.name: api.terminal_marker for api in API_TABLE}
TERMINAL_EVENTS: dict[str, frozenset[str]] = {api.name: api.terminal_events for api in API_TABLE}
KEEPALIVE_EVENTS: dict[str, frozenset[str]] = {api.name: api.keepalive_events for api in API_TABLE}

_ROUTES = tuple((api.route, api.name) for api in API_TABLE)


def api_of_path(path: str) -> str | None:
    """The API a request path belongs to, under any base path (``/openai/v1/responses``
    too, as a gateway mounts it); None: not an LLM call."""
    path = path.rstrip("/")
    for route, name in _ROUTES:
        if path.endswith(route):
            return name
    return None
