"""How the guard's verdicts reach the SDK: as the HTTP library's own transport errors.

The SDK decides what to do with a transport error by its httpx class (retry it, wrap
it as ``APIConnectionError`` / ``APITimeoutError``, or let it out of a stream
iterator), so the guard raises a *subclass* of the class the SDK already handles::

    a deadline fired (first byte, idle, stale, ceiling)   GuardReadTimeout(<lib>.ReadTimeout)
    the body ended without its terminal marker          GuardRemoteProtocolError(<lib>.RemoteProtocolError)
    the transport failed underneath (RST, FIN, ETIMEDOUT) Guard<Original>(<the original's class>)

Each carries the reference stack's typed error (``FirstByteTimeout``, ``TruncatedStream``,
``DeadPeer``, ...) as ``__cause__`` and as ``.typed``; :func:`typed_cause` finds it
again from whatever the SDK raised. ``<lib>`` is the HTTP library of the SDK (httpx
for openai 2.x, httpx2 for openai 3.x and anthropic): :func:`library_of`.

Not here: the error tree itself (``harness.client.errors``).
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from harness.client.errors import HarnessError

__all__ = ["guard_error", "library_of", "typed_cause"]

_SUBCLASSES: dict[type[BaseException], type[BaseException]] = {}


def library_of(sdk: Any = None) -> ModuleType:
    """The HTTP library an SDK module (``openai``, ``anthropic``) is built on, read from
    its ``DefaultHttpxClient`` base class; None: the one ``harness.client`` uses."""
    if sdk is None:
        from harness.client.compat import httpx

        return httpx
    client_cls = getattr(sdk, "DefaultHttpxClient", None)
    for base in getattr(client_cls, "__mro__", ())[1:]:
        root = base.__module__.split(".", 1)[0]
        if root in ("httpx", "httpx2") and base.__name__ == "Client":
            return importlib.import_module(root)
    raise ValueError(
        f"sdk: {getattr(sdk, '__name__', sdk)!r} is not valid; allowed: an SDK module"
        " built on httpx or httpx2 (with DefaultHttpxClient), e.g. openai or anthropic"
    )


def guard_error(
    base: type[BaseException], typed: HarnessError, request: Any = None
) -> BaseException:
    """An instance of ``Guard<base>`` with ``typed`` as its cause (raise it as is)."""
    cls = _SUBCLASSES.get(base)
    if cls is None:
        cls = type(
            f"Guard{base.__name__}",
            (base,),
            {"__doc__": f"{base.__name__} raised by harness.guard; ``.typed`` says why."},
        )
        _SUBCLASSES[base] = cls
    try:
        err = cls(str(typed), request=request)
    except TypeError:  # a base without the ``request`` keyword
        err = cls(str(typed))
    err.typed = typed  # type: ignore[attr-defined]
    err.__cause__ = typed
    return err


def typed_cause(exc: BaseException | None) -> HarnessError | None:
    """The reference stack's typed error in ``exc``'s cause chain, if the guard put one there."""
    seen = 0
    while exc is not None and seen < 16:
        if isinstance(exc, HarnessError):
            return exc
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None
