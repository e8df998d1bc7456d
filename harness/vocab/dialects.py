"""Dialect profiles: the healthy reply in the shape of one real server.

The one registry of dialects: the fault script's ``dialect`` field accepts the names of
:data:`PROFILES` (``harness.faults.script.DIALECTS`` is derived from it) and the fault
server's payload builders read the knobs. Adding a dialect is one entry of
:data:`PROFILES`; its ``apis`` say which APIs it shapes.

Each profile is a set of *benign* variations a correct client must accept, taken from
the provider's public documentation and from the official SDKs' own test fixtures
(sources cited per profile). The payload builders (``harness.apis.<api>.build``) read the knobs; a
profile changes nothing a client should act on: text, tool calls, reasoning and the
finish reason stay the same, only optional fields, empty or usage-only chunks, comment
lines and event framing differ. ``REFERENCE`` is the shape the server sent before
profiles existed (the default when a script names no dialect).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["DIALECTS", "DIALECT_APIS", "PROFILES", "REFERENCE", "Dialect", "dialect_for"]


@dataclass(frozen=True)
class Dialect:
    """Knobs of one server's streaming shape (see each profile's ``sources``)."""

    name: str
    #: The APIs this profile shapes; elsewhere the API's reference shape is used.
    apis: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    #: chat: extra top-level fields of every chunk (system_fingerprint, provider, ...)
    chunk_extra: dict[str, Any] = field(default_factory=dict)
    #: chat: the role chunk carries ``"content": ""`` (True) or no content key (False)
    role_content: bool = True
    #: chat: choices carry ``"logprobs": null``
    choice_logprobs: bool = True
    #: chat: extra fields of every choice (vLLM's ``stop_reason``)
    choice_extra: dict[str, Any] = field(default_factory=dict)
    #: chat: the role chunk carries ``"refusal": null`` (OpenAI)
    role_refusal: bool = False
    #: chat: usage chunk "on_request" (stream_options.include_usage), "always" (a
    #: usage-only chunk every time), or "finish" (usage on the finish chunk itself)
    usage: str = "on_request"
    #: chat: a first chunk with ``"choices": []`` before the role chunk
    empty_first_chunk: bool = False
    #: chat: the delta field carrying reasoning text
    reasoning_field: str = "reasoning_content"
    #: SSE comment lines sent before the first event (``: OPENROUTER PROCESSING``)
    comments: tuple[str, ...] = ()
    #: line ending of every SSE line ("\n" or "\r\n": both are legal SSE)
    newline: str = "\n"
    #: responses: delta events carry an ``obfuscation`` padding field
    obfuscation: bool = False
    #: messages: send the ``ping`` event after content_block_start
    ping: bool = True
    #: messages: message_delta usage carries the input/cache fields too
    full_delta_usage: bool = False
    #: messages: message_start usage carries cache fields and service_tier; tool_use
    #: blocks carry ``caller``; a tool's first input_json_delta is empty
    rich_blocks: bool = False


REFERENCE = Dialect(name="reference")

PROFILES: dict[str, Dialect] = {
    "openai": Dialect(
        name="openai",
        apis=("chat", "responses"),
        sources=(
            "OpenAI API reference, 'The chat completion chunk object' (service_tier,"
            " system_fingerprint, usage null on every chunk, a usage chunk with empty"
            " choices when stream_options.include_usage)"
            " https://platform.openai.com/docs/api-reference/chat-streaming",
            "A recorded gpt-4.1 stream (coder/aibridge fixtures"
            " openai/chatcompletions/stream_error.txtar): role chunk"
            ' {"role":"assistant","content":"","refusal":null}, "usage":null per chunk,'
            ' and a mid-stream {"error": {"message", "type": "server_error"}} data line',
            "OpenAI Responses streaming events (response.output_text.delta carries"
            " obfuscation) https://platform.openai.com/docs/api-reference/responses-streaming",
        ),
        chunk_extra={"service_tier": "default", "system_fingerprint": "fp_harness", "usage": None},
        role_refusal=True,
        obfuscation=True,
    ),
    "openrouter": Dialect(
        name="openrouter",
        apis=("chat",),
        sources=(
            "OpenRouter API reference, Streaming: 'OpenRouter occasionally sends comments"
            " to prevent connection timeouts ... : OPENROUTER PROCESSING'; errors that occur"
            " mid-generation arrive as data events with an error field"
            " https://openrouter.ai/docs/api-reference/streaming",
            "OpenRouter reasoning tokens: delta.reasoning"
            " https://openrouter.ai/docs/use-cases/reasoning-tokens",
            "OpenRouter usage accounting: the last chunk carries usage"
            " https://openrouter.ai/docs/use-cases/usage-accounting",
        ),
        chunk_extra={"provider": "OpenAI", "system_fingerprint": None},
        usage="always",
        reasoning_field="reasoning",
        comments=("OPENROUTER PROCESSING", "OPENROUTER PROCESSING"),
    ),
    "vllm": Dialect(
        name="vllm",
        apis=("chat",),
        sources=(
            "vllm-project/vllm vllm/entrypoints/openai/chat_completion/protocol.py:"
            " ChatCompletionStreamResponse (usage null, system_fingerprint only on the"
            " final chunk), ChatCompletionResponseStreamChoice (vLLM-only stop_reason);"
            " ChatMessage.reasoning ('vLLM-specific fields that are not in OpenAI spec')",
            "vLLM reasoning outputs: the reasoning delta field"
            " https://docs.vllm.ai/en/latest/features/reasoning_outputs.html",
        ),
        chunk_extra={"usage": None},
        role_content=False,
        choice_extra={"stop_reason": None},
        reasoning_field="reasoning",
    ),
    "anthropic": Dialect(
        name="anthropic",
        apis=("messages",),
        sources=(
            "Anthropic Messages streaming: event types, ping, message_delta usage"
            " https://docs.anthropic.com/en/docs/build-with-claude/streaming",
            "anthropics/anthropic-sdk-python tests/lib/streaming/fixtures/tool_use_response.txt"
            " (message_start usage with cache_*_input_tokens and service_tier; tool_use block"
            ' with "caller"; first input_json_delta is ""), extra_fields_response.txt'
            " (unknown fields are ignored)",
        ),
        full_delta_usage=True,
        rich_blocks=True,
    ),
}

#: The dialect names a fault script may give (None there: the API's own shape).
DIALECTS: tuple[str, ...] = tuple(PROFILES)
#: Which APIs each profile speaks.
DIALECT_APIS: dict[str, tuple[str, ...]] = {name: d.apis for name, d in PROFILES.items()}


def dialect_for(name: str | None, api: str) -> Dialect:
    """The profile ``name`` for ``api``, or the reference shape (no name, other API)."""
    if name is None or api not in DIALECT_APIS.get(name, ()):
        return REFERENCE
    return PROFILES[name]
