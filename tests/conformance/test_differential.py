"""Differential conformance: the same bytes, parsed by the reference stack and by the
official SDK's own stream parser, give the same text, tool calls, reasoning and finish
reason -- for every dialect profile x reply shape x API, and for Hypothesis-generated
benign variations and chunkings of them. The reference stack may be stricter only
where the stream really lacks its terminal event (it raises TruncatedStream there)."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.apis import APIS
from harness.client.errors import TruncatedStream
from harness.faults import REPLY_SHAPES
from harness.server.apis import plan_reply
from harness.vocab.dialects import DIALECT_APIS
from tests.conformance.oracles import reference, sdk

pytestmark = [pytest.mark.sdk_matrix, pytest.mark.timeout(120)]

#: (dialect or None for the reference shape, api): every profile on every API it speaks
CELLS = [(None, api) for api in APIS] + [
    (name, api) for name, apis in sorted(DIALECT_APIS.items()) for api in apis
]
TERMINAL = {
    "chat": b"data: [DONE]",
    "responses": b"response.completed",
    "messages": b"message_stop",
}


def units(
    api: str, dialect: str | None, shape: str, *, events: int = 5, usage: bool = False
) -> list[bytes]:
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    if usage:
        body["stream_options"] = {"include_usage": True}
    plan = plan_reply(api, body, events=events, shape=shape, dialect=dialect, reasoning_events=3)
    return list(plan.units)


@pytest.mark.parametrize("usage", [False, True], ids=["no-usage", "usage"])
@pytest.mark.parametrize("shape", REPLY_SHAPES)
@pytest.mark.parametrize(
    ("dialect", "api"), CELLS, ids=[f"{d or 'reference'}-{a}" for d, a in CELLS]
)
def test_every_profile_and_shape_parses_the_same_as_the_sdk(dialect, api, shape, usage) -> None:
    body = units(api, dialect, shape, usage=usage)
    ours, theirs = reference(api, body), sdk(api, body)
    assert ours == theirs
    assert ours.text or ours.tool_calls  # a healthy reply carries something


# --------------------------------------------------------------------------- variations


def _vary(api: str, body: list[bytes], rng: random.Random, knobs: dict[str, bool]) -> list[bytes]:
    """Benign variations every SSE client must accept: comments between events, CRLF
    line ends, no space after ``data:``, unknown JSON fields, extra pings (messages),
    a usage-only chunk (chat), ``[DONE]`` after the terminal event (responses)."""
    out = []
    for unit in body:
        if knobs["comments"] and rng.random() < 0.3:
            out.append(b": keep-alive " + str(rng.random()).encode() + b"\n\n")
        if knobs["unknown_fields"] and b"data: {" in unit:
            head, _, data = unit.partition(b"data: ")
            doc = json.loads(data)
            doc["x_vendor_field"] = {"n": rng.randint(0, 9)}
            unit = head + b"data: " + json.dumps(doc, ensure_ascii=False).encode() + b"\n\n"
        if knobs["no_space"]:
            unit = unit.replace(b"data: ", b"data:").replace(b"event: ", b"event:")
        if api == "messages" and knobs["pings"] and out and rng.random() < 0.3:
            out.append(b'event: ping\ndata: {"type": "ping"}\n\n')
        out.append(unit)
    if api == "chat" and knobs["usage_chunk"]:
        usage = {
            "id": "x",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "choices": [],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        out.insert(len(out) - 1, b"data: " + json.dumps(usage).encode() + b"\n\n")
    if api == "responses" and knobs["done_after"]:
        out.append(b"data: [DONE]\n\n")
    if knobs["crlf"]:
        out = [u.replace(b"\n", b"\r\n") for u in out]
    return out


def _chunk(blob: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(blob) + 1) for c in cuts})
    pieces, last = [], 0
    for p in points:
        pieces.append(blob[last:p])
        last = p
    pieces.append(blob[last:])
    return [p for p in pieces if p]


knob_names = (
    "comments",
    "crlf",
    "no_space",
    "unknown_fields",
    "pings",
    "usage_chunk",
    "done_after",
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cell=st.sampled_from(CELLS),
    shape=st.sampled_from(REPLY_SHAPES),
    events=st.integers(min_value=1, max_value=9),
    seed=st.integers(min_value=0, max_value=2**32),
    knobs=st.fixed_dictionaries({k: st.booleans() for k in knob_names}),
    cuts=st.lists(st.integers(min_value=0, max_value=100_000), max_size=12),
)
def test_benign_variations_and_any_chunking_parse_the_same(
    cell, shape, events, seed, knobs, cuts
) -> None:
    dialect, api = cell
    body = _vary(api, units(api, dialect, shape, events=events), random.Random(seed), knobs)
    chunks = _chunk(b"".join(body), cuts)
    assert reference(api, chunks) == sdk(api, chunks)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cell=st.sampled_from(CELLS),
    shape=st.sampled_from(REPLY_SHAPES),
    cut=st.floats(min_value=0.0, max_value=1.0),
)
def test_stricter_than_the_sdk_only_when_the_terminal_event_is_missing(cell, shape, cut) -> None:
    """A body cut anywhere: the reference stack returns what the SDK returns, or raises
    TruncatedStream -- and only when the bytes it got lack the terminal event."""
    dialect, api = cell
    blob = b"".join(units(api, dialect, shape))
    prefix = blob[: int(len(blob) * cut)]
    try:
        ours = reference(api, [prefix])
    except TruncatedStream:
        complete_events = prefix[: prefix.rfind(b"\n\n") + 2] if b"\n\n" in prefix else b""
        assert TERMINAL[api] not in complete_events
        return
    assert ours == sdk(api, [prefix])
