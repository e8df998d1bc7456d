"""Deterministic reply text: the same request always gets the same words.

The server streams these words as content deltas; the runner computes the same list
to tell a complete answer from a prefix of it. The vocabulary mixes ASCII with
multi-byte UTF-8 so that byte-level faults can split a character.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Mapping, Sequence
from typing import Any

from harness.apis import api_for

__all__ = [
    "DEFAULT_TOOL",
    "DEFAULT_TOOL_SPEC",
    "TOOL_REPLY_SHAPES",
    "arguments_object",
    "fragments",
    "reasoning_deltas",
    "render_tool_call",
    "render_tool_calls",
    "reply_deltas",
    "reply_text",
    "same_tool_calls",
    "schema_arguments",
    "seed_for_request",
    "tool_arguments",
    "tools_for_api",
]

# fmt: off
_VOCAB = (
    "the", "stream", "keeps", "flowing", "until", "a", "fault", "fires", "and", "every",
    "token", "counts", "café", "naïve", "über", "日本語", "façade", "🙂", "ünïcode", "½",
    "packet", "socket", "deadline", "retry", "answer", "complete", "ζ", "Ω", "–", "résumé",
)
# fmt: on


def seed_for_request(body: dict[str, Any] | None) -> str:
    """A stable seed from what the client asked (messages / input / model), not from
    per-attempt noise, so a retried request is answered with the same text."""
    body = body or {}
    key = {k: body.get(k) for k in ("model", "messages", "input", "instructions", "system")}
    blob = json.dumps(key, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def reply_deltas(seed: str, events: int) -> list[str]:
    """``events`` content deltas; ``"".join`` of them is the full reply."""
    rng = random.Random(seed)
    words = [rng.choice(_VOCAB) for _ in range(events)]
    return [w + (" " if i < events - 1 else ".") for i, w in enumerate(words)]


def reply_text(seed: str, events: int) -> str:
    return "".join(reply_deltas(seed, events))


# --------------------------------------------------------------------------- agent shapes

#: The tool a tool-call reply calls when the request names none: harmless by design
#: (hermes's harness tool records its arguments; nothing else runs it).
DEFAULT_TOOL = "record_note"
#: The reply shapes that call tools: a job offers tools on them (a model calls only a
#: tool it was offered), the default one where the scenario names none.
TOOL_REPLY_SHAPES = ("tool_call", "parallel_tool_calls")
#: The tool a job offers on a tool-call scenario that names none (``[request] tools``):
#: the same shape hermes's driver registers (``hermes_driver/tool.py``).
DEFAULT_TOOL_SPEC: dict[str, Any] = {
    "name": DEFAULT_TOOL,
    "description": "Record a note (a test tool: it only records its arguments).",
    "parameters": {
        "type": "object",
        "properties": {"path": {"type": "string"}, "text": {"type": "string"}},
        "required": ["path", "text"],
    },
}


def tool_arguments(seed: str, call: int, words: int) -> str:
    """The JSON arguments of tool call number ``call`` (0-based): one path and one
    string with multi-byte characters, so a cut can fall mid-string or mid-UTF-8."""
    rng = random.Random(f"{seed}:tool:{call}")
    text = " ".join(rng.choice(_VOCAB) for _ in range(max(1, words)))
    doc = {"path": f"notes/{rng.choice(_VOCAB)}-{call}.txt", "text": text}
    return json.dumps(doc, ensure_ascii=False)


_NOTE_PROPERTIES = DEFAULT_TOOL_SPEC["parameters"]["properties"]


def tools_for_api(tools: Sequence[Mapping[str, Any]], api: str) -> list[dict[str, Any]]:
    """API-neutral tools (``{name, description, parameters}``: ``Job.tools``) in the form
    ``api`` takes (:meth:`harness.apis.base.Api.tools`: chat ``{type: function,
    function: {...}}``, Responses ``{type: function, name, ...}``, Messages ``{name,
    description, input_schema}``)."""
    return api_for(api).tools(tools)


def schema_arguments(schema: Any, seed: str, call: int, words: int) -> str:
    """The JSON arguments of tool call number ``call`` for a tool whose parameters are
    the JSON schema ``schema``: valid against it (every property, each of its type:
    string, integer, number, boolean, array, object, null, ``enum`` / ``const``, the
    first of ``anyOf`` / ``oneOf``), strings of ``words`` words with multi-byte
    characters (so a cut can fall mid-string or mid-UTF-8), a property named ``path``
    a ``.txt`` path. A schema with no properties that admits any (none given, or an
    open object), and the default tool's own, get :func:`tool_arguments`' note shape."""
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    closed = isinstance(schema, Mapping) and schema.get("additionalProperties") is False
    if (not props and not closed) or props == _NOTE_PROPERTIES:
        # an open object, or the default tool's own schema: the note shape, the very
        # bytes the catalog's expectations were measured on (where a fragment boundary
        # or a duplicated fragment falls)
        return tool_arguments(seed, call, words)
    rng = random.Random(f"{seed}:tool:{call}")
    return json.dumps(_value(schema, rng, max(1, words), "", call), ensure_ascii=False)


def _value(schema: Any, rng: random.Random, words: int, name: str, call: int) -> Any:
    """One value valid against ``schema`` (see :func:`schema_arguments`)."""
    if not isinstance(schema, Mapping):
        schema = {}
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return rng.choice(list(schema["enum"]))
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return _value({**schema, key: None, **schema[key][0]}, rng, words, name, call)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in schema else "string"
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: _value(v, rng, words, k, call) for k, v in props.items()}
    if kind == "array":
        low, high = int(schema.get("minItems", 1)), int(schema.get("maxItems", 2))
        n = max(low, min(2, high))
        return [_value(schema.get("items"), rng, words, name, call) for _ in range(n)]
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", -1) + 1)
        high = schema.get("maximum", schema.get("exclusiveMaximum", low + 101) - 1)
        number = rng.randint(int(low), max(int(low), int(high)))
        return number if kind == "integer" else float(number)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    if name == "path":
        text = f"notes/{rng.choice(_VOCAB)}-{call}.txt"
    else:
        text = " ".join(rng.choice(_VOCAB) for _ in range(words))
    text = text.ljust(int(schema.get("minLength", 0)), "x")
    return text[: schema["maxLength"]] if "maxLength" in schema else text


def fragments(text: str, pieces: int) -> list[str]:
    """``text`` split into ``pieces`` (at most ``len(text)``) non-empty runs, in order."""
    pieces = max(1, min(pieces, len(text)))
    step, extra = divmod(len(text), pieces)
    out, pos = [], 0
    for i in range(pieces):
        end = pos + step + (1 if i < extra else 0)
        out.append(text[pos:end])
        pos = end
    return out


def reasoning_deltas(seed: str, events: int) -> list[str]:
    """``events`` reasoning (thinking / summary) deltas; never part of the reply text."""
    rng = random.Random(f"{seed}:reasoning")
    return [f"thinking about {rng.choice(_VOCAB)}; " for _ in range(events)]


def render_tool_call(name: str, arguments: str) -> str:
    """A tool call as comparable text: what targets report and the server expects, so a
    call with cut arguments reads as a prefix of the full one (truncated_as_complete)."""
    return f"<tool_call {name}>{arguments}"


#: Where a rendered reply's next tool call begins: ``<tool_call NAME>``.
_RENDERED_CALL = re.compile(r"<tool_call ([^>]*)>")


def same_tool_calls(text: str, expected: str) -> bool:
    """Do two rendered replies ask for the same calls: the same text before them, the
    same names in order, and arguments that read as the same JSON object -- the call a
    tool runs with. Raw texts that differ only where a reader folds them (a repeated key,
    the last one kept, as Python's, JavaScript's and Go's JSON readers do; spacing; key
    order) name one call; a cut or unparsable argument never reads as the whole one."""
    got, want = _RENDERED_CALL.split(text), _RENDERED_CALL.split(expected)
    if len(got) != len(want) or len(got) < 3 or got[0] != want[0]:
        return False
    for i in range(1, len(got), 2):
        if got[i] != want[i]:
            return False
        a, b = arguments_object(got[i + 1]), arguments_object(want[i + 1])
        if a is None or a != b:
            return False
    return True


def arguments_object(raw: str) -> dict[str, Any] | None:
    """A tool call's argument text as the object a tool runs with (empty text: no
    arguments); None when it is not JSON or not an object."""
    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def render_tool_calls(calls: Mapping[Any, Sequence[str]], *, by_key: bool = True) -> str:
    """Streamed tool calls as comparable text: ``calls`` maps a call's key (its index in
    the stream) to ``[name, argument fragments...]``; each call is rendered with its
    fragments joined, in key order -- or, with ``by_key=False``, in the mapping's own
    (arrival) order, for keys that are ids rather than positions."""
    entries = (c for _, c in sorted(calls.items())) if by_key else calls.values()
    return "".join(render_tool_call(c[0], "".join(c[1:])) for c in entries)
