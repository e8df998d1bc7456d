"""Run hermes-agent turns and say what came back: the part of the hermes driver that
touches hermes.

Runs inside hermes-agent's virtualenv (part of the ``hermes_driver`` package, with its
siblings ``spec`` and ``protocol``); stdlib and hermes only. It builds one real
``run_agent.AIAgent`` (one harmless tool, ``tool``; no memory, no context files) in a scratch
``HERMES_HOME``, runs a spec's turns on it (rebuilding the primary OpenAI client
between turns through ``_replace_primary_openai_client`` where asked), and turns a
finished run into the child protocol's result fields (:func:`protocol_result`).

Not here: spec validation (``spec``), the process entry and command loop
(``main``), judging what hermes returned (``harness.outcome``).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any

from . import tool
from .causes import watching
from .protocol import MAX_MESSAGE_CHARS, describe_exception
from .spec import DEFAULT_API_KEY, DEFAULT_CONTEXT_LENGTH, DEFAULT_MODEL, merge

__all__ = [
    "DRIVER_VERSION",
    "NO_REPLY_MRO",
    "failure",
    "prepare_home",
    "protocol_result",
    "run_spec",
    "run_turns",
    "warm_up",
]

#: config.yaml entries every job gets unless its spec overrides them: no request or
#: subprocess that only the system prompt's content needs. ``context_length`` pinned:
#: no context-length probe (/api/show) to the fault server. ``environment_probe`` off:
#: hermes shells out to python3 and pip for a toolchain line in the prompt, from a
#: thread started with the agent; through pyenv shims that took 4-5 s quiet (17 s on a
#: busy machine), so a fresh child's first call waited on it (and its CPU) before the
#: first request -- time a transport case is not about.
PINNED_CONFIG: dict[str, Any] = {
    "model": {"context_length": DEFAULT_CONTEXT_LENGTH},
    "agent": {"environment_probe": False},
    # hermes's own switch: never pip-install a provider SDK mid-case (deps).
    "security": {"allow_lazy_installs": False},
}

DRIVER_VERSION = 1
#: Loopback discard port: nothing listens, so the warm-up agent's probes fail at once.
WARM_UP_BASE_URL = "http://127.0.0.1:9/v1"
#: Reported as raised when hermes returned no reply text and an error in its result.
NO_REPLY_MRO = ("HermesNoReply", "Exception")
#: The per-turn fields a protocol result keeps in ``details.turns``.
_TURN_DETAILS = (
    "index",
    "completed",
    "failed",
    "partial",
    "turn_exit_reason",
    "error",
    "api_calls",
    "t_start",
    "t_end",
    "elapsed_s",
    "rebuild",
    "tool_calls",
)
#: HERMES_* variables the driver and hermes itself set (not a job's settings).
_OWN = ("HERMES_HOME", "HERMES_SESSION_ID")
_AGENT_OPTIONS = {
    "quiet_mode": True,
    "skip_context_files": True,
    "skip_memory": True,
    "enabled_toolsets": [tool.TOOLSET],  # one harmless tool (tool)
    "platform": "cli",
}


def run_spec(spec: dict[str, Any], *, t_start: float) -> dict[str, Any]:
    """Build one AIAgent per the spec and run its turns; return the result object."""
    prepare_home(spec["hermes_home"], spec["config"])
    # hermes reads HERMES_HOME and its watchdog variables from the process
    # environment, some at import time: set them before importing it.
    os.environ["HERMES_HOME"] = spec["hermes_home"]
    os.environ.update(spec["env"])
    return run_turns(spec, t_start=t_start)


def run_turns(
    spec: dict[str, Any],
    *,
    t_start: float,
    on_event: Callable[..., None] | None = None,
    on_built: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Build the agent and run the turns; HERMES_HOME and the env must already be set.
    ``on_built`` is called once the agent exists, before its first turn: where the
    call starts (building an AIAgent is per-session set-up, seconds on a loaded
    machine, not the transport under test)."""
    from run_agent import AIAgent  # noqa: PLC0415 - must follow the env setup

    tool.register()
    mark = on_event or (lambda kind, detail="": None)
    # what hermes reads, not what the spec asked for: a reused child must show no more
    environ = {k: v for k, v in os.environ.items() if k.startswith("HERMES_") and k not in _OWN}
    agent = AIAgent(
        base_url=spec["base_url"],
        api_key=spec["api_key"],
        provider=spec["provider"],
        api_mode=spec["api_mode"],
        model=spec["model"],
        **_AGENT_OPTIONS,
    )
    mark("agent_built")
    if on_built is not None:
        on_built()
    turns = []
    ok = True
    for index, message in enumerate(spec["turns"]):
        rebuild = None
        if index > 0 and spec["pause_s"] > 0:
            # The scenario's pause between turns (a user thinking), not synchronisation.
            mark("pause", f"{spec['pause_s']:.3f} s")
            time.sleep(spec["pause_s"])
        if index in spec["rebuild_before"]:
            rebuild = _rebuild(agent)
            mark("rebuild", f"replaced={rebuild['replaced']}")
        mark("turn_start", str(index))
        turn = _run_turn(agent, index, message)
        mark("turn_end", f"{index} {_turn_summary(turn)}")
        turn["rebuild"] = rebuild
        turns.append(turn)
        ok = ok and turn["exception"] is None and not turn["failed"]
    t_end = time.monotonic()
    return {
        "driver": DRIVER_VERSION,
        "ok": ok,
        "hermes_version": _hermes_version(),
        "api_mode": getattr(agent, "api_mode", spec["api_mode"]),
        "turns": turns,
        "exception": None,
        "transport": _transport_facts(agent),
        "env": {k: v for k, v in spec["env"].items() if k.startswith("HERMES_")},
        "environ": environ,
        "t_start": t_start,
        "t_end": t_end,
        "elapsed_s": t_end - t_start,
    }


def protocol_result(run: dict[str, Any]) -> dict[str, Any]:
    """The child protocol's result fields for a finished run: the first bad turn decides.

    ``details.turns`` keeps each turn's monotonic ``t_start``/``t_end``, so the requests
    the server saw (``RequestRecord.t_start``) can be attributed to their turn."""
    details = {k: run.get(k) for k in ("hermes_version", "api_mode", "transport", "env", "environ")}
    details["turns"] = [{k: t.get(k) for k in _TURN_DETAILS} for t in run["turns"]]
    caught = next((t["caught"] for t in reversed(run["turns"]) if t.get("caught")), None)
    if caught:
        details["caught"] = caught
    claims = [t["claim"] for t in run["turns"] if t.get("claim")]
    if claims:
        details["attempts_claimed_by"] = "hermes log: " + "; ".join(claims)
    count = len(run["turns"])
    turn = next((t for t in run["turns"] if not _clean(t)), run["turns"][-1])
    where = f"turn {turn['index'] + 1}/{count}: " if count > 1 and not _clean(turn) else ""
    cut = next(
        (a for t in run["turns"] for a in t.get("tool_calls") or () if tool.truncated(a)),
        None,
    )
    if cut is not None:
        # the agent ran a tool call whose arguments were cut: worse than any reply
        message = f"hermes executed {tool.TOOL_NAME} with cut arguments {cut!r}"
        return {
            "status": "raised",
            "error": tool.EXECUTED_TRUNCATED_MRO[0],
            "mro": list(tool.EXECUTED_TRUNCATED_MRO),
            "message": message[:MAX_MESSAGE_CHARS],
            "causes": [],
            "details": details,
        }
    exc = turn["exception"]
    if exc is not None:
        message = (where + exc["message"])[:MAX_MESSAGE_CHARS]
        return {"status": "raised", **exc, "message": message, "details": details}
    if not turn["text"] and not turn["failed"]:
        # run_conversation returned no reply at all (final_response None) and put
        # the reason in its result's "error" field: a structured failure, not a reply.
        reason = turn["error"] or f"no reply (exit: {turn['turn_exit_reason']})"
        return {
            "status": "raised",
            "error": NO_REPLY_MRO[0],
            "mro": list(NO_REPLY_MRO),
            "message": (where + reason)[:MAX_MESSAGE_CHARS],
            "causes": [],
            "details": details,
        }
    # A failed turn's text is hermes's error message ("API call failed after 3
    # retries: ..."): reported as returned, because that is what the caller got.
    return {
        "status": "returned",
        "text": turn["text"] or "",
        "finish_reason": _finish_reason(turn),
        "attempts": _attempts(run["turns"]),
        "texts": [t["text"] or "" for t in run["turns"]],
        "details": details,
        "message": where,
    }


def warm_up() -> None:
    """Import hermes and build one throwaway agent before ``ready``, so the process-wide
    state hermes creates once (its activity monitor thread, log files, state DB) is in the
    runner's leak baseline and only what a job leaves behind counts. The agent points at
    the discard port on loopback: its startup probes are refused at once, and it never
    runs a turn."""
    from run_agent import AIAgent  # noqa: PLC0415 - after HERMES_HOME is set

    tool.register()
    AIAgent(
        base_url=WARM_UP_BASE_URL,
        api_key=DEFAULT_API_KEY,
        model=DEFAULT_MODEL,
        api_mode="chat_completions",
        **_AGENT_OPTIONS,
    )


def prepare_home(home: str, config: dict[str, Any]) -> None:
    """Write HERMES_HOME's config.yaml (``config`` over the pinned defaults) and .env."""
    os.makedirs(home, exist_ok=True)
    merged = merge(PINNED_CONFIG, config)
    # JSON is valid YAML, so no YAML writer is needed here.
    with open(os.path.join(home, "config.yaml"), "w", encoding="utf-8") as fh:
        json.dump(merged, fh)
    with open(os.path.join(home, ".env"), "w", encoding="utf-8") as fh:
        fh.write("")


def failure(exc: BaseException, t_start: float, *, kind: str) -> dict[str, Any]:
    """The result object of a run that never ran a turn (a bad spec, a setup crash)."""
    t_end = time.monotonic()
    return {
        "driver": DRIVER_VERSION,
        "ok": False,
        "stage": kind,
        "turns": [],
        "exception": describe_exception(exc),
        "t_start": t_start,
        "t_end": t_end,
        "elapsed_s": t_end - t_start,
    }


def _attempts(turns: list[dict[str, Any]]) -> int | None:
    """The requests hermes says it made over all turns: its API calls, where a call it
    gave up on counts the attempts it logged ("failed after 3 retries"); None when a
    turn does not say."""
    total = 0
    for turn in turns:
        calls, claimed = turn.get("api_calls"), turn.get("claimed_attempts")
        if not isinstance(calls, int):
            return None
        total += calls if claimed is None else max(calls - 1, 0) + claimed
    return total


def _clean(turn: dict[str, Any]) -> bool:
    return turn["exception"] is None and not turn["failed"] and _finish_reason(turn) == "stop"


def _finish_reason(turn: dict[str, Any]) -> str | None:
    if turn["partial"]:
        return "partial"
    reason = turn["turn_exit_reason"] or ""
    if reason.startswith("text_response(finish_reason=") and reason.endswith(")"):
        return reason[len("text_response(finish_reason=") : -1]
    return reason or None


def _run_turn(agent: Any, index: int, message: str) -> dict[str, Any]:
    t0 = time.monotonic()
    before = len(tool.executed())
    result: dict[str, Any] = {}
    exception = None
    with watching(type(agent)) as watch:
        try:
            result = agent.run_conversation(message) or {}
        except BaseException as exc:  # KeyboardInterrupt included: report what hermes raised
            exception = describe_exception(exc)
    t1 = time.monotonic()
    text = result.get("final_response")
    return {
        "index": index,
        "message": message,
        "text": text if isinstance(text, str) else None,
        "completed": bool(result.get("completed", False)),
        "failed": bool(result.get("failed", False)),
        "partial": bool(result.get("partial", False)),
        "interrupted": bool(result.get("interrupted", False)),
        "turn_exit_reason": _str_or_none(result.get("turn_exit_reason")),
        "error": _str_or_none(result.get("error")),
        "failure_reason": _str_or_none(result.get("failure_reason")),
        "api_calls": result.get("api_calls"),
        "exception": exception,
        "tool_calls": [c["arguments"] for c in tool.executed()[before:]],
        # what hermes caught and turned into its reply, and the attempts it says it made
        "caught": watch.caught,
        "claimed_attempts": watch.claimed,
        "claim": watch.claim,
        "t_start": t0,
        "t_end": t1,
        "elapsed_s": t1 - t0,
    }


def _rebuild(agent: Any) -> dict[str, Any]:
    t0 = time.monotonic()
    try:
        replaced = bool(agent._replace_primary_openai_client(reason="harness_rebuild"))
        exception = None
    except BaseException as exc:  # the rebuild's failure is a finding, reported per turn
        replaced, exception = False, describe_exception(exc)
    return {"replaced": replaced, "exception": exception, "t": t0}


def _turn_summary(turn: dict[str, Any]) -> str:
    if turn["exception"] is not None:
        return f"raised={turn['exception']['error']}"
    return (
        f"failed={turn['failed']} partial={turn['partial']} completed={turn['completed']} "
        f"api_calls={turn['api_calls']} exit={turn['turn_exit_reason']} "
        f"error={(turn['error'] or '')[:120]!r} text={(turn['text'] or '')[:120]!r}"
    )


def _transport_facts(agent: Any) -> dict[str, Any]:
    """The primary client's httpx timeouts as hermes configured them (declared, not
    observed). Its socket options are not read here: the runner reads them from the
    live sockets (``harness.posture``; requests go through ``_mounts``, not
    ``_transport``, so reading the client's attributes told a false story)."""
    facts: dict[str, Any] = {}
    http = getattr(getattr(agent, "client", None), "_client", None)
    timeout = getattr(http, "timeout", None)
    if timeout is not None:
        facts["timeout"] = {
            name: getattr(timeout, name, None) for name in ("connect", "read", "write", "pool")
        }
    return facts


def _hermes_version() -> str | None:
    from importlib import metadata  # noqa: PLC0415

    try:
        return metadata.version("hermes-agent")
    except metadata.PackageNotFoundError:
        return None


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)
