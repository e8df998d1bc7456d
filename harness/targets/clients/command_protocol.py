"""The line protocol a ``command:`` program speaks on its stdout, and what it is told.

What the program is told, on top of the base URLs and keys (:func:`timing_env`): the
run's ``HARNESS_TIME_SCALE`` and the scenario's deadlines, already scaled to real
seconds (``HARNESS_FIRST_BYTE_S``, ``HARNESS_STREAM_IDLE_S``, ``HARNESS_STALE_CALL_S``,
``HARNESS_HARD_CEILING_S``, ``HARNESS_CONNECT_TIMEOUT_S``, ``HARNESS_READ_TIMEOUT_S``;
a deadline the scenario switches off is absent). The reference stack reads the same
numbers, so a program that uses them is judged at any ``--time-scale``.

What it may say: a stdout line that starts with ``HARNESS `` is a protocol line, never
part of the reply::

    HARNESS error Kind: message        the call failed with an error of class Kind
                                       (reported as raised whatever the exit status)
    HARNESS deadline NAME              the error above was a deadline of the program's
                                       own firing (first_byte, stream_idle, ...): a
                                       deadline on a slow-but-alive stream is a false kill
    HARNESS attempts N                 the requests it made for this call (retries included)
    HARNESS tool_call {"name": "record_note", "arguments": "{...}"}
                                       a tool call the model asked for, its arguments as
                                       the raw JSON text it received

Not here: running the program (``harness.targets.clients.command``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.vocab.deadlines import DEADLINES

__all__ = [
    "PREFIX",
    "TIMED_SETTINGS",
    "CommandError",
    "Said",
    "parse_output",
    "timing_env",
]

PREFIX = "HARNESS "
#: The reference-client settings a program is told, scaled: the deadlines, then the
#: socket timeouts.
TIMED_SETTINGS = (*DEADLINES, "connect_timeout_s", "read_timeout_s")
_ERROR = re.compile(r"error\s+([A-Za-z_][A-Za-z0-9_.]*)\s*(?::\s*(.*))?$")


class CommandError(Exception):
    """Base of the error classes a program names with ``HARNESS error Kind: ...``."""

    deadline: str | None = None
    returncode: int | None = None
    #: The requests the program said it made (``HARNESS attempts``), read by the judge
    #: for a raised call as for a returned one; None: it did not say.
    attempt: int | None = None


@dataclass
class Said:
    """What one run of the program said: its reply (stdout without protocol lines) and
    its protocol lines, parsed."""

    reply: str = ""
    error: tuple[str, str] | None = None
    deadline: str | None = None
    attempts: int | None = None
    tool_calls: list[dict[str, str]] = field(default_factory=list)
    #: Protocol lines that could not be read, named so the author sees them.
    bad: list[str] = field(default_factory=list)

    def exception(self, returncode: int) -> CommandError | None:
        """The error the program reported, as an exception of its own class name."""
        if self.error is None:
            return None
        kind, message = self.error
        name = kind.rsplit(".", 1)[-1]
        cls = type(name, (CommandError,), {"__module__": "harness.command_program"})
        exc = cls(message)
        exc.deadline = self.deadline
        exc.returncode = returncode
        exc.attempt = self.attempts
        return exc


def parse_output(out: str) -> Said:
    """Split a program's stdout into its reply and its protocol lines."""
    said = Said()
    reply: list[str] = []
    for line in out.splitlines(keepends=True):
        if not line.startswith(PREFIX):
            reply.append(line)
            continue
        _read_line(said, line[len(PREFIX) :].strip())
    text = "".join(reply)
    said.reply = text[:-1] if text.endswith("\n") else text
    return said


def _read_line(said: Said, body: str) -> None:
    word, _, rest = body.partition(" ")
    rest = rest.strip()
    if word == "error" and (m := _ERROR.match(body)):
        said.error = (m.group(1), (m.group(2) or "").strip())
    elif word == "deadline" and rest:
        said.deadline = rest
    elif word == "attempts" and rest.isdigit():
        said.attempts = (said.attempts or 0) + int(rest)
    elif word == "tool_call":
        call = _tool_call(rest)
        if call is None:
            said.bad.append(body)
        else:
            said.tool_calls.append(call)
    else:
        said.bad.append(body)


def _tool_call(text: str) -> dict[str, str] | None:
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return None
    args = data.get("arguments", "")
    # the raw text as received; an object given instead is the same call re-encoded
    return {"name": data["name"], "arguments": args if isinstance(args, str) else json.dumps(args)}


def timing_env(settings: Mapping[str, Any], time_scale: float) -> dict[str, str]:
    """``HARNESS_TIME_SCALE`` and each timed setting, scaled to real seconds."""
    from harness.client import ClientSettings  # noqa: PLC0415 - only its defaults

    defaults = ClientSettings()
    env = {"HARNESS_TIME_SCALE": f"{time_scale:g}"}
    for name in TIMED_SETTINGS:
        value = settings.get(name, getattr(defaults, name, None))
        if value is not None:
            env[f"HARNESS_{name.upper()}"] = f"{float(value) * time_scale:.6g}"
    return env
