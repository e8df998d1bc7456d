"""``swallow_close``: relay only; the upstream closed, the client leg is kept silent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from harness.faults.base import Action, register


@register
@dataclass(frozen=True)
class SwallowClose(Action):
    """Relay only: the upstream closed; keep the client leg open and silent.

    The fault server rejects it. In a scenario (``harness.scenario``) a rule with this
    action is played by the server closing (``fin``) at the rule's phase behind a relay
    in ``swallow_close`` mode (``harness.relay``): the same as writing both by hand.
    """

    name: ClassVar[str] = "swallow_close"
    backends: ClassVar[tuple[str, ...]] = ("relay",)
    relay_mode: ClassVar[str | None] = "swallow_close"
