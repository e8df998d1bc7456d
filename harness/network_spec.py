"""A scenario's network path: the ``[network]`` table and the relay-only fault actions.

Beside the scenario model: :func:`network_for` is what the scenario loader calls and
:func:`network_from_dict` the ``[network]`` parser, into a
:class:`~harness.faults.network.spec.NetworkSpec` (data). A scenario is data: validating
it needs no backend, so this module never imports ``harness.netem`` (the import contract
forbids it). A relay-only action (its ``relay_mode``) becomes a server fault plus a relay
mode here, not in the file parser.

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
from collections.abc import Mapping, Sequence
from typing import Any

from harness.faults import Fault, FaultScript, FaultSpecError, Fin
from harness.faults.network.kernel import kernel_settings_from_dict
from harness.faults.network.spec import NETWORK_BACKENDS, NetworkSpec
from harness.faults.network.toxics import toxic_from_dict
from harness.faults.network.trigger import parse_trigger
from harness.relay.modes import MODE_TYPES
from harness.relay.settings import relay_settings_from_dict

__all__ = [
    "NetworkConflict",
    "network_for",
    "network_from_dict",
    "hides_answers",
    "relay_actions",
    "stops_progress",
]

#: Trigger kinds at or before which a response's status line has not gone out yet.
_BEFORE_STATUS = frozenset({"start", "accept", "request"})

#: The keys each backend's table may have.
_KEYS = {
    "server": ("backend",),
    "relay": ("backend", "relay", "at"),
    "toxiproxy": ("backend", "toxics"),
    "kernel": ("backend", "kernel"),
}


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


def network_from_dict(data: Mapping[str, Any] | None, *, where: str = "network") -> NetworkSpec:
    """Validate a scenario's ``[network]`` table (None: no network backend)."""
    if data is None:
        return NetworkSpec()
    if not isinstance(data, Mapping):
        raise FaultSpecError(where, data, "a table with backend = " + " | ".join(NETWORK_BACKENDS))
    backend = data.get("backend", "server")
    if backend not in NETWORK_BACKENDS:
        raise FaultSpecError(f"{where}.backend", backend, ", ".join(NETWORK_BACKENDS))
    for key in data:
        if key not in _KEYS[backend]:
            raise FaultSpecError(
                f"{where}.{key}",
                data[key],
                f"keys for backend {backend}: {', '.join(_KEYS[backend])}",
            )
    if backend == "relay":
        relay = relay_settings_from_dict(data.get("relay"), where=f"{where}.relay")
        return NetworkSpec(
            backend,
            relay=relay,
            relay_at=parse_trigger(data.get("at", "start"), where=f"{where}.at"),
        )
    if backend == "toxiproxy":
        raw = data.get("toxics", [])
        if not isinstance(raw, Sequence) or isinstance(raw, str | bytes) or not raw:
            raise FaultSpecError(f"{where}.toxics", raw, "a non-empty list of toxic tables")
        toxics = tuple(toxic_from_dict(t, where=f"{where}.toxics[{i}]") for i, t in enumerate(raw))
        names = [t.name for t in toxics if t.type != "down"]
        dup = next((n for n in names if names.count(n) > 1), None)
        if dup:
            raise FaultSpecError(
                f"{where}.toxics", dup, "unique toxic names (set name = ... on one of them)"
            )
        return NetworkSpec(backend, toxics=toxics)
    if backend == "kernel":
        return NetworkSpec(
            backend, kernel=kernel_settings_from_dict(data.get("kernel"), where=f"{where}.kernel")
        )
    return NetworkSpec()


def stops_progress(spec: NetworkSpec | None, *, framing: str = "chunked") -> bool:
    """True when the network in between ends the stream's progress by itself: a kernel
    dead peer, a relay mode that stops relaying (``hold``), a relay that silences a
    close where the close is what ends the body (``swallow_close`` with ``framing =
    "close"``: the client never sees the end), a stopping toxic
    (:data:`~harness.faults.network.toxics.STOPPING_TOXICS`). A relay that passes, cuts
    only an idle leg or swallows a close after a body that ends by itself, and a toxic
    that only slows the bytes, leave a healthy stream alive."""
    if spec is None or spec.backend == "server":
        return False
    if spec.backend == "kernel":
        return True
    if spec.backend == "relay":
        if spec.relay is None:
            return False
        mode = MODE_TYPES[spec.relay.mode]
        return not mode.flowing or (mode.silences and framing == "close")
    return any(t.stops_progress for t in spec.toxics)


def hides_answers(spec: NetworkSpec | None, *, framing: str = "chunked") -> bool:
    """True when the network in between may keep the server's status answer from the
    client: a fault that stops progress (:func:`stops_progress`) is in force before the
    status line goes out (triggered at ``start``, ``accept`` or ``request``). The server
    then records an answer the client may never have read (a Toxiproxy ``timeout`` eats
    a 404 and closes: the client's retry is right), so no duty that an answer creates
    (no retry after it, a Retry-After's wait) can be owed."""
    if not stops_progress(spec, framing=framing):
        return False
    assert spec is not None  # stops_progress is False without a spec
    if spec.backend == "kernel":
        return spec.kernel is not None and spec.kernel.cut_at.kind in _BEFORE_STATUS
    if spec.backend == "relay":
        return spec.relay_at.kind in _BEFORE_STATUS
    return any(t.stops_progress and t.at.kind in _BEFORE_STATUS for t in spec.toxics)
