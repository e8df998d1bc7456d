"""``reference``: the project's own keepalive + watchdog stack (``harness.client``).

One :class:`harness.client.ReferenceClient` per call, built from the client's defaults
overridden by the scenario's ``[watchdog]`` table, with every duration multiplied by
the run's ``time_scale`` (deadlines, timeouts, backoff: the whole policy speeds up
with the fault script). Kernel keepalive values stay as set: they are whole seconds.
The client is closed before the result is reported. Errors are the client's typed
``HarnessError`` tree; the child reports the class and its MRO so a scenario can
expect a base class.

Not here: the client itself (``harness.client``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.targets.base import CallResult, EventLog, Job, Target, run_calls
from harness.targets.runtime.warmup import warm_up_target
from harness.vocab.deadlines import DEADLINES

__all__ = [
    "SCALED_SETTINGS",
    "ReferenceTarget",
    "agent_call",
    "job_calls",
    "job_options",
    "job_result",
    "job_settings",
    "scaled_settings",
    "tool_round",
]

#: ClientSettings fields that are durations in scenario seconds.
SCALED_SETTINGS = (
    *DEADLINES,
    "connect_timeout_s",
    "read_timeout_s",
    "backoff_initial_s",
    "backoff_max_s",
    "retry_after_max_s",
)


class ReferenceTarget(Target):
    name = "reference"
    apis = ("chat", "responses", "messages")
    reusable = True

    def prepare(self) -> None:
        warm_up_target(self, apis=("chat", "responses"))

    def call(self, job: Job, log: EventLog) -> CallResult:
        from harness.client import ReferenceClient

        with ReferenceClient(
            base_url=job.base_url, api_key=job.api_key, settings=job_settings(job)
        ) as client:
            replies = job_calls(client, job, log)
        return job_result([r for r, _ in replies], attempts=sum(n for _, n in replies))


def job_calls(client: Any, job: Job, log: EventLog) -> list[Any]:
    """The job's calls on a reference client, each an :func:`agent_call`, the client
    rebuilt where the job asks; (reply, attempts) per call."""
    kwargs = job_options(job)
    return run_calls(
        job,
        log,
        lambda: agent_call(client, job, log, kwargs),
        rebuild=client.rebuild,
        label=call_label(job),
    )


def agent_call(client: Any, job: Job, log: EventLog, kwargs: Mapping[str, Any]) -> Any:
    """One call of the job: a model call, and while the reply asks for tools and
    ``job.tool_rounds`` allow, the tools' results sent back in another (an agent loop).
    Returns (the last reply, the attempts of all its model calls)."""
    messages = [dict(m) for m in job.messages]
    spent = 0
    for _ in range(job.tool_rounds + 1):
        reply = client.complete(messages=messages, **kwargs)
        spent += reply.attempts
        log.mark("reply", f"finish_reason={reply.finish_reason} attempts={reply.attempts}")
        if not reply.tool_calls:
            break
        messages += tool_round(reply)
    return reply, spent


def job_settings(job: Job) -> Any:
    """The ``ClientSettings`` of ``job``: the defaults, its ``[watchdog]`` table over them,
    durations scaled (what every target running the reference stack uses)."""
    from harness.client import ClientSettings

    return ClientSettings(**scaled_settings(ClientSettings(), job.settings, job.time_scale))


def job_options(job: Job) -> dict[str, Any]:
    """``complete``'s options for ``job`` (``max_tokens`` and ``tools`` only when the job
    sets them)."""
    kwargs: dict[str, Any] = {"model": job.model, "api": job.api, "stream": job.stream}
    if job.max_tokens is not None:
        kwargs["max_tokens"] = job.max_tokens
    if job.tools:
        from harness.replies import tools_for_api

        kwargs["tools"] = tools_for_api(job.tools, job.api)
    return kwargs


def tool_round(reply: Any) -> list[dict[str, str]]:
    """The messages an agent loop appends after ``reply`` asked for tools: the reply, and
    each tool's result as a text observation (plain role/content messages, which every
    API the reference stack speaks takes as they are)."""
    asked = rendered_calls(reply)
    results = "; ".join(f"{c.name} returned: done" for c in reply.tool_calls)
    return [
        {"role": "assistant", "content": reply.text + asked},
        {"role": "user", "content": f"Tool results: {results}. Now answer."},
    ]


def job_result(replies: Sequence[Any], *, attempts: int | None = None) -> CallResult:
    """The result of a job's replies: the last one's text and finish reason, tool calls as
    comparable text (without them a healthy tool-call reply looks truncated), and every
    request of the job (``attempts``, default the replies' own: an agent loop's calls
    count each of their model calls), so the runner can set it next to the server's count."""
    last = replies[-1]
    return CallResult(
        text=last.text + rendered_calls(last),
        finish_reason=last.finish_reason,
        attempts=sum(r.attempts for r in replies) if attempts is None else attempts,
        texts=tuple(r.text + rendered_calls(r) for r in replies),
    )


def scaled_settings(
    defaults: Any, overrides: Mapping[str, Any], time_scale: float
) -> dict[str, Any]:
    """``ClientSettings`` keywords: ``defaults`` overridden by ``overrides``, durations
    times ``time_scale`` (None -- disabled -- stays None)."""
    values = {name: getattr(defaults, name) for name in SCALED_SETTINGS}
    values.update(overrides)
    for name in SCALED_SETTINGS:
        if values.get(name) is not None:
            values[name] = float(values[name]) * time_scale
    return values


def call_label(job: Job) -> str:
    """What a call of the reference stack is marked with after "2 of 3"."""
    return f": api={job.api} stream={job.stream}"


def rendered_calls(reply: Any) -> str:
    """A reply's tool calls as comparable text (``harness.replies.render_tool_call``)."""
    from harness.replies import render_tool_call

    return "".join(render_tool_call(c.name, c.raw_arguments) for c in reply.tool_calls)
