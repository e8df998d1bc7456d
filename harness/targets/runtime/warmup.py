"""Warm a target's client up before the runner's baseline: one healthy call per API shape.

A fresh Python process pays a large one-time cost on its first SDK call (lazy imports,
pydantic model building, httpx/h11 setup): ~100 ms idle, several hundred ms on a busy
2-core machine. At a fast time scale that is longer than a scaled deadline (5 s x 0.01
= 50 ms), so a cold first call would be killed by its own start-up, not by the fault.
``Target.prepare()`` calls :func:`warm_up` so that cost is paid before ``ready``,
against a private fault server with no faults, which is stopped again (no thread or
socket survives into the baseline).

:func:`warm_up_target` is the usual case: the target's own ``call`` on a
:func:`warm_up_job` per shape.

Not here: the calls themselves (each target passes its own).
"""

from __future__ import annotations

from collections.abc import Callable

from harness.targets.base import EventLog, Job, Target

__all__ = ["WARM_UP_SHAPES", "warm_up", "warm_up_job", "warm_up_target"]

#: (api, stream) pairs exercised once each.
WARM_UP_SHAPES: tuple[tuple[str, bool], ...] = (
    ("chat", True),
    ("responses", True),
    ("chat", False),
    ("responses", False),
    ("messages", True),
    ("messages", False),
)


def warm_up(call: Callable[[str, str, bool], object], *, apis: tuple[str, ...]) -> None:
    """Run ``call(base_url, api, stream)`` once per shape whose api is in ``apis``."""
    from harness.server import FaultServer

    with FaultServer() as server:
        for api, stream in WARM_UP_SHAPES:
            if api in apis:
                call(server.base_url, api, stream)


def warm_up_target(target: Target, *, apis: tuple[str, ...]) -> None:
    """:func:`warm_up` with ``target.call`` on a :func:`warm_up_job` per shape."""
    warm_up(
        lambda url, api, stream: target.call(warm_up_job(url, api, stream), EventLog()), apis=apis
    )


def warm_up_job(base_url: str, api: str, stream: bool) -> Job:
    """The healthy one-message job a warm-up call makes."""
    return Job(
        base_url=base_url,
        api=api,
        stream=stream,
        messages=({"role": "user", "content": "warm up"},),
    )
