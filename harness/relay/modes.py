"""Relay modes as strategies: one small type per mode, registered by name.

A mode answers three questions for every open connection, and can be switched at
runtime (``Relay.set_mode``):

    pass           relay bytes both ways; a FIN or RST on one leg is passed to the other
    swallow_close  as pass, but an upstream FIN (or RST) is swallowed: the upstream socket
                   is left in CLOSE_WAIT, the client leg is kept open and silent, bytes
                   from the client are dropped, until the client closes its leg
    idle_cut       as pass, but the client leg is cut (FIN, or RST with ``idle_cut_rst``)
                   after ``idle_cut_s`` with no bytes from upstream, as proxies with an
                   idle limit do
    hold           stop relaying both ways (nothing is read, so kernel buffers fill),
                   e.g. "hold at a scripted point"; switching back resumes

To add a mode: subclass :class:`RelayMode`, override what differs, add it to
:data:`MODE_TYPES`.

Not here: the connections the modes act on (``harness.relay.legs``).
"""

from __future__ import annotations

from typing import ClassVar, Protocol

__all__ = ["MODES", "MODE_TYPES", "Legs", "RelayMode"]


class Legs(Protocol):
    """What a mode may do to one relayed connection (``harness.relay.legs.Connection``)."""

    def forward_fin(self) -> None: ...
    def forward_rst(self) -> None: ...
    def swallow(self) -> None: ...


class RelayMode:
    """The default behaviour (``pass``): bytes flow, a closed upstream is passed on."""

    name: ClassVar[str] = "pass"
    #: False: nothing is read either way while the mode is on (kernel buffers fill).
    flowing: ClassVar[bool] = True
    #: True: the client leg is cut after ``idle_cut_s`` without bytes from upstream.
    cuts_idle: ClassVar[bool] = False
    #: True: the client's leg goes silent while open, the peer dead as the client sees it
    #: (always, or once the upstream closes); the dead-peer question is asked.
    silences: ClassVar[bool] = False

    def upstream_gone(self, legs: Legs, kind: str) -> None:
        """The upstream leg ended: ``kind`` is ``upstream_fin`` or ``reset``."""
        if kind == "reset":
            legs.forward_rst()
        else:
            legs.forward_fin()

    def describe(self, idle_cut_s: float) -> str:
        """The mode as the timeline's ``mode`` event shows it."""
        return self.name


class SwallowClose(RelayMode):
    name = "swallow_close"
    silences = True

    def upstream_gone(self, legs: Legs, kind: str) -> None:
        # The middlebox shape: do not close our upstream socket (it stays in
        # CLOSE_WAIT), tell the client nothing.
        legs.swallow()


class IdleCut(RelayMode):
    name = "idle_cut"
    cuts_idle = True

    def describe(self, idle_cut_s: float) -> str:
        return f"{self.name} idle_cut_s={idle_cut_s}"


class Hold(RelayMode):
    name = "hold"
    flowing = False
    silences = True


#: name -> the mode; the order is the one error messages list.
MODE_TYPES: dict[str, RelayMode] = {
    m.name: m for m in (RelayMode(), SwallowClose(), IdleCut(), Hold())
}
MODES = tuple(MODE_TYPES)
