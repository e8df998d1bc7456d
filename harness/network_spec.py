"""A scenario's network path: the ``[network]`` table and the relay-only fault actions.

Layer 2, beside the relay and the network backends: :func:`network_for` is what the
scenario loader calls, so the loader (layer 4) does not reach into ``harness.netem``
itself, and the rule that turns a relay-only action into a server fault plus a relay
mode lives with the relay semantics rather than in the file parser.

``swallow_close`` (relay only): the fault server closes (``fin``) at the rule's phase,
for the requests the rule matches, and a relay in ``swallow_close`` mode in front of it
keeps the client's leg open and silent. So ``fault = { phase = "event:3", action =
"swallow_close" }`` means the same as ``fin`` at event:3 plus ``[network] backend =
"relay", relay = { mode = "swallow_close" }``. Either form may be written; a
``[network]`` table that says something else next to such a rule is an error.

Not here: running a backend (``harness.netem.backends.network_backend``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from harness.faults import Fault, FaultScript, FaultSpecError, Fin

__all__ = ["NetworkConflict", "network_for", "relay_actions"]


class NetworkConflict(FaultSpecError):
    """The ``[network]`` table contradicts a relay-only rule; ``problem`` says how."""

    def __init__(self, field: str, value: Any, allowed: str, problem: str) -> None:
        super().__init__(field, value, allowed)
        self.problem = problem


def network_for(
    script: FaultScript, network_raw: Any, *, where: str = "network"
) -> tuple[FaultScript, Any]:
    """The script to load and the validated network spec (None: the server directly).

    Raises ``FaultSpecError`` naming ``network.<field>`` and the allowed values."""
    script, network_raw = relay_actions(script, network_raw, where=where)
    if network_raw is None:
        return script, None
    from harness.netem.backends import network_from_dict  # only scenarios that use it pay

    return script, network_from_dict(network_raw, where=where)


def relay_actions(
    script: FaultScript, network_raw: Any, *, where: str = "network"
) -> tuple[FaultScript, Any]:
    """Play each relay-only rule (its action's ``relay_mode``, e.g. ``swallow_close``) as a
    server ``fin`` behind a relay in that mode."""
    relayed = [(i, r.fault.action) for i, r in enumerate(script.rules) if r.fault.action.relay_mode]
    if not relayed:
        return script, network_raw
    first, action = relayed[0]
    mode = action.relay_mode
    wanted = {"backend": "relay", "relay": {"mode": mode}}
    allowed = f'no [network] table, or backend = "relay" with relay = {{ mode = "{mode}" }}'
    if network_raw is None:
        network_raw = wanted
    else:
        relay = network_raw.get("relay") if isinstance(network_raw, Mapping) else None
        has_mode = relay.get("mode") if isinstance(relay, Mapping) else None
        backend = network_raw.get("backend") if isinstance(network_raw, Mapping) else None
        if backend != "relay" or has_mode != mode:
            raise NetworkConflict(
                where,
                network_raw,
                allowed,
                f"{dict(network_raw)!r} conflicts with the {action.name} rule "
                f"script.rules[{first}]",
            )
    for i, other in relayed[1:]:
        if other.relay_mode != mode:
            raise NetworkConflict(
                f"script.rules[{i}]",
                other.name,
                f"relay-only actions of one relay mode ({mode}, as script.rules[{first}])",
                f"{other.name} needs relay mode {other.relay_mode}, script.rules[{first}] {mode}",
            )
    rules = tuple(
        dataclasses.replace(r, fault=Fault(r.fault.phase, Fin()))
        if r.fault.action.relay_mode
        else r
        for r in script.rules
    )
    return dataclasses.replace(script, rules=rules), network_raw
