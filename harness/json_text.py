"""Where a piece of JSON text stands, one character at a time: inside a string or not.

The client (is a cut-off reply still an open document?) and the ``cut_tool_call`` fault
(where may a cut fall?) read JSON that is not whole, which ``json`` cannot; both walk
it with one :class:`JsonScan`, so string and escape rules are written once.
"""

from __future__ import annotations

__all__ = ["IN", "OPEN", "OUT", "JsonScan"]

#: what :meth:`JsonScan.step` says of a character
OUT, OPEN, IN = "out", "open", "in"


class JsonScan:
    """The string state of JSON text read so far."""

    def __init__(self) -> None:
        self.in_string = False
        #: the last character read was a backslash inside a string
        self.escaped = False

    def step(self, ch: str) -> str:
        """Read ``ch``: ``OPEN`` when it opens a string, ``IN`` when it is inside one (its
        closing quote too), ``OUT`` when it stands between tokens."""
        if self.in_string:
            if self.escaped:
                self.escaped = False
            elif ch == "\\":
                self.escaped = True
            elif ch == '"':
                self.in_string = False
            return IN
        if ch == '"':
            self.in_string = True
            return OPEN
        return OUT
