"""The ``hermes+guard`` side of hermes's ``HERMES_HTTP_CLIENT_FACTORY`` hook: hermes's
primary OpenAI and Anthropic clients get ``harness.guard.http_client`` (the reference
stack as their httpx transport), with the job's deadlines.

Runs inside hermes-agent's virtualenv, a module of the driver (``--child --guard``), in
a hermes patched with ``harness/targets/hermes/patches/hermes-http-client-factory.patch`` (``ci/setup`` builds that copy of the
venv). :func:`install` puts the harness's source root at the *end* of ``sys.path`` (so
no hermes module is shadowed; ``harness.guard`` needs only the standard library, httpx
and the SDKs hermes already has), imports the guard before the runner's leak baseline
and names :func:`http_client` in the hook's variable; :func:`configure` gives each job's
reference-client settings (scenario seconds, scaled as the ``reference`` target scales
them). hermes keeps everything else: its own watchdogs, retries and backoff.

Not here: the hook in hermes (the patch), the guard (``harness.guard``).
"""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["FACTORY_ENV", "configure", "http_client", "install"]

#: The patch's variable: "package.module:function" hermes calls for each client.
FACTORY_ENV = "HERMES_HTTP_CLIENT_FACTORY"


def _source_root() -> str:
    """The directory holding the ``harness`` package this file belongs to."""
    path = os.path.dirname(os.path.abspath(__file__))
    while not os.path.isfile(os.path.join(path, "harness", "__init__.py")):
        parent = os.path.dirname(path)
        if parent == path:
            raise RuntimeError(f"{__file__} is not inside the harness package")
        path = parent
    return path


_state: dict[str, Any] = {"settings": None, "built": []}


def install() -> None:
    """Make ``harness.guard`` importable and name :func:`http_client` as hermes's hook.
    Raises RuntimeError when this hermes has no hook (the patch is not applied)."""
    try:
        import agent.http_client_factory  # noqa: F401, PLC0415 - the patched hermes
    except ImportError as exc:
        raise RuntimeError(
            "this hermes has no HERMES_HTTP_CLIENT_FACTORY hook "
            "(patches/hermes-http-client-factory.patch is not applied; run ci/setup)"
        ) from exc
    root = _source_root()
    if root not in sys.path:
        sys.path.append(root)
    from harness import guard  # noqa: F401, PLC0415 - imported before the leak baseline
    from harness.client.settings import ClientSettings  # noqa: PLC0415

    _state["settings"] = ClientSettings()
    os.environ[FACTORY_ENV] = f"{__name__}:http_client"


def configure(settings: dict[str, Any], time_scale: float) -> None:
    """The guard settings for the next job: ``settings`` over the defaults, scaled."""
    from harness.client.settings import ClientSettings  # noqa: PLC0415
    from harness.targets.clients.reference import scaled_settings  # noqa: PLC0415

    _state["settings"] = ClientSettings(**scaled_settings(ClientSettings(), settings, time_scale))


def http_client(*, sdk: str, base_url: str = "", **facts: Any) -> Any:
    """hermes's hook: the guarded ``http_client`` for ``sdk`` ("openai" or "anthropic").
    ``facts`` (hermes's ``verify``, ``timeout``) are not used: the harness's servers are
    plain HTTP on loopback and the SDK passes its timeout per request."""
    import importlib  # noqa: PLC0415

    from harness import guard  # noqa: PLC0415

    if sdk not in ("openai", "anthropic"):
        return None  # a client the guard does not know: hermes's default
    return guard.http_client(importlib.import_module(sdk), settings=_state["settings"])
