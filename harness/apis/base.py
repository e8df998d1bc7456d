"""What one provider API is, for both roles: the :class:`Api` every API module subclasses.

Sans-IO, as h11 is for HTTP: the fault server (writing replies) and the reference client
and guard (reading them) ask the same object. An API module (``chat.py``,
``responses.py``, ``messages.py``, or a test's own) holds::

    route, method          where the request goes (below the base URL's ``/v1``)
    terminal, keep-alive   what ends a stream (:meth:`Api.kind`), what is keep-alive
    stream fold            events -> text, reasoning, tool calls, end (:meth:`Api.fold`)
    document reader        a non-streamed body -> the same (:meth:`Api.read_document`)
    error shapes           the error document (:meth:`Api.error_document`) and the
                           in-band error event (:meth:`Api.error_event`)
    request-body reader    the conversation a request carries (:meth:`Api.conversation`),
                           the tools it offers, whether it carries a tool's result
    reply writer           a healthy reply's body units (:meth:`Api.build`)
    SDK call shape         how the reference client's SDK sends it (:meth:`Api.sdk_request`)
    tools form             API-neutral tools in the form the API takes (:meth:`Api.tools`)

The fold and the reader write into a :class:`Sink` (the reader's state, which also
turns a bad payload or an in-band error into the reader's own exceptions), so this
package knows no client and no server.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn, Protocol

if TYPE_CHECKING:
    from harness.apis.lineage import Conversation
    from harness.apis.payload import BuildInput, Units

__all__ = ["COMMENT", "PATH_PREFIX", "Api", "Sink", "json_type"]

#: The prefix of every API path under a server's root (a base URL ends with it).
PATH_PREFIX = "/v1"
#: An SSE comment: the keep-alive unit of an API without keep-alive events.
COMMENT = b": keepalive\n\n"


class Sink(Protocol):
    """Where a fold or a document reader puts what one item carries."""

    def json(self, data: str) -> dict[str, Any]:
        """``data`` parsed as a JSON object (else the reader's malformed-event error)."""
        ...

    def add_text(self, text: str) -> None: ...
    def replace_text(self, text: str) -> None: ...
    def add_reasoning(self, text: str) -> None: ...
    def tool(self, key: Any, **piece: Any) -> None: ...
    def has_tool(self, key: Any) -> bool: ...
    def finish(self, reason: str | None) -> None: ...
    def end(self) -> None:
        """The terminal marker came: the answer is complete."""
        ...

    def error(self, err: Any) -> NoReturn:
        """An in-band provider error (raises the reader's error)."""
        ...

    def malformed(self, message: str) -> NoReturn:
        """A payload the reader cannot use (raises the reader's error)."""
        ...


class Api:
    """One provider API. Subclasses set the class attributes and the methods below."""

    name: ClassVar[str]
    #: The request path below the base URL (``/v1`` is the base URL's part).
    route: ClassVar[str]
    method: ClassVar[str] = "POST"
    #: How an error message names the end marker a complete stream carries.
    terminal_marker: ClassVar[str]
    #: Event names (SSE ``event:`` or JSON ``type``) that end a complete answer.
    terminal_events: ClassVar[frozenset[str]] = frozenset()
    #: Event names that are keep-alive traffic, never progress.
    keepalive_events: ClassVar[frozenset[str]] = frozenset()
    #: The end marker is a data line, not an event name (chat's ``data: [DONE]``).
    marker_in_data: ClassVar[bool] = False
    #: One keep-alive unit the server writes into a stream.
    keepalive_unit: ClassVar[bytes] = COMMENT
    #: The framing of one event around a payload (a malformed-chunk fault's unit).
    frame: ClassVar[tuple[bytes, bytes]] = (b"data: ", b"\n\n")
    #: A request must say ``max_tokens`` (Anthropic's Messages API requires it).
    requires_max_tokens: ClassVar[bool] = False
    #: :meth:`sdk_request` returns the raw response itself (not a context manager).
    sdk_returns_response: ClassVar[bool] = False

    @property
    def path(self) -> str:
        """The request path on a server's root: ``/v1/chat/completions``."""
        return PATH_PREFIX + self.route

    def __repr__(self) -> str:
        return f"<api {self.name} {self.method} {self.path}>"

    # ---------------------------------------------------------------- reading

    def kind(self, event: str, data: str) -> str:
        """``"terminal"``, ``"comment"`` (keep-alive) or ``"content"`` for one event
        (``event``: its SSE name, ``""`` when none; the JSON ``type`` then decides)."""
        name = event if event else json_type(data)
        if name in self.terminal_events:
            return "terminal"
        if name in self.keepalive_events:
            return "comment"
        return "content"

    def fold(self, event: str, data: str, sink: Sink) -> str:
        """Fold one event into ``sink``; ``"content"`` (progress) or ``"comment"``."""
        raise NotImplementedError

    def read_document(self, doc: dict[str, Any], sink: Sink) -> None:
        """Fold a whole non-streamed JSON document (its error already checked)."""
        raise NotImplementedError

    # ---------------------------------------------------------------- writing

    def conversation(self, body: Mapping[str, Any], seed: str) -> Conversation:
        """The conversation a request body carries (``seed``: the request's)."""
        raise NotImplementedError

    def offered_tools(self, body: Mapping[str, Any]) -> list[tuple[str, Any]]:
        """The function tools a request offers, (name, parameters schema) in order. By
        default any built-in API's form: chat ``{type: function, function: {name,
        parameters}}``, Responses ``{type: function, name, parameters}``, Anthropic
        ``{name, input_schema}``."""
        out = []
        tools = body.get("tools")
        for tool in tools if isinstance(tools, list | tuple) else ():  # a body may say anything
            if not isinstance(tool, Mapping):
                continue
            fn = tool.get("function")
            spec = fn if isinstance(fn, Mapping) else tool
            name = spec.get("name")
            if isinstance(name, str) and name:
                out.append((name, spec.get("parameters", spec.get("input_schema"))))
        return out

    def carries_tool_result(self, body: Mapping[str, Any]) -> bool:
        """Does the request carry a tool's result? By default any built-in API's form:
        chat ``role: tool``, Responses ``function_call_output``, Anthropic
        ``tool_result`` block, in ``messages`` or ``input``."""
        items = body.get("messages") or body.get("input") or ()
        if not isinstance(items, list):
            return False
        for item in items:
            if not isinstance(item, Mapping):
                continue
            if item.get("role") == "tool" or item.get("type") == "function_call_output":
                return True
            content = item.get("content")
            if isinstance(content, list) and any(
                isinstance(b, Mapping) and b.get("type") == "tool_result" for b in content
            ):
                return True
        return False

    def build(self, given: BuildInput) -> Units:
        """The body units of a healthy reply."""
        raise NotImplementedError

    def error_event(self, kind: str, message: str) -> bytes:
        """The in-band error event (``kind``: overloaded, rate_limit, server_error)."""
        raise NotImplementedError

    def error_document(self, kind: str, message: str, code: str) -> dict[str, Any]:
        """An error response's document: OpenAI's ``{"error": {...}}`` by default."""
        return {"error": {"message": message, "type": kind, "param": None, "code": code}}

    # ---------------------------------------------------------------- calling

    def sdk_request(
        self, sdk: Any, call: Any, *, api_key: str, extra: dict[str, Any], response_type: type
    ) -> Any:
        """The ``openai`` SDK's request for ``call`` (a raw-response context manager, or
        the raw response when :attr:`sdk_returns_response`: of ``response_type``, the
        SDK's HTTP library's response class)."""
        raise NotImplementedError

    def tools(self, tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """API-neutral tools (``{name, description, parameters}``) in this API's form."""
        raise NotImplementedError

    def request_template(self, prompt: list[dict[str, Any]]) -> dict[str, Any]:
        """A minimal request body carrying ``prompt`` (fuzzing starts from it)."""
        return {"model": "test-model", "messages": prompt}


def json_type(data: str) -> str:
    """The ``type`` of a JSON event payload; ``""`` when it has none or is not JSON (a
    malformed event is the SDK's or the reader's to report, not a marker)."""
    try:
        doc = json.loads(data)
    except ValueError:
        return ""
    return str(doc.get("type") or "") if isinstance(doc, dict) else ""


def tool_opts(call: Any) -> dict[str, Any]:
    """``tools`` / ``tool_choice`` request fields, only when the caller gave them."""
    opts: dict[str, Any] = {}
    if call.tools is not None:
        opts["tools"] = call.tools
    if call.tool_choice is not None:
        opts["tool_choice"] = call.tool_choice
    return opts


def neutral_spec(tool: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A neutral tool's ``{name, description}`` and its parameters schema."""
    spec = {"name": tool["name"], "description": tool.get("description", "")}
    return spec, dict(tool.get("parameters") or {"type": "object", "properties": {}})
