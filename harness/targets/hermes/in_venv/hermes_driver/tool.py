"""The one tool the hermes target registers: ``record_note``, harmless by design.

Part of the hermes driver, inside hermes-agent's virtualenv (like ``turns``): standard
library and hermes only. The tool does nothing but append its arguments to
``$HERMES_HOME/tool_calls.jsonl``, so a scenario can tell whether hermes *executed* a
tool call -- in particular one whose arguments the fault server cut mid-stream.

The fault server's tool calls always carry complete arguments of one shape (a ``path``
ending in ``.txt`` and a ``text``: ``harness.replies.tool_arguments``), so executed
arguments that lack either were cut (or "repaired" from a cut): :func:`truncated`.
"""

from __future__ import annotations

import json
import os
from typing import Any

__all__ = ["EXECUTED_TRUNCATED_MRO", "TOOLSET", "TOOL_NAME", "executed", "register", "truncated"]

TOOL_NAME = "record_note"
TOOLSET = "harness"
LOG_NAME = "tool_calls.jsonl"
#: Reported as raised when hermes ran the tool with arguments that were cut; the name
#: is ``harness.outcome.EXECUTED_TRUNCATED`` (not imported: this module runs without
#: harness), which classification maps to ``executed_truncated_tool_call``.
EXECUTED_TRUNCATED_MRO = ("ExecutedTruncatedToolCall", "Exception")
SCHEMA = {
    "name": TOOL_NAME,
    "description": "Record a note (a test tool: it only records its arguments).",
    "parameters": {
        "type": "object",
        "properties": {"path": {"type": "string"}, "text": {"type": "string"}},
        "required": ["path", "text"],
    },
}
_registered = False


def register() -> None:
    """Register the tool in hermes's registry once per process."""
    global _registered
    if _registered:
        return
    from tools.registry import registry  # noqa: PLC0415 - hermes's own module

    registry.register(name=TOOL_NAME, toolset=TOOLSET, schema=SCHEMA, handler=_record)
    _registered = True


def executed() -> list[dict[str, Any]]:
    """Every call the tool ran in this ``HERMES_HOME``, in order."""
    try:
        with open(_log_path(), encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]
    except FileNotFoundError:
        return []


def truncated(args: Any) -> bool:
    """Arguments that are not a complete fault-server tool call (see the module doc)."""
    if not isinstance(args, dict):
        return True
    path, text = args.get("path"), args.get("text")
    return not (isinstance(path, str) and path.endswith(".txt") and isinstance(text, str))


def _record(args: Any, **_kw: Any) -> str:
    with open(_log_path(), "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"arguments": args}, ensure_ascii=False) + "\n")
    return json.dumps({"recorded": True})


def _log_path() -> str:
    return os.path.join(os.environ.get("HERMES_HOME", "."), LOG_NAME)
