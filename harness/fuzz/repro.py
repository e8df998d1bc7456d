"""``harness repro``: one scenario as a standalone directory for a client's maintainers.

The directory holds only what the installed package's pytest plugin needs
(``docs/pytest.md``): the scenario file under ``scenarios/``, a ``pytest.ini`` pointing
the plugin's ``harness_scenarios_dir`` there, one test file whose only fixture is the
plugin's ``scenario`` (it runs the case as ``harness run`` does: the target's child,
the same judge) and asserts the contract verdict is not ``fail``, and a README with the
one command and the expected and the actual result. Nothing imports this project's
tests or source tree: the wheel and the client are enough.

Not here: running the case (the caller passes its result), finding scenarios
(``harness.fuzz.search``).
"""

from __future__ import annotations

import re
from pathlib import Path

from harness.case_result import CaseResult
from harness.scenario import Scenario

__all__ = ["write_repro"]

_TEST = '''"""Repro of {name} against {target}: {summary}

Written by `harness repro`; needs only the llm-transport-harness wheel (its pytest
plugin) and the client. Run: python -m pytest -q
"""

import pytest


@pytest.mark.transport_scenario({name!r}, target={target!r})
def test_{ident}(scenario):
    # The contract (docs/contract.md): any correct client passes, or fails safely.
    assert scenario.verdict != "fail", (
        f"{{scenario.outcome.label}}: contract checks failed: "
        f"{{', '.join(scenario.failed_checks)}}; {{dict(scenario.evidence)}}"
    )
'''

_INI = """[pytest]
# the plugin (entry point transport_harness) reads the scenario from here
harness_scenarios_dir = scenarios
harness_time_scale = {time_scale}
"""


def write_repro(
    directory: Path, scenario: Scenario, target: str, result: CaseResult, *, time_scale: float
) -> list[Path]:
    """Write the repro for ``scenario`` x ``target`` (``result``: one run of it now)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "scenarios").mkdir(exist_ok=True)
    source = Path(scenario.path)
    toml = directory / "scenarios" / f"{scenario.name}.toml"
    toml.write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    ident = re.sub(r"\W", "_", scenario.name)
    test = directory / f"test_{ident}.py"
    test.write_text(
        _TEST.format(name=scenario.name, target=target, summary=scenario.summary, ident=ident),
        encoding="utf-8",
    )
    ini = directory / "pytest.ini"
    ini.write_text(_INI.format(time_scale=time_scale), encoding="utf-8")
    readme = directory / "README.md"
    readme.write_text(_readme(scenario, target, result, test.name), encoding="utf-8")
    return [toml, test, ini, readme]


def _readme(scenario: Scenario, target: str, result: CaseResult, test: str) -> str:
    rules = "\n".join(f"- `{rule.fault}`{_match(rule)}" for rule in scenario.script.rules)
    evidence = "\n".join(f"- `{k}`: {v}" for k, v in result.evidence.items()) or "- none"
    reference = scenario.expected.get("reference")
    return f"""# Repro: {scenario.name} against `{target}`

{scenario.summary}

## Run it

```
pip install llm_transport_harness-*.whl pytest   # the harness wheel (plugin, targets)
python -m pytest -q                              # in this directory
```

`{test}` uses only the plugin's `scenario` fixture: a fault server on
127.0.0.1 plays `scenarios/{scenario.name}.toml`, the target `{target}` makes the
{scenario.api} call ({"stream" if scenario.stream else "no stream"}) in a child process,
and the harness judges it by the contract (`pytest.ini` sets the time scale:
{result.time_scale}; 1.0 replays real provider timings).

## The fault script

{rules or "- none (a healthy reply)"}

## Expected

Contract verdict `pass` or `safe`: the call returns the complete reply, or raises an
error within its deadlines, without hanging, retrying past its budget or calling a
cut reply complete.{f" The reference stack's outcome: `{reference}`." if reference else ""}

## Actual (when this directory was written)

Outcome `{result.outcome.label}`, verdict `{result.verdict}`, failed checks:
{", ".join(f"`{c}`" for c in result.failed_checks) or "none"}.

{evidence}

{result.message}
"""


def _match(rule: object) -> str:
    match = getattr(rule, "match", None)
    attempts = getattr(match, "attempts", None)
    return f" on attempts {sorted(attempts)}" if attempts else ""
