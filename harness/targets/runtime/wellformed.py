"""What a well-formed message of the target protocol is: :func:`problems` lists what is
wrong with one, for the protocol contract test and for readers of a child's lines.

The parent's side, so it may import the harness; the protocol itself
(``harness.targets.runtime.protocol``) stays stdlib-only for the hermes driver.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.targets.runtime.protocol import MAX_MESSAGE_CHARS, STATUSES

__all__ = ["problems"]


def problems(message: Mapping[str, Any]) -> list[str]:
    """What is wrong with one protocol message (empty when it is well formed)."""
    event = message.get("event")
    out: list[str] = []
    if event == "ready":
        _check(out, message, "pid", int)
    elif event not in ("started", "call", "result", "fatal"):
        return [f"event={event!r}; allowed: ready, started, call, result, fatal"]
    if event != "fatal":
        _check(out, message, "t", float)
    if event == "result":
        status = message.get("status")
        if status not in STATUSES:
            return [*out, f"status={status!r}; allowed: {', '.join(STATUSES)}"]
        _check(out, message, "events", list)
        _check(out, message, "events_dropped", int)
        _check(out, message, "details", dict)
        if message.get("reuse", False) is not False:
            out.append(f"result.reuse={message.get('reuse')!r}; allowed: false or absent")
        for item in message.get("events") or ():
            if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], float)):
                out.append(f"events item {item!r} is not [t, kind, detail]")
        if status == "returned":
            _check(out, message, "text", str)
            _check(out, message, "texts", list)
        elif status == "raised":
            out += _error_problems(message)
        else:
            _check(out, message, "message", str)
    if event == "fatal":
        _check(out, message, "message", str)
    return out


def _error_problems(message: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    _check(out, message, "error", str)
    _check(out, message, "message", str)
    _check(out, message, "causes", list)
    mro = message.get("mro")
    if not (isinstance(mro, list) and mro and all(isinstance(n, str) for n in mro)):
        out.append(f"mro={mro!r} is not a non-empty list of class names")
    elif {"object", "BaseException"} & set(mro):
        out.append(f"mro={mro!r} names object/BaseException")
    elif str(message.get("error", "")).split(":")[0] != mro[0]:
        out.append(f"mro[0]={mro[0]!r} is not the error class {message.get('error')!r}")
    if len(str(message.get("message", ""))) > MAX_MESSAGE_CHARS:
        out.append(f"message is longer than {MAX_MESSAGE_CHARS} characters")
    return out


def _check(out: list[str], message: Mapping[str, Any], key: str, kind: type) -> None:
    value = message.get(key)
    ok = isinstance(value, kind) and not isinstance(value, bool)
    if kind is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok:
        out.append(f"{message.get('event')}.{key}={value!r} is not a {kind.__name__}")
