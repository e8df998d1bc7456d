"""The ``dead_peer_bound`` check: a silent/dead-peer fault: the posture read from the
client's sockets notices a dead peer within the bound (``harness.contract.dead_peer``; not
applicable -- not failed -- where the posture cannot be read).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.contract.check import Check, register

if TYPE_CHECKING:
    from harness.contract.derive import Contract
    from harness.contract.facts import Facts

__all__ = ["DeadPeerBound"]


@register
class DeadPeerBound(Check):
    name = "dead_peer_bound"
    rank = 150
    fails_when = (
        "on a silent or dead-peer scenario, the transport of the sockets that carried the model call "
        "would not notice a really dead peer (keepalive, TCP_USER_TIMEOUT) within the bound "
        "(`[contract] dead_peer_bound_s`, real seconds)"
    )
    needs = (
        "the socket posture read from the client's live sockets (`harness/posture/`, "
        "`harness/contract/dead_peer.py`), each socket tied by its port to the server connection it "
        "is and what that carried (`harness/posture/carried.py`: a request to an API route, a probe, "
        "nothing); the worst model-call socket is judged, probe and idle sockets are counted apart "
        "(`apart`), and so is a model-call socket whose options were read before its first request "
        "head arrived (`model_call_early`: the client may not have set them yet); where no socket "
        "can be tied (through Toxiproxy or a gateway) every one is judged; unknown posture is "
        "`not_applicable`, never a fail"
    )
    shown_in = (
        "`posture` in the JSON report (per connection: `carried`, `server_conn`, `requests` with "
        "each request's index and path); `harness posture`"
    )

    def applies(self, contract: Contract, facts: Facts) -> bool:
        return facts.dead_peer is not None

    def holds(self, contract: Contract, facts: Facts) -> bool:
        return facts.dead_peer is None or not facts.dead_peer.failed

    def evidence(self, contract: Contract, facts: Facts) -> str:
        check = facts.dead_peer
        if check is None:
            return self.name
        return check.reason or f"no dead-peer bound within {check.limit_s:g} s ({check.mode})"
