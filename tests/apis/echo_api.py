"""A test-only fourth API, ``echo``: the whole of what adding an API takes.

Its own route (``POST /v1/echo``) and a trivial stream dialect of its own::

    event: word     data: {"w": "<text delta>"}    content (one per delta)
    event: beat     data: {}                       keep-alive, never progress
    event: end      data: {"why": "done"}          terminal

A non-streamed reply is ``{"text": ..., "why": "done"}``. The reference client sends it
with the openai SDK's ``post`` (raw response), as it sends Anthropic's Messages.
Nothing outside this module names it: a test registers it with
``harness.apis.register`` and removes it after.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.apis.base import Api, Sink
from harness.apis.lineage import Conversation, Turn, plain
from harness.apis.payload import BuildInput, Units, dumps, named_unit

BEAT = named_unit("beat", {})


class Echo(Api):
    name = "echo"
    route = "/echo"
    terminal_marker = "end"
    terminal_events = frozenset({"end"})
    keepalive_events = frozenset({"beat"})
    keepalive_unit = BEAT
    frame = (b"event: word\ndata: ", b"\n\n")
    sdk_returns_response = True

    def fold(self, event: str, data: str, sink: Sink) -> str:
        if event in self.keepalive_events:
            return "comment"
        doc = sink.json(data)
        if event == "word":
            sink.add_text(str(doc.get("w") or ""))
        elif event == "end":
            sink.finish(str(doc.get("why") or "done"))
            sink.end()
        elif event == "error":
            sink.error(doc)
        return "content"

    def read_document(self, doc: dict[str, Any], sink: Sink) -> None:
        sink.add_text(str(doc.get("text") or ""))
        sink.finish(doc.get("why"))

    def conversation(self, body: Mapping[str, Any], seed: str) -> Conversation:
        turns = tuple(Turn(str(m.get("role")), "text", plain(m)) for m in body.get("say") or ())
        return Conversation(turns)

    def build(self, given: BuildInput) -> Units:
        out = Units()
        if not given.stream:
            out.add(dumps({"text": given.content.text, "why": "done"}), "document")
            return out
        for delta in given.content.deltas:
            out.add(named_unit("word", {"w": delta}), "text")
        out.add(named_unit("end", {"why": "done"}), "terminal")
        return out

    def error_event(self, kind: str, message: str) -> bytes:
        return named_unit("error", {"type": kind, "message": message})

    def sdk_request(
        self, sdk: Any, call: Any, *, api_key: str, extra: dict[str, Any], response_type: type
    ) -> Any:
        body = {"model": call.model, "say": call.messages, "stream": call.stream}
        headers = {"X-Stainless-Raw-Response": "stream"}
        return sdk.post(
            self.route, cast_to=response_type, body=body, options={"headers": headers, **extra}
        )

    def tools(self, tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        return [dict(t) for t in tools]

    def request_template(self, prompt: list[dict[str, Any]]) -> dict[str, Any]:
        return {"model": "test-model", "say": prompt}


API = Echo()
