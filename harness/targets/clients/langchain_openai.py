"""``langchain-openai``: LangChain's ``ChatOpenAI`` at its defaults, ``.stream()`` and ``.invoke()``.

``ChatOpenAI(model=..., base_url=..., api_key=...)`` with nothing else, in its own venv
(``.cache/langchain-venv``: langchain-openai pins openai 3.x). Its documented defaults
(langchain-openai 1.7, ``chat_models/base.py``, ``_client_utils.py``): ``timeout=None``,
handed to the openai client as *no timeout at all*; ``max_retries=None``, so the openai
SDK's 2 retries apply; TCP keepalive (idle 60 s, interval 10 s, 3 probes) and
``TCP_USER_TIMEOUT`` 120 s on its default httpx transport; ``stream_chunk_timeout``
(120 s) applies to async streaming only, not to the sync ``.stream()`` run here.

A streamed job is ``llm.stream(messages)``, chunks concatenated as an agent does;
otherwise ``llm.invoke(messages)``. ``ChatOpenAI`` has no ``close()``: its httpx client
is cached process-wide, so a pooled connection left open after the call is counted as
a leak (and such a child is not reused).

Not here: LangChain agents or chains (one model call per job).
"""

from __future__ import annotations

import json
from typing import Any

from harness.replies import render_tool_call, render_tool_calls, tools_for_api
from harness.targets.base import CallResult, EventLog, Job, run_calls
from harness.targets.runtime.venv import VenvTarget

__all__ = ["LangChainOpenAITarget"]


class LangChainOpenAITarget(VenvTarget):
    name = "langchain-openai"
    apis = ("chat",)
    reusable = True
    venv = "langchain-venv"
    package = "langchain_openai"
    child_env = {"LANGCHAIN_TRACING_V2": "false"}

    def run(self, job: Job, log: EventLog) -> CallResult:
        from langchain_openai import ChatOpenAI

        kwargs: dict[str, Any] = {
            "model": job.model,
            "base_url": job.base_url,
            "api_key": job.api_key,
        }
        if job.max_tokens is not None:
            kwargs["max_tokens"] = job.max_tokens
        llm = ChatOpenAI(**kwargs)

        def rebuild() -> None:
            nonlocal llm
            llm = ChatOpenAI(**kwargs)

        try:
            replies = run_calls(
                job,
                log,
                lambda: _one(llm, job, log),
                rebuild=rebuild,
                label=f": stream={job.stream}",
            )
        finally:
            _close_cached_clients(llm)
        texts = tuple(text for text, _ in replies)
        return CallResult(text=texts[-1], finish_reason=replies[-1][1], texts=texts)


def _close_cached_clients(llm: Any) -> None:
    """Close the HTTP client ``llm`` used and empty LangChain's cache of them.

    ChatOpenAI's default httpx clients are cached per (base URL, timeout, socket
    options) for the process and never closed, so a job's pooled connection carried over
    to the next job (and kept a warm child from being forked: "descriptor 7 is a
    socket"). Closing it is what "close the client" means for the other targets."""
    from langchain_openai.chat_models import _client_utils

    llm.root_client.close()
    for cached in ("_cached_sync_httpx_client", "_cached_async_httpx_client"):
        clear = getattr(getattr(_client_utils, cached, None), "cache_clear", None)
        if callable(clear):
            clear()


def _one(llm: Any, job: Job, log: EventLog) -> tuple[str, str | None]:
    messages = [(m["role"], m["content"]) for m in job.messages]
    if job.tools:
        llm = llm.bind_tools(tools_for_api(job.tools, "chat"))
    if not job.stream:
        message = llm.invoke(messages)
        log.mark("response")
        # A valid call's raw arguments are not kept (LangChain parses them): re-serialised
        # as the provider wrote them (json.dumps, key order kept); an invalid one's raw text.
        rendered = "".join(
            render_tool_call(tc["name"], json.dumps(tc["args"], ensure_ascii=False))
            for tc in message.tool_calls
        ) + "".join(
            render_tool_call(tc["name"] or "", tc["args"] or "")
            for tc in message.invalid_tool_calls
        )
        return str(message.content) + rendered, message.response_metadata.get("finish_reason")
    parts: list[str] = []
    calls: dict[int, list[str]] = {}  # index -> [name, argument fragments...]
    finish = None
    for chunk in llm.stream(messages):
        if chunk.content:
            parts.append(str(chunk.content))
            log.mark("delta", f"{len(chunk.content)} chars")
        for tc in chunk.tool_call_chunks:
            entry = calls.setdefault(tc.get("index") or 0, [""])
            entry[0] = tc.get("name") or entry[0]
            if tc.get("args"):
                entry.append(tc["args"])
        finish = chunk.response_metadata.get("finish_reason") or finish
    log.mark("stream_end", f"finish_reason={finish}")
    rendered = render_tool_calls(calls)
    return "".join(parts) + rendered, finish
