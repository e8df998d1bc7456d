"""The facts a verdict cites besides the outcome: the cause chain, the reply, the wire.

- :func:`cause_chain`: the exception chain of an error outcome (``{type, message, via}``
  per exception, the error itself first), from a raised report's ``chain``, or from
  ``details.caught`` -- the exception a client caught and turned into something else
  (hermes's "API call failed after 3 retries: Connection error." reply). Bounded
  (:data:`MAX_CHAIN`, :data:`MAX_CHAIN_MESSAGE_CHARS`) and redacted
  (``harness.record.redact``: key-shaped tokens, Bearer credentials).
- :func:`reply_text`: the text the call returned, bounded and redacted, for reports.
- :func:`wire_attempts`: how many model-call attempts reached the server's wire, for
  the ``accounting`` check (a client that claims 3 attempts when 1 reached the server
  counts retries it never made); endpoint probes and idle connections are none.
- :func:`cut_by_peer`: the requests whose connection the client closed before their
  response was done -- what a killed attempt looks like from the server's side.

Pure functions over the target's report and the server's records and timeline.

Not here: the child side (``harness.targets.runtime.protocol.describe_chain``), the checks
(``harness.contract.verdict``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.apis import APIS
from harness.record.redact import redact_text

__all__ = [
    "MAX_CHAIN",
    "MAX_CHAIN_MESSAGE_CHARS",
    "MAX_REPLY_CHARS",
    "cause_chain",
    "cut_by_peer",
    "reply_text",
    "wire_attempts",
    "wrapped_types",
]

#: Exceptions kept per chain (the error and what it came from), and characters each.
MAX_CHAIN = 6
MAX_CHAIN_MESSAGE_CHARS = 200
#: Characters of the returned text kept in the reports.
MAX_REPLY_CHARS = 500


def cause_chain(
    report: Mapping[str, Any] | None, *, secrets: Sequence[str] = ()
) -> tuple[dict[str, str], ...]:
    """The exception chain behind the case's outcome (empty when there is none)."""
    if not report:
        return ()
    raw: Any = report.get("chain") if report.get("status") in ("raised", "crashed") else None
    if not raw and report.get("status") in ("raised", "crashed"):
        # a child that reports no chain (an older driver, a crash): what it did say
        raw = [
            {"type": str(report.get("error") or ""), "message": str(report.get("message") or "")}
        ]
        raw += [_from_text(c) for c in report.get("causes") or ()]
    caught = list((report.get("details") or {}).get("caught") or ())
    if not raw:
        raw = caught
    elif caught and caught[0] not in raw:
        # a wrapper the target raised over what its client caught (hermes's HermesNoReply)
        raw = [*raw, *({**c, "via": "caught"} if i == 0 else c for i, c in enumerate(caught))]
    out = []
    for item in list(raw)[:MAX_CHAIN]:
        if not isinstance(item, Mapping):
            item = _from_text(str(item))
        out.append(
            {
                "type": str(item.get("type") or "?")[:80],
                "message": redact_text(str(item.get("message") or ""), secrets)[
                    :MAX_CHAIN_MESSAGE_CHARS
                ],
                "via": str(item.get("via") or ("raised" if not out else "cause")),
            }
        )
    return tuple(out)


def wrapped_types(chain: Sequence[Mapping[str, str]]) -> tuple[str, ...]:
    """The classes the raised error was explicitly made from (``raise Wrapper(...) from
    exc``, link after link), outermost first. An exception met while handling another
    (``context``) is not one: ``except KeyError: raise ConfigError`` is ordinary control
    flow, while an agent's ``raise AgentGenerationError(...) from e`` over a TypeError
    reports the crash under another name."""
    out = []
    for link in chain[1:]:
        if link.get("via") != "cause":
            break
        out.append(str(link.get("type") or ""))
    return tuple(out)


def reply_text(report: Mapping[str, Any] | None, *, secrets: Sequence[str] = ()) -> str | None:
    """The returned text (None: the call did not return), bounded and redacted."""
    if not report or report.get("status") != "returned":
        return None
    text = redact_text(str(report.get("text") or ""), secrets)
    if len(text) > MAX_REPLY_CHARS:
        return text[:MAX_REPLY_CHARS] + f"... ({len(text)} characters)"
    return text


def wire_attempts(records: Sequence[Any], timeline: Sequence[Mapping[str, Any]]) -> int:
    """Model-call attempts that reached the server: each request to an API route it
    read (``records`` may hold every path; a probe such as ``GET /v1/models`` is no
    attempt), plus one for each model-call connection the server closed first (a client
    may have written its next attempt onto it), plus one for each connection that
    carried no request head where that is an attempt a fault ate: bytes came that never
    made a whole head (an upload stalled before it), or nothing came while the client
    was abandoning model-call attempts (a request of the case cut by the client: a
    deadline that fires between connect and write leaves just such a connection). A
    connection that carried only probes is never an attempt, nor one that carried
    nothing in a case whose client abandoned none (an idle pre-opened connection)."""
    calls = [r for r in records if getattr(r, "api", None) in APIS]
    with_request = {getattr(r, "connection", None) for r in records}
    with_call = {getattr(r, "connection", None) for r in calls}
    server = [e for e in timeline if e.get("source") is None and e.get("conn") is not None]
    headed = {e["conn"] for e in server if e.get("kind") == "request_head"}
    headless = {e["conn"] for e in server} - with_request - headed
    brought = {e["conn"] for e in server if int((e.get("detail") or {}).get("bytes_in") or 0)}
    abandoning = bool(cut_by_peer(calls, server))
    eaten = headless if abandoning else headless & brought
    return len(calls) + len(eaten) + len(_closed_by_server(server) & with_call)


def cut_by_peer(records: Sequence[Any], timeline: Sequence[Mapping[str, Any]]) -> list[Any]:
    """The index of each request whose connection the peer closed (FIN, RST, or gone
    while the server held it) before the server had recorded that request's
    ``response_done``: an attempt the client gave up on. A response the server ended
    itself (a fault's cut, a close-delimited body) is not one."""
    done: dict[Any, float] = {}  # request -> when its response was done
    gone: dict[Any, float] = {}  # conn -> when the peer went
    for e in timeline:
        kind, conn, t = e.get("kind"), e.get("conn"), float(e.get("t", 0.0))
        if kind == "response_done":
            done.setdefault(e.get("request"), t)
        elif conn not in gone and (
            kind in ("peer_closed", "peer_reset")
            or (kind == "closed" and (e.get("detail") or {}).get("reason") == "peer gone")
        ):
            gone[conn] = t
    cut = []
    for r in records:
        index, conn = getattr(r, "index", None), getattr(r, "connection", None)
        went = gone.get(conn)
        if went is None or went < float(getattr(r, "t_start", 0.0)):
            continue  # the peer stayed, or went before this request (an earlier one's)
        if index not in done or went < done[index]:
            cut.append(index)
    return cut


def _closed_by_server(timeline: Sequence[Mapping[str, Any]]) -> set[Any]:
    """Connections the server closed first (not after the client's own FIN or RST)."""
    peer_first: set[Any] = set()
    closed: set[Any] = set()
    for e in timeline:
        conn, kind = e.get("conn"), e.get("kind")
        if kind in ("peer_closed", "peer_reset"):
            peer_first.add(conn)
        elif kind == "closed" and conn not in peer_first:
            closed.add(conn)
    return closed


def _from_text(text: str) -> dict[str, str]:
    kind, sep, message = str(text).partition(": ")
    return {"type": kind, "message": message} if sep else {"type": "", "message": text}
