"""Dialect profiles: the healthy reply in the shape of one real server.

Each profile is a set of *benign* variations a correct client must accept, taken from
the provider's public documentation and from the official SDKs' own test fixtures
(sources cited per profile). The payload builders (``payloads/``) read the knobs; a
profile changes nothing a client should act on: text, tool calls, reasoning and the
finish reason stay the same, only optional fields, empty or usage-only chunks, comment
lines and event framing differ. ``REFERENCE`` is the shape the server sent before
profiles existed (the default when a script names no dialect).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["DIALECT_APIS", "PROFILES", "REFERENCE", "Dialect", "dialect_for"]


@dataclass(frozen=True)
class Dialect:
    """Knobs of one server's streaming shape (see each profile's ``sources``)."""

    name: str
    sources: tuple[str, ...] = ()
    #: chat: extra top-level fields of every chunk (system_fingerprint, provider, ...)
    chunk_extra: dict[str, Any] = field(default_factory=dict)
    #: chat: the role chunk carries ``"content": ""`` (True) or no content key (False)
    role_content: bool = True
    #: chat: choices carry ``"logprobs": null``
    choice_logprobs: bool = True
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


REFERENCE = Dialect(name="reference")

PROFILES: dict[str, Dialect] = {
    "openai": Dialect(
        name="openai",
        sources=(
            "OpenAI API reference, chat streaming: 'The chat completion chunk object'"
            " (system_fingerprint, service_tier, usage chunk with empty choices when"
            " stream_options.include_usage) https://platform.openai.com/docs/api-reference/chat-streaming",
            "openai/openai-python tests/lib/chat/test_completions_streaming.py"
            " (recorded chunks: role chunk with content '', refusal null, logprobs null)",
            "OpenAI Responses streaming events (response.output_text.delta with"
            " obfuscation) https://platform.openai.com/docs/api-reference/responses-streaming",
        ),
        chunk_extra={"service_tier": "default", "system_fingerprint": "fp_harness"},
        obfuscation=True,
    ),
    "openrouter": Dialect(
        name="openrouter",
        sources=(
            "OpenRouter API reference, streaming: 'OpenRouter occasionally sends comments"
            " ... : OPENROUTER PROCESSING' and the final usage chunk"
            " https://openrouter.ai/docs/api-reference/streaming",
            "OpenRouter reasoning tokens: delta.reasoning (and reasoning_details)"
            " https://openrouter.ai/docs/use-cases/reasoning-tokens",
        ),
        chunk_extra={"provider": "OpenAI", "system_fingerprint": None},
        usage="always",
        reasoning_field="reasoning",
        comments=("OPENROUTER PROCESSING", "OPENROUTER PROCESSING"),
    ),
    "vllm": Dialect(
        name="vllm",
        sources=(
            "vLLM OpenAI-compatible server, protocol.py ChatCompletionStreamResponse /"
            " DeltaMessage (reasoning_content; no system_fingerprint; role chunk without"
            " content) https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html",
            "vLLM reasoning outputs: delta.reasoning_content"
            " https://docs.vllm.ai/en/latest/features/reasoning_outputs.html",
        ),
        role_content=False,
        choice_logprobs=True,
        usage="finish",
        reasoning_field="reasoning_content",
        newline="\r\n",
    ),
    "anthropic": Dialect(
        name="anthropic",
        sources=(
            "Anthropic Messages streaming: event types, ping events, message_delta usage"
            " https://docs.anthropic.com/en/docs/build-with-claude/streaming",
            "anthropics/anthropic-sdk-python tests/lib/streaming/fixtures"
            " (basic_response.txt, tool_use_response.txt, thinking_response.txt)",
        ),
        full_delta_usage=True,
    ),
}

#: Which APIs each profile speaks; elsewhere the API's reference shape is used.
DIALECT_APIS = {
    "openai": ("chat", "responses"),
    "openrouter": ("chat",),
    "vllm": ("chat",),
    "anthropic": ("messages",),
}


def dialect_for(name: str | None, api: str) -> Dialect:
    """The profile ``name`` for ``api``, or the reference shape (no name, other API)."""
    if name is None or api not in DIALECT_APIS.get(name, ()):
        return REFERENCE
    return PROFILES[name]
