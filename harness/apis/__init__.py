"""The provider APIs the harness speaks: one module each, and the registry that names them.

Every module that needs an API's behaviour -- the fault server's routes, replies and
error documents, the reference client's SDK call and stream fold, the guard's markers,
the scenario model's ``api`` field, the judge's count of LLM calls -- asks
:func:`api_for` for the API's :class:`~harness.apis.base.Api` and calls it; none
compares an API's name. Adding an API is one new module here (a subclass of ``Api``)
and one line in :data:`BUILTIN`; a test registers its own with :func:`register`::

    api        path                   keep-alive events   terminal (name in messages)
    chat       /v1/chat/completions   (``:`` comments)    ``data: [DONE]``
    responses  /v1/responses          (``:`` comments)    response.completed, response.incomplete
    messages   /v1/messages           ping                message_stop

An unknown name raises :class:`UnknownApi` (it never falls into another API's branch).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeVar

from harness.apis import chat, messages, responses
from harness.apis.base import PATH_PREFIX, Api

__all__ = [
    "API_BY_PATH",
    "APIS",
    "LLM_PATHS",
    "PATH_PREFIX",
    "TERMINAL_MARKERS",
    "Api",
    "ApiName",
    "UnknownApi",
    "api_at",
    "api_for",
    "api_of_path",
    "default_of",
    "error_document",
    "names",
    "pick",
    "register",
    "unregister",
]

T = TypeVar("T")

#: The built-in APIs, in order (the one line an added API changes).
BUILTIN: tuple[Api, ...] = (chat.API, responses.API, messages.API)

_REGISTRY: dict[str, Api] = {api.name: api for api in BUILTIN}


class UnknownApi(ValueError):
    """An API name no module registered."""

    def __init__(self, name: object) -> None:
        super().__init__(f"unknown API {name!r}: known are {', '.join(_REGISTRY)}")
        self.name = name


def api_for(name: str) -> Api:
    """The API called ``name``; :class:`UnknownApi` if none is."""
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise UnknownApi(name) from None


def names() -> tuple[str, ...]:
    """Every registered API's name, built-in ones first."""
    return tuple(_REGISTRY)


def register(api: Api) -> Api:
    """Add ``api`` (a test's own API); its name and route must be new."""
    if api.name in _REGISTRY:
        raise ValueError(f"API {api.name!r} is registered already")
    if any(api.route == other.route for other in _REGISTRY.values()):
        raise ValueError(f"API {api.name!r}: route {api.route} is taken")
    _REGISTRY[api.name] = api
    return api


def unregister(name: str) -> None:
    """Remove a registered API that is not built in."""
    if any(api.name == name for api in BUILTIN):
        raise ValueError(f"API {name!r} is built in")
    _REGISTRY.pop(name, None)


def api_of_path(path: str) -> str | None:
    """The API a request path belongs to, under any base path (``/openai/v1/responses``
    too, as a gateway mounts it); None: not an LLM call."""
    path = path.rstrip("/")
    for api in _REGISTRY.values():
        if path.endswith(api.route):
            return api.name
    return None


#: The built-in API names, in order.
APIS: tuple[str, ...] = tuple(api.name for api in BUILTIN)
#: The API names as a type (pydantic validates a scenario's ``api`` against it).
ApiName = Literal[APIS]  # type: ignore[valid-type]  # built from the modules: one line adds one
#: Request path on a server's root -> built-in API name.
API_BY_PATH: dict[str, str] = {api.path: api.name for api in BUILTIN}
#: The request paths of the built-in APIs (others, e.g. GET /v1/models probes, are not).
LLM_PATHS: frozenset[str] = frozenset(API_BY_PATH)
TERMINAL_MARKERS: dict[str, str] = {api.name: api.terminal_marker for api in BUILTIN}


def api_at(path: str) -> str | None:
    """The API whose request path on a server's root is exactly ``path``; None: none."""
    for api in _REGISTRY.values():
        if api.path == path:
            return api.name
    return None


def error_document(api: str | None, kind: str, message: str, code: str) -> dict[str, Any]:
    """The error document ``api``'s clients read; OpenAI's shape on a path that is no
    API's (``/v1/models``, a 404, a request that could not be read)."""
    spec = _REGISTRY.get(api) if api is not None else None
    return (spec or _PLAIN).error_document(kind, message, code)


_PLAIN = Api()


def pick(table: Mapping[Api, T], name: str, *, who: str) -> T:
    """``table``'s entry for the API called ``name`` (a target's per-API call, keyed by
    the API modules' objects, never by their names): :class:`UnknownApi` for a name no
    module registered, a clear ValueError for one ``who`` does not speak."""
    spec = api_for(name)
    try:
        return table[spec]
    except KeyError:
        spoken = ", ".join(api.name for api in table)
        raise ValueError(f"{who} does not speak API {name!r} (it speaks {spoken})") from None


def default_of(apis: Sequence[str]) -> str:
    """The API a probe of a target speaking ``apis`` uses: the first built-in API (chat)
    when it speaks it, else its first; a target that declares none speaks chat."""
    first = BUILTIN[0].name
    return first if not apis or first in apis else apis[0]
