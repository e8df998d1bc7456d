"""Scenario input errors: one line naming the file, the field path and the allowed values.

:class:`ScenarioError` is what every loader of the catalog raises (scenario files,
expectations overlays); :func:`read_toml` reads such a file, :func:`from_validation`
turns pydantic's first error into one.
The CLI prints ``str(error)`` and exits 2.

Not here: the scenario model itself (``harness.scenario``).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from harness.outcome import EXPECTABLE, Expected
from harness.vocab.deadlines import OPTIONAL_SECONDS

__all__ = ["SECONDS_FIELDS", "ScenarioError", "check_expected", "from_validation", "read_toml"]

#: The ``[watchdog]`` fields that take seconds or ``"off"`` (the model validates them,
#: the error names the allowed values).
SECONDS_FIELDS = OPTIONAL_SECONDS


class ScenarioError(ValueError):
    """A scenario file is invalid. ``str()`` is the one-line message shown to the user."""

    def __init__(self, file: str, field: str, problem: str, allowed: str | None = None) -> None:
        self.file = file
        self.field = field
        self.problem = problem
        self.allowed = allowed
        text = f"{file}: {field}: {problem}"
        if allowed:
            text += f"; allowed: {allowed}"
        super().__init__(text)


def from_validation(
    file: str, exc: ValidationError, *, root: type[BaseModel], extra_keys: Sequence[str] = ()
) -> ScenarioError:
    """The first pydantic error as a :class:`ScenarioError` with field path and allowed values."""
    err = exc.errors()[0]
    loc = tuple(err["loc"])
    field = _dotted(loc)
    kind = err["type"]
    if kind == "extra_forbidden":
        return ScenarioError(
            file, field, "unknown key", ", ".join(_keys_at(loc[:-1], root, extra_keys))
        )
    if kind == "missing":
        return ScenarioError(file, field, "required key is missing")
    if kind == "literal_error":
        expected = err.get("ctx", {}).get("expected", "")
        return ScenarioError(
            file, field, f"{err['input']!r} is not valid", expected.replace("'", "")
        )
    if field.startswith("watchdog.") and field.split(".")[-1] in SECONDS_FIELDS:
        return ScenarioError(
            file, field, f"{err['input']!r} is not valid", 'a number of seconds > 0, or "off"'
        )
    if kind == "string_pattern_mismatch" and field == "name":
        return ScenarioError(
            file, field, f"{err['input']!r} is not valid", "lower-case letters, digits and _"
        )
    return ScenarioError(file, field, f"{err['input']!r}: {err['msg']}", _type_hint(kind))


def check_expected(file: str, field: str, text: str) -> None:
    """Raise :class:`ScenarioError` at ``field`` unless ``text`` is an expected outcome."""
    try:
        Expected.parse(text)
    except ValueError:
        raise ScenarioError(file, field, f"{text!r} is not an outcome", EXPECTABLE) from None


def read_toml(path: str | Path) -> Any:
    """The parsed TOML file at ``path``; a missing, unreadable or invalid file is a
    :class:`ScenarioError` naming it."""
    file = str(path)
    try:
        return tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ScenarioError(file, "(file)", "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(file, "(file)", f"cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(file, "(toml)", f"not valid TOML: {exc}") from None


def _dotted(loc: Sequence[Any]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"float|int|str|bool|literal\[.*\]|function-.*", str(part)):
            continue  # union branch names pydantic adds to the location
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def _keys_at(loc: Sequence[Any], root: type[BaseModel], extra_keys: Sequence[str]) -> list[str]:
    model: type[BaseModel] = root
    for part in loc:
        field = model.model_fields.get(str(part))
        annotation = getattr(field, "annotation", None)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            model = annotation
        else:
            break
    keys = list(model.model_fields)
    if model is root:
        keys += list(extra_keys)
    return keys


_TYPE_HINTS = {
    "string_type": "a string",
    "bool_type": "true, false",
    "int_type": "a whole number",
    "float_type": "a number",
    "dict_type": "a table",
    "tuple_type": "a list",
    "list_type": "a list",
    "model_type": "a table",
    "greater_than": None,
    "greater_than_equal": None,
}


def _type_hint(kind: str) -> str | None:
    if kind in _TYPE_HINTS:
        return _TYPE_HINTS[kind]
    if re.search(r"(float|int)", kind):
        return "a number"
    return None
