"""``litellm``: ``litellm.completion`` (the LiteLLM Python SDK) at its defaults.

LiteLLM pins its own openai/httpx versions, so it lives in its own virtualenv
(``ci/setup`` makes ``.cache/litellm-venv``, with the ``proxy`` extra the
``litellm-proxy`` target also needs). The child is that venv's python running the
ordinary child protocol (a :class:`~harness.targets.runtime.venv.VenvTarget`; the harness
package comes from ``PYTHONPATH``), so the process the runner kills and counts is the
one that imported litellm.

Two routes, both through ``litellm.completion`` with OpenAI-format results:

* ``chat``: ``model="openai/<model>"`` with ``api_base`` the fault server's OpenAI base
  URL (a custom OpenAI-compatible endpoint: LiteLLM drives the ``openai`` SDK);
* ``messages``: ``model="anthropic/<model>"`` with ``api_base`` the server's root
  (LiteLLM's own Anthropic handler on its own httpx client posts ``/v1/messages``).

Defaults (litellm 1.108, ``litellm/main.py`` and ``litellm/constants.py``): ``timeout``
600 s for ``completion()`` (``COMPLETION_HTTP_FALLBACK_SECONDS``; connect 5 s),
``num_retries`` None, so the OpenAI route keeps the openai SDK's 2 retries
(``max_retries`` popped with default 2) and the Anthropic route makes one attempt.
``LITELLM_LOCAL_MODEL_COST_MAP=True`` is set for the child so that importing litellm
does not try to fetch its model price list from the internet (the runner allows
traffic to loopback only).

When the venv is missing, every job is skipped with the reason (tests skip, CI fails).

Not here: the proxy server (``harness.targets.clients.litellm_proxy``).
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import Any, ClassVar

from harness.apis import api_for, chat, messages, pick
from harness.paths import CACHE_DIR
from harness.targets.base import CallResult, EventLog, Job, run_calls
from harness.targets.clients.chat_reply import message_text, read_chat_stream
from harness.targets.runtime.venv import VenvTarget

__all__ = [
    "CHILD_ENV",
    "DEFAULT_LITELLM_PYTHON",
    "LiteLLMTarget",
    "litellm_python",
    "litellm_unavailable",
]

_VENV = "litellm-venv"
#: Where ``ci/setup`` installs litellm[proxy].
DEFAULT_LITELLM_PYTHON = CACHE_DIR / _VENV / "bin" / "python"
#: Variables the litellm child runs with: no model-price fetch over the internet, no
#: telemetry, no colour codes in the stderr the report quotes.
CHILD_ENV = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    # The success-logging pool grows a thread whenever callbacks overlap (up to 100):
    # one thread keeps the thread count steady, so growth is not reported as a leak.
    "LOGGING_EXECUTOR_MAX_THREADS": "1",
    "LITELLM_TELEMETRY": "False",
    "NO_COLOR": "1",
}


def litellm_python() -> Path:
    return DEFAULT_LITELLM_PYTHON


def litellm_unavailable(python: Path | None = None, *, proxy: bool = False) -> str | None:
    """Why the litellm venv cannot be used here (None when it can). Looks on disk only:
    at the executable that will run, ``python`` (the SDK's child) or, with ``proxy``,
    also the ``litellm`` proxy command beside it (the gateway's) and its interpreter."""
    python = python or litellm_python()
    if not (python.exists() and os.access(python, os.X_OK)):
        return f"litellm virtualenv not found: {python} does not exist (run ci/setup)"
    if not any(python.parent.parent.glob("lib/python3*/site-packages/litellm/__init__.py")):
        return f"litellm is not installed in {python.parent.parent}"
    if proxy:
        from harness.gateway.litellm_proxy import proxy_cli

        return _not_runnable(proxy_cli(python))
    return None


def _not_runnable(command: Path) -> str | None:
    """Why exec of ``command`` would fail with ENOENT/EACCES, else None: a missing or
    non-executable file, or a ``#!`` interpreter that is gone (a venv built under another
    path and moved: its console scripts still name the old interpreter)."""
    if not (command.is_file() and os.access(command, os.X_OK)):
        return f"the litellm proxy command {command} is missing (litellm[proxy]; run ci/setup)"
    with command.open("rb") as script:
        first = script.readline(512)
    words = first[2:].split() if first.startswith(b"#!") else []
    interpreter = Path(os.fsdecode(words[0])) if words else None
    if interpreter is not None and not (interpreter.is_file() and os.access(interpreter, os.X_OK)):
        return (
            f"the litellm proxy command {command} runs {interpreter}, which does not exist "
            "(the venv was moved; rerun ci/setup)"
        )
    return None


class LiteLLMTarget(VenvTarget):
    name = "litellm"
    apis = ("chat", "messages")
    reusable = True
    venv = _VENV
    package = "litellm"
    child_env = CHILD_ENV
    #: Importing litellm takes seconds (tens on a busy machine): wait longer for ``ready``.
    start_s: ClassVar[float] = 300.0
    #: LiteLLM's error path (exception mapping, mid-stream fallback, logging) costs CPU:
    #: past 3 s on a loaded 2-core machine, which the default ceiling would call a hang.
    min_ceiling_s: ClassVar[float] = 10.0

    # prepare(): VenvTarget's warm-up, since litellm's first call builds its provider
    # maps and clients; pay that before "ready".

    def before_fork(self) -> None:
        # The warm-up's first log started the logging pool's worker thread, which a
        # copy cannot share: stop it, leaving the pool as new (its first submit starts a
        # thread). Forked, each child skips litellm's import: ~3-7 s of CPU a child here.
        from litellm.litellm_core_utils.thread_pool_executor import executor

        _unstart(executor)
        _close_idle_loop()

    def after_fork(self) -> None:
        # the pool's thread back before the leak baseline, as a started child has it
        from litellm.litellm_core_utils.thread_pool_executor import executor

        executor.submit(lambda: None).result(timeout=FORK_RESTART_S)
        import asyncio

        asyncio.set_event_loop(asyncio.new_event_loop())  # its own, where the warm-up's was

    def run(self, job: Job, log: EventLog) -> CallResult:
        try:
            # no rebuild: litellm keeps no client of ours (it caches its own, closed below)
            replies = run_calls(
                job,
                log,
                lambda: _completion(job, log),
                label=f": api={job.api} stream={job.stream}",
            )
        finally:
            log.details["cached_connections"] = close_cached_clients()
        texts = tuple(text for text, _ in replies)
        return CallResult(text=texts[-1], finish_reason=replies[-1][1], texts=texts)


#: How long a forked copy may take to start litellm's logging thread again.
FORK_RESTART_S = 30.0


def _unstart(pool: Any) -> None:
    """Stop ``pool``'s (a ``ThreadPoolExecutor``) threads after its pending work and
    leave it as a new one: no thread until the next ``submit`` starts one. (CPython's
    pool state: what ``shutdown`` sets, put back; the sentinel its workers leave taken.)"""
    import queue
    import threading

    pool.shutdown(wait=True)
    with pool._shutdown_lock:
        for _ in range(pool._work_queue.qsize() + 1):  # the exit sentinel the workers pass on
            try:
                pool._work_queue.get_nowait()
            except queue.Empty:
                break
        pool._threads.clear()
        pool._idle_semaphore = threading.Semaphore(0)
        pool._shutdown = False


def _close_idle_loop() -> None:
    """Close the main thread's idle asyncio loop (litellm's warm-up left one set): its
    epoll and wake-up sockets would be one kernel object shared by every copy."""
    import asyncio

    loop = asyncio.get_event_loop_policy()._local._loop  # without creating one
    if loop is not None and not loop.is_running():
        loop.close()
        asyncio.set_event_loop(None)


def close_cached_clients() -> int:
    """Close the clients LiteLLM cached during the job and empty its cache; returns how
    many ESTABLISHED sockets the process held just before (LiteLLM's pooled connections).

    LiteLLM keeps one client per (provider, base URL, key) in a module-level cache and
    never closes it: its pooled connection would carry over to the next case. Closing
    it is what "close the client" means for the other targets."""
    import litellm

    from harness.leaks import snapshot

    before = snapshot(os.getpid())
    cache = litellm.in_memory_llm_clients_cache
    for client in list(cache.cache_dict.values()):
        close = getattr(client, "close", None)
        if callable(close) and not inspect.iscoroutinefunction(close):
            close()
    cache.flush_cache()
    return 0 if before is None else before.count("ESTABLISHED")


def route(job: Job) -> dict[str, Any]:
    """``model`` and ``api_base`` for the job's API (see the module docstring)."""
    base = job.base_url.rstrip("/")
    provider = pick({chat.API: "openai", messages.API: "anthropic"}, job.api, who="litellm")
    if provider == "anthropic":  # LiteLLM's anthropic provider appends /v1/messages itself
        return {"model": f"anthropic/{job.model}", "api_base": base.removesuffix("/v1")}
    return {"model": f"openai/{job.model}", "api_base": base}


def _completion(job: Job, log: EventLog) -> tuple[str, str | None]:
    import litellm

    kwargs: dict[str, Any] = {
        **route(job),
        "api_key": job.api_key,
        "messages": [dict(m) for m in job.messages],
    }
    if job.max_tokens is not None or api_for(job.api).requires_max_tokens:
        kwargs["max_tokens"] = job.max_tokens or 1024  # the Messages API requires it
    if job.tools:  # OpenAI's form: LiteLLM converts it for the Messages API
        kwargs["tools"] = chat.API.tools(job.tools)
    if not job.stream:
        resp = litellm.completion(**kwargs)
        log.mark("response")
        choice = resp.choices[0]
        return message_text(choice.message), choice.finish_reason
    stream = litellm.completion(stream=True, **kwargs)
    log.mark("headers")
    return read_chat_stream(stream, log)
