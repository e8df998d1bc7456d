"""What each sampled client socket carried, tied to the server's connection by its port.

The sampler (``harness.posture.sampler``) knows a client socket by its inode and its
local port; the fault server records each connection's client port (timeline
``accepted`` and ``request_head``, detail ``port``) and what the connection carried (its
request records). A socket whose local port is a server connection's client port is
that connection. Through the relay (``harness.relay``) the relay's own timeline ties
the client leg (``accepted`` "from H:P") to its upstream leg (``upstream_connected``
"H:P -> ..."), whose local port is the server's client port. Toxiproxy and a gateway do
not say which upstream connection carries which client connection: their sockets stay
``unknown``.

What a connection carried:

- ``model_call``: at least one request to an API route (``api_of_path``), a probe before
  it on the same connection or not;
- ``probe``: requests, none to an API route (``GET /v1/models``, ``/api/tags``, ``/props``,
  ``/version``: an endpoint probe, often answered 404);
- ``nothing``: the server accepted it and saw no request on it (an idle pre-opened
  connection, or one a fault ate before its head);
- ``unknown``: not tied to any connection the server recorded in this case;
- ``model_call_early``: a model call's, but its options were read before its first
  request head reached the server -- perhaps between the client's connect and its
  ``setsockopt`` (a retry connecting while a fault's sample is read): not judged.

What is judged (``dead_peer_bound``, the posture line): the model-call connections;
where none is tied, the unknown ones (a path that cannot be seen through is judged as
before: every socket); never the probe or idle ones, which are shown apart.

Pure: the server's records and both timelines in, the same postures with ``carried``,
``server_conn`` and ``requests`` set out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from harness.apis import api_of_path
from harness.posture.facts import UNKNOWN, SocketPosture
from harness.posture.sampler import Posture

__all__ = [
    "CARRIED",
    "MODEL_CALL",
    "MODEL_CALL_EARLY",
    "NOTHING",
    "PROBE",
    "carried_counts",
    "judged",
    "tie",
    "tie_posture",
]

MODEL_CALL = "model_call"
MODEL_CALL_EARLY = "model_call_early"
PROBE = "probe"
NOTHING = "nothing"
CARRIED = (MODEL_CALL, MODEL_CALL_EARLY, PROBE, NOTHING, UNKNOWN)
#: Connections never judged: shown apart.
_APART = (MODEL_CALL_EARLY, PROBE, NOTHING)


def tie(
    connections: Iterable[SocketPosture],
    timeline: Sequence[Mapping[str, Any]],
    records: Sequence[Any],
) -> tuple[SocketPosture, ...]:
    """Each of ``connections`` with what it carried (see the module docstring)."""
    server_conn_of = _server_conn_by_client_port(timeline)
    requests = _requests_by_conn(records)
    first_head = _first_head_t(timeline)
    out = []
    for p in connections:
        conn = server_conn_of.get(_port(p.local))
        if conn is None:
            out.append(dataclasses.replace(p, carried=UNKNOWN, server_conn=None, requests=()))
            continue
        carried = requests.get(conn, ())
        if any(api_of_path(path) is not None for _, path in carried):
            head_t = first_head.get(conn)
            early = p.read_t is not None and head_t is not None and p.read_t < head_t
            kind = MODEL_CALL_EARLY if early else MODEL_CALL
        else:
            kind = PROBE if carried else NOTHING
        out.append(dataclasses.replace(p, carried=kind, server_conn=conn, requests=carried))
    return tuple(out)


def tie_posture(
    posture: Posture | None, timeline: Sequence[Mapping[str, Any]], records: Sequence[Any]
) -> Posture | None:
    """``posture`` (None: not read) with every connection tied."""
    if posture is None:
        return None
    return dataclasses.replace(posture, connections=tie(posture.connections, timeline, records))


def judged(
    connections: Iterable[SocketPosture],
) -> tuple[list[SocketPosture], list[SocketPosture]]:
    """(the connections a posture judgement reads, the ones shown apart): the model-call
    ones, else the untied ones; the probe and idle ones are always apart."""
    conns = list(connections)
    calls = [c for c in conns if c.carried == MODEL_CALL]
    chosen = calls or [c for c in conns if c.carried not in _APART]
    return chosen, [c for c in conns if c not in chosen]


def carried_counts(connections: Iterable[SocketPosture]) -> str:
    """``"2 probe, 1 nothing"``: how many connections carried what ("" for none)."""
    counts: dict[str, int] = {}
    for c in connections:
        counts[c.carried] = counts.get(c.carried, 0) + 1
    return ", ".join(f"{counts[k]} {k.replace('_', '-')}" for k in CARRIED if k in counts)


# --------------------------------------------------------------------------- helpers


def _server_conn_by_client_port(timeline: Sequence[Mapping[str, Any]]) -> dict[int, int]:
    """``{client port: server connection}``, through the relay where there is one. A
    port seen on two connections (reused within the case) is the later one's."""
    direct: dict[int, int] = {}
    relay_client: dict[Any, int] = {}  # relay conn -> the target's port
    relay_upstream: dict[Any, int] = {}  # relay conn -> its upstream leg's local port
    for e in timeline:
        source, kind = e.get("source"), e.get("kind")
        if source is None and kind in ("accepted", "request_head"):
            port = (e.get("detail") or {}).get("port")
            if isinstance(port, int) and port > 0 and e.get("conn") is not None:
                direct[port] = int(e["conn"])
        elif source == "relay" and kind == "accepted":
            port = _port(str(e.get("detail", "")).removeprefix("from "))
            if port:
                relay_client[e.get("conn")] = port
        elif source == "relay" and kind == "upstream_connected":
            port = _port(str(e.get("detail", "")).partition(" -> ")[0])
            if port:
                relay_upstream[e.get("conn")] = port
    out = dict(direct)
    for relay_conn, client_port in relay_client.items():
        upstream = relay_upstream.get(relay_conn)
        if upstream in direct:
            out[client_port] = direct[upstream]
    return out


def _first_head_t(timeline: Sequence[Mapping[str, Any]]) -> dict[int, float]:
    """When each server connection's first request head was read."""
    out: dict[int, float] = {}
    for e in timeline:
        if e.get("source") is None and e.get("kind") == "request_head" and e.get("conn"):
            out.setdefault(int(e["conn"]), float(e.get("t", 0.0)))
    return out


def _requests_by_conn(records: Sequence[Any]) -> dict[int, tuple[tuple[int, str], ...]]:
    by_conn: dict[int, list[tuple[int, str]]] = {}
    for r in records:
        get = r.get if isinstance(r, Mapping) else lambda k, r=r: getattr(r, k, None)
        conn, index, path = get("connection"), get("index"), get("path")
        if conn is None or index is None:
            continue
        by_conn.setdefault(int(conn), []).append((int(index), str(path or "")))
    return {c: tuple(sorted(rs)) for c, rs in by_conn.items()}


def _port(address: str) -> int:
    """The port of ``host:port`` (``[::1]:port`` too); 0 when there is none."""
    _, sep, port = address.rpartition(":")
    return int(port) if sep and port.isdigit() else 0
