"""What changed underneath a case that ``harness report diff`` found different: the
exception chain's root cause, the transport facts, and the evidence of newly failed checks.

Read from one JSON result entry, field by field (a field missing from an older report is
unknown, never a difference):

* ``chain``: the exception chain behind an error outcome, the error first
  (``{type, message, via}``); its **root cause** is the last link -- the innermost
  ``__cause__`` / ``__context__``, or what hermes caught and logged before it became the
  reply. Two roots are the same when they differ only in what varies from run to run:
  long numbers (a port, a pid) and quoted or bracketed values (the cut arguments of a
  tool call, a path).
* ``details.transport``: the client's own transport settings as its target reported them
  (timeouts, pool limits, which http client), flattened to ``timeout.read = 600.0``.
* ``posture``: the socket options read from each sampled client socket; shown as the set
  of distinct option profiles (``keepalive 30/10x3``), context only -- which sockets a
  run sampled varies, so a profile difference alone never makes a case changed.
* ``evidence``: one sentence per failed check.

:func:`summarise` folds the changed cases into one line per cause ("28 cases: new
RuntimeError: Cannot send a request, as the client has been closed"), causes that differ
only in their numbers folded together.

Not here: deciding which cases changed (``harness.report.diff``), rendering
(``harness.report.diff_markdown``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Cause",
    "Underneath",
    "posture_profiles",
    "root_cause",
    "summarise",
    "transport_facts",
    "underneath",
]

#: A root cause's text is cut here in the diff (the JSON report keeps the chain).
MAX_CAUSE_CHARS = 160
#: What varies between two runs of one build inside one error text (see the module doc).
_DIGITS = re.compile(r"\d+")
_VARIABLE = re.compile(r"\d{4,}|\{[^{}]*\}|\[[^\[\]]*\]|'[^']*'|\"[^\"]*\"")


def root_cause(entry: Mapping[str, Any]) -> str | None:
    """``Type: message`` of the innermost link of the entry's chain (None: no chain)."""
    chain = entry.get("chain")
    if not isinstance(chain, list) or not chain or not isinstance(chain[-1], Mapping):
        return None
    link = chain[-1]
    text = f"{link.get('type') or '?'}: {link.get('message') or ''}".rstrip(": ")
    return text[:MAX_CAUSE_CHARS]


def transport_facts(entry: Mapping[str, Any]) -> dict[str, str]:
    """``details.transport`` flattened to dotted keys, each value as text."""
    details = entry.get("details")
    transport = details.get("transport") if isinstance(details, Mapping) else None
    out: dict[str, str] = {}
    if isinstance(transport, Mapping):
        _flatten(transport, "", out)
    return out


def posture_profiles(entry: Mapping[str, Any]) -> tuple[str, ...]:
    """The distinct socket-option profiles of the sampled client sockets, sorted."""
    posture = entry.get("posture")
    if not isinstance(posture, list):
        return ()
    return tuple(sorted({_profile(p) for p in posture if isinstance(p, Mapping)}))


@dataclass(frozen=True)
class Underneath:
    """What differs under one changed case (each part empty when nothing does)."""

    #: (base root cause, head root cause) when the two differ beyond their numbers.
    root: tuple[str | None, str | None] | None = None
    #: ``key: base → head`` for each transport fact that differs.
    transport: tuple[str, ...] = ()
    #: (base profiles, head profiles) of the client sockets' options, when they differ.
    sockets: tuple[tuple[str, ...], tuple[str, ...]] | None = None
    #: ``(check, evidence)`` for each check the head newly failed.
    evidence: tuple[tuple[str, str], ...] = ()

    @property
    def transport_changed(self) -> bool:
        return bool(self.transport)

    def lines(self) -> list[str]:
        """One short line per fact, for a report."""
        out = []
        if self.root is not None:
            base, head = self.root
            if base is None:
                out.append(f"new cause: {head}")
            elif head is None:
                out.append(f"cause gone: {base}")
            else:
                out.append(f"cause: {base} → {head}")
        out += [f"transport {t}" for t in self.transport]
        if self.sockets is not None:
            base_p, head_p = self.sockets
            out.append(f"sockets: {', '.join(base_p) or '-'} → {', '.join(head_p) or '-'}")
        out += [f"`{check}`: {text}" for check, text in self.evidence]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "root_cause": None
            if self.root is None
            else {"base": self.root[0], "head": self.root[1]},
            "transport": list(self.transport),
            "sockets": None
            if self.sockets is None
            else {"base": list(self.sockets[0]), "head": list(self.sockets[1])},
            "evidence": dict(self.evidence),
        }


def underneath(
    base: Mapping[str, Any], head: Mapping[str, Any], newly_failed: Sequence[str]
) -> Underneath:
    """What differs under a case between its ``base`` and ``head`` JSON entries."""
    b_root, h_root = root_cause(base), root_cause(head)
    root = None
    if (b_root, h_root) != (None, None) and _key(b_root) != _key(h_root):
        root = (b_root, h_root)
    b_tr, h_tr = transport_facts(base), transport_facts(head)
    transport = tuple(
        f"{k}: {b_tr.get(k, '-')} → {h_tr.get(k, '-')}"
        for k in sorted(set(b_tr) | set(h_tr))
        if b_tr and h_tr and b_tr.get(k) != h_tr.get(k)
    )
    b_sock, h_sock = posture_profiles(base), posture_profiles(head)
    sockets = (b_sock, h_sock) if b_sock and h_sock and b_sock != h_sock else None
    evidence = head.get("evidence")
    evidence = evidence if isinstance(evidence, Mapping) else {}
    return Underneath(
        root=root,
        transport=transport,
        sockets=sockets,
        evidence=tuple((c, str(evidence[c])[:300]) for c in newly_failed if c in evidence),
    )


@dataclass(frozen=True)
class Cause:
    """One cause shared by changed cases: its text and the cases it is under."""

    text: str
    cases: tuple[str, ...]

    def line(self) -> str:
        n = len(self.cases)
        return f"{n} case{'' if n == 1 else 's'}: {self.text}"

    def to_dict(self) -> dict[str, Any]:
        return {"cause": self.text, "cases": len(self.cases), "scenarios": list(self.cases)}


def summarise(changed: Iterable[tuple[str, Underneath]]) -> list[Cause]:
    """One :class:`Cause` per distinct new or vanished root cause and per transport
    change, most cases first (ties by text)."""
    groups: dict[str, tuple[str, list[str]]] = {}

    def add(key: str, text: str, case: str) -> None:
        groups.setdefault(key, (text, []))[1].append(case)

    for case, under in changed:
        if under.root is not None:
            base, head = under.root
            if head is not None:
                add("new " + _group(head), f"new {head}", case)
            if base is not None:
                add("gone " + _group(base), f"gone {base}", case)
        for fact in under.transport:
            add("transport " + fact, f"transport {fact}", case)
    causes = [Cause(text, tuple(cases)) for text, cases in groups.values()]
    return sorted(causes, key=lambda c: (-len(c.cases), c.text))


def _key(text: str | None) -> str:
    return "" if text is None else _VARIABLE.sub("_", text)


def _group(text: str) -> str:
    """The summary folds causes that differ in any number ("received 40 bytes" and
    "received 842 bytes"); the first one seen is shown."""
    return _key(_DIGITS.sub("0", text))


def _flatten(value: Mapping[str, Any], prefix: str, out: dict[str, str]) -> None:
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, Mapping):
            _flatten(item, name + ".", out)
        else:
            out[name] = "none" if item is None else str(item)


def _profile(sock: Mapping[str, Any]) -> str:
    keepalive = sock.get("keepalive")
    keepalive = keepalive if isinstance(keepalive, Mapping) else {}
    parts = []
    if keepalive.get("enabled"):
        parts.append(
            f"keepalive {_num(keepalive.get('idle_s'))}/{_num(keepalive.get('interval_s'))}"
            f"x{keepalive.get('count')}"
        )
    else:
        parts.append("keepalive off")
    timeout = sock.get("user_timeout_s")
    parts.append("user-timeout off" if not timeout else f"user-timeout {_num(timeout)}")
    return " ".join(parts)


def _num(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
