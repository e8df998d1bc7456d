"""A fault script from whatever a user has at hand: a FaultScript, a dict, a TOML path.

The pytest fixtures (``fault_server_factory(script=...)``, ``fault_server`` through
indirect parametrization) take any of the three and turn it into a
:class:`~harness.faults.FaultScript` here, with the scenario loader's error messages::

    {"rules": [{"fault": {"phase": "event:3", "action": "hang"}}]}   # a scenario's [script]
    "tests/stall.toml"     # a file holding that table at its top or under [script]
                           # (a whole scenario file works too)

Bad input raises :class:`~harness.scenario_errors.ScenarioError`, one line naming the
file (or ``script`` for a dict), the field and the allowed values, as a bad scenario
file does.

Not here: the script model (``harness.faults.script``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.faults import FaultScript, FaultSpecError, script_from_dict
from harness.scenario_errors import ScenarioError, read_toml

__all__ = ["DICT_SOURCE", "script_input"]

#: What a dict script is called in error messages (it has no file).
DICT_SOURCE = "script"


def script_input(value: FaultScript | Mapping[str, Any] | str | Path | None) -> FaultScript:
    """``value`` as a FaultScript: unchanged, from its dict, or read from a TOML file."""
    if value is None:
        return FaultScript()
    if isinstance(value, FaultScript):
        return value
    if isinstance(value, Mapping):
        return _from_table(value, file=DICT_SOURCE)
    if isinstance(value, str | Path):
        path = Path(value)
        if path.suffix.lower() != ".toml":
            raise ScenarioError(str(path), "script", "not a .toml file", "a .toml file path")
        data = read_toml(path)
        return _from_table(data, file=str(path))
    raise ScenarioError(
        DICT_SOURCE,
        "script",
        f"{type(value).__name__} is not a script",
        "a FaultScript, a dict (a scenario's [script] table) or a .toml path",
    )


def _from_table(data: Mapping[str, Any], *, file: str) -> FaultScript:
    # A file may hold the table itself or a [script] table (a scenario file does).
    inner = data.get("script")
    table = inner if isinstance(inner, Mapping) else data
    try:
        return script_from_dict(table, where="script")
    except FaultSpecError as exc:
        raise ScenarioError(file, exc.field, f"{exc.value!r} is not valid", exc.allowed) from None
