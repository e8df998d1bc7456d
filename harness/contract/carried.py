"""Did a later model call carry an earlier call's cut reply as the model's whole turn?

An agent that took a cut stream for a complete one shows it on the wire: its next model
call (a continuation) carries the reply it got as an assistant turn, followed by more
turns (a tool result, the user's next prompt). Where that text is a strict prefix of
the reply the server meant to send, the client went on with a partial answer as if it
were whole: ``truncated_as_complete``, even when the job's final answer (another call's)
came back whole. Claims nothing where the assistant turn ends the conversation (a
prefill: the model is asked to go on from it) or where its text is not a prefix of the
reply (rewritten, annotated, or whole).

Pure: the server's request records, typed (``harness.contract.observation.Request``:
each one's conversation and lineage), no clock.

Not here: placing requests in their conversation (``harness.apis.lineage``), the outcome
it changes (``harness.judge``).
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.apis.lineage import said
from harness.contract.observation import Request

__all__ = ["carried_cut"]


def carried_cut(requests: Sequence[Request]) -> str | None:
    """How a continuation carried an earlier request's cut reply as whole (None: none did)."""
    by_index = {q.index: q for q in requests}
    for q in requests:
        lineage, conv = q.lineage, q.conversation
        if lineage is None or lineage.kind != "continuation" or conv is None:
            continue
        earlier = by_index.get(lineage.of) if lineage.of is not None else None
        meant = (earlier.expected_text or "").strip() if earlier is not None else ""
        if earlier is None or not meant:
            continue
        appended = conv.turns[len(conv.turns) - len(lineage.appended) :]
        for turn in appended[:-1]:  # the last one: a prefill, or the newest prompt
            if turn.role != "assistant" or turn.kind != "text":
                continue
            got = said(turn.key).strip()
            if got and got != meant and meant.startswith(got):
                return (
                    f"request {q.index} carried request {earlier.index}'s reply cut at "
                    f"{len(got)} of {len(meant)} characters as the model's whole turn"
                )
    return None
