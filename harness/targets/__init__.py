"""What a scenario runs against: one call, in a child process, reported as JSON.

``TARGETS`` maps a target name to ``"module:Class"``; nothing here imports a client
library, so listing targets stays cheap. See :mod:`harness.targets.base` for the
interface and for how to add a target.
"""

from __future__ import annotations

import importlib

from harness.targets.base import CallResult, EventLog, Job, Target, TargetUnsupported

__all__ = [
    "MUTANT_PREFIX",
    "TARGETS",
    "is_target",
    "CallResult",
    "EventLog",
    "Job",
    "Target",
    "TargetUnsupported",
    "load_target",
]

#: name -> "module:Class". Add a line here to register a new target.
TARGETS: dict[str, str] = {
    "reference": "harness.targets.reference:ReferenceTarget",
    "openai-sdk": "harness.targets.openai_sdk:OpenAISDKTarget",
    "hermes": "harness.targets.hermes:HermesTarget",
    "openai-sdk+guard": "harness.targets.openai_sdk_guard:OpenAISDKGuardTarget",
    "anthropic-sdk+guard": "harness.targets.anthropic_sdk_guard:AnthropicSDKGuardTarget",
}
#: Names with this prefix are mutants of the reference stack (``harness.mutants``); they have
#: no expectations of their own and are judged by the ``reference`` expectation.
MUTANT_PREFIX = "mutant:"


def is_target(name: str) -> bool:
    """True for a registered name, a ``mutant:`` name or a ``package.module:Class`` path."""
    return name in TARGETS or name.startswith(MUTANT_PREFIX) or _is_path(name)


def load_target(name: str) -> type[Target]:
    """The target class registered as ``name``; ValueError names the registered ones.

    ``mutant:<name>`` is resolved by ``harness.targets.mutants.load_mutant_target(name)``; an
    unregistered ``module:Class`` path (a target under development, a test double) is
    imported as it is.
    """
    if name.startswith(MUTANT_PREFIX):
        # harness.targets.mutants, not its re-export harness.mutants: that sits in a
        # higher layer (pyproject.toml [tool.importlinter]).
        from harness.targets.mutants import load_mutant_target

        return load_mutant_target(name)
    if name not in TARGETS and not _is_path(name):
        raise ValueError(f"unknown target {name!r}; allowed: {', '.join(sorted(TARGETS))}")
    module_name, _, class_name = TARGETS.get(name, name).partition(":")
    return getattr(importlib.import_module(module_name), class_name)


def _is_path(name: str) -> bool:
    module, sep, cls = name.partition(":")
    return (
        bool(sep)
        and bool(module)
        and cls.isidentifier()
        and all(p.isidentifier() for p in module.split("."))
    )
