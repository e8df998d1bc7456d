"""What a scenario runs against: one call, in a child process, reported as JSON.

A target is named on the command line (``-t``) in one of four ways:

- a built-in name (``TARGETS``: ``reference``, ``openai-sdk``, ``hermes``);
- a name a third-party package registers through the ``harness.targets`` entry-point
  group (``[project.entry-points."harness.targets"] my-agent = "mypkg.target:MyTarget"``);
- ``mutant:<name>``: a known-bad variant of the reference stack (``harness.mutants``);
- ``package.module:Class``: any importable :class:`Target` subclass, whatever its ``name``.

Nothing here imports a client library, so listing targets stays cheap. See
:mod:`harness.targets.base` for the interface and for how to add a target.
"""

from __future__ import annotations

import functools
import importlib
from importlib.metadata import entry_points

from harness.targets.base import CallResult, EventLog, Job, Target, TargetUnsupported
from harness.targets.prefixes import COMMAND_PREFIX, MUTANT_PREFIX

__all__ = [
    "OPT_IN_TARGETS",
    "required_in_ci",
    "COMMAND_PREFIX",
    "ENTRY_POINT_GROUP",
    "MUTANT_PREFIX",
    "TARGETS",
    "CallResult",
    "EventLog",
    "Job",
    "Target",
    "TargetUnsupported",
    "allowed_targets",
    "expectation_key",
    "import_path",
    "is_target",
    "load_target",
    "registered_targets",
]

#: The built-in targets, name -> "module:Class". Third-party ones use ``ENTRY_POINT_GROUP``.
TARGETS: dict[str, str] = {
    "reference": "harness.targets.clients.reference:ReferenceTarget",
    "openai-sdk": "harness.targets.clients.openai_sdk:OpenAISDKTarget",
    "hermes": "harness.targets.hermes:HermesTarget",
    "hermes+guard": "harness.targets.hermes.guard:HermesGuardTarget",
    "openai-sdk+guard": "harness.targets.clients.openai_sdk_guard:OpenAISDKGuardTarget",
    "anthropic-sdk+guard": "harness.targets.clients.anthropic_sdk_guard:AnthropicSDKGuardTarget",
    "anthropic-sdk": "harness.targets.clients.anthropic_sdk:AnthropicSDKTarget",
    "litellm": "harness.targets.clients.litellm_sdk:LiteLLMTarget",
    "litellm-proxy": "harness.targets.clients.litellm_proxy:LiteLLMProxyReferenceTarget",
    "litellm-proxy+openai-sdk": "harness.targets.clients.litellm_proxy:LiteLLMProxySDKTarget",
    "langchain-openai": "harness.targets.clients.langchain_openai:LangChainOpenAITarget",
    "openai-agents": "harness.targets.clients.openai_agents:OpenAIAgentsTarget",
}
#: Installed packages register targets here: ``name = "module:Class"``.
ENTRY_POINT_GROUP = "harness.targets"
#: Targets whose virtualenv ``ci/setup`` builds only with ``HARNESS_EXTRA_TARGETS=1``
#: (their pins clash with ours and they take minutes to install): CI requires them then.
OPT_IN_TARGETS = frozenset(
    {"litellm", "litellm-proxy", "litellm-proxy+openai-sdk", "langchain-openai", "openai-agents"}
)


def required_in_ci(name: str, *, ci: bool, extra_targets: bool) -> bool:
    """True where a target that cannot run must fail instead of skipping: every target
    in CI, except the opt-in ones unless their venvs were asked for."""
    return ci and (name not in OPT_IN_TARGETS or extra_targets)


def registered_targets() -> dict[str, str]:
    """Every registered name -> "module:Class": the built-ins, then entry points (a
    built-in name cannot be taken over by a package)."""
    return {**_entry_point_targets(), **TARGETS}


def allowed_targets() -> str:
    """The allowed values of a target argument, for error messages."""
    return ", ".join(sorted(registered_targets())) + ", mutant:NAME, package.module:Class"


def is_target(name: str) -> bool:
    """True for a registered name, a ``mutant:`` name or a ``package.module:Class`` path."""
    return (
        name in registered_targets()
        or name.startswith((MUTANT_PREFIX, COMMAND_PREFIX))
        or _is_path(name)
    )


def load_target(name: str) -> type[Target]:
    """The target class for ``name``; ValueError names the allowed values.

    ``mutant:<name>`` is resolved by ``harness.targets.mutants.load_mutant_target(name)``;
    ``command:PATH`` by ``harness.targets.clients.command``; a ``module:Class`` path is imported
    as it is (ImportError / AttributeError propagate, so a broken target module is never
    mistaken for an unknown name).
    """
    if name.startswith(MUTANT_PREFIX):
        # harness.targets.mutants, not its re-export harness.mutants: that sits in a
        # higher layer (pyproject.toml [tool.importlinter]).
        from harness.targets.mutants import load_mutant_target

        return load_mutant_target(name)
    if name.startswith(COMMAND_PREFIX):
        from harness.targets.clients.command import load_command_target

        return load_command_target(name)
    registered = registered_targets()
    if name not in registered and not _is_path(name):
        raise ValueError(f"unknown target {name!r}; allowed: {allowed_targets()}")
    module_name, _, qualname = registered.get(name, name).partition(":")
    obj: object = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    if not (isinstance(obj, type) and issubclass(obj, Target)):
        raise ValueError(f"target {name!r} is {obj!r}, not a harness.targets.Target subclass")
    return obj


def import_path(cls: type[Target]) -> str:
    """``module:Qualname`` of a target class: what a child process is started with, so it
    loads the same class whatever the class's display ``name`` is."""
    return f"{cls.__module__}:{cls.__qualname__}"


def expectation_key(name: str) -> str:
    """Which ``[expected]`` key judges target ``name``: ``reference`` for mutants (they
    are the reference stack with one bug put back), else ``name`` as given to ``-t``."""
    return "reference" if name.startswith(MUTANT_PREFIX) else name


# --------------------------------------------------------------------------- helpers


@functools.cache
def _entry_point_targets() -> dict[str, str]:
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def _is_path(name: str) -> bool:
    module, sep, qualname = name.partition(":")
    return (
        bool(sep)
        and not name.startswith(MUTANT_PREFIX)
        and all(p.isidentifier() for p in module.split("."))
        and all(p.isidentifier() for p in qualname.split("."))
    )
