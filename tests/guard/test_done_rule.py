"""One ``[DONE]`` rule: the reference stack's reader and the guard's marker rule end a
chat stream exactly where the official openai SDK's reader does, for every spelling of
the ``data: [DONE]`` line.

The oracle is ``openai.Stream`` reading a real ``httpx`` (openai 2.x) or ``httpx2``
(openai 3.x) ``Response`` whose body is in memory: the SDK's own SSE decoder and its
own ``[DONE]`` test, no mock; only the socket is left out (the point is the parser).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator

import openai
import pytest
from openai.types.chat import ChatCompletionChunk

from harness.client import errors
from harness.client.markers import kind_of
from harness.client.streams import StreamReader
from harness.sse import Event, SSEDecoder

HTTP = importlib.import_module("httpx2" if int(openai.__version__.split(".")[0]) >= 3 else "httpx")
URL = "http://127.0.0.1:9/v1"  # never connected to: the body is in memory


def _chunk(text: str) -> bytes:
    doc = {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}],
    }
    return b"data: " + json.dumps(doc).encode() + b"\n\n"


#: The sentinel line as servers (and broken servers) spell it, without its blank line.
VARIANTS = [
    b"data: [DONE]",
    b"data:[DONE]",
    b"data: [DONE] ",
    b"data: [DONE]\r",
    b"data: [DONE]x",
    b"data:  [DONE]",  # two spaces: the data is " [DONE]"
    b"data: [done]",
    b"data: [DONE",
    b"data: DONE",
]


def _sdk_stops(line: bytes) -> bool:
    """The SDK yields the first chunk and stops at ``line`` (it never reads "after")."""

    class Body(HTTP.SyncByteStream):
        def __iter__(self) -> Iterator[bytes]:
            yield _chunk("before") + line + b"\n\n" + _chunk("after")

    response = HTTP.Response(
        200,
        headers={"content-type": "text/event-stream"},
        stream=Body(),
        request=HTTP.Request("POST", URL + "/chat/completions"),
    )
    client = openai.OpenAI(api_key="k", base_url=URL)
    stream = openai.Stream(cast_to=ChatCompletionChunk, response=response, client=client)
    texts = []
    try:
        for chunk in stream:
            texts.append(chunk.choices[0].delta.content)
    except ValueError:  # json.JSONDecodeError: the SDK parsed the line as a chunk
        return False
    return texts == ["before"]


def _sentinel_item(line: bytes) -> Event:
    items = SSEDecoder().feed(line + b"\n\n")
    assert len(items) == 1 and isinstance(items[0], Event), items
    return items[0]


@pytest.mark.parametrize("line", VARIANTS, ids=lambda b: b.decode().replace("\r", "\\r"))
def test_reader_and_guard_end_a_chat_stream_where_the_openai_sdk_does(line: bytes) -> None:
    expected = _sdk_stops(line)
    item = _sentinel_item(line)
    reader = StreamReader("chat")
    try:
        reader.feed(item)
    except errors.MalformedEvent:  # a non-sentinel line that is not JSON: not an end
        pass
    assert reader.complete is expected
    assert (kind_of("chat", item) == "terminal") is expected


def test_the_variants_cover_both_answers() -> None:
    """The table is not vacuous: the SDK ends on some spellings and not on others."""
    answers = {_sdk_stops(line) for line in VARIANTS}
    assert answers == {True, False}
