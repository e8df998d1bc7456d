"""Socket posture: the options and kernel state of a target's live client sockets.

A fact beside leaks and accounting, read from the system, never from what the
client's code declares: which of SO_KEEPALIVE, TCP_KEEPIDLE / TCP_KEEPINTVL /
TCP_KEEPCNT, TCP_USER_TIMEOUT and TCP_NODELAY each socket the target process tree
opened to the fault server (or relay, Toxiproxy, gateway) actually carries, with the
kernel's view of it (state, pending timer, retransmissions, queues).

    platform.py  syscall and option numbers per machine
    facts.py     the data (``SocketPosture``) and what it implies (``notice_bound``): pure
    reader.py    one read of a process tree: /proc + pidfd_getfd + getsockopt
    sampler.py   the reads of one case, prompted by the server's timeline
    carried.py   each socket tied by its port to what it carried (model call, probe,
                 nothing) and which ones a judgement reads: pure

Not here: the contract check (``harness.contract.dead_peer``), ``harness posture``
(``harness.cli.posture``).
"""

from harness.posture.facts import (
    UNKNOWN,
    Bound,
    Keepalive,
    SocketPosture,
    describe,
    notice_bound,
    worst_bound,
)
from harness.posture.sampler import Posture, PostureSampler, sampling

__all__ = [
    "UNKNOWN",
    "Bound",
    "Keepalive",
    "Posture",
    "PostureSampler",
    "SocketPosture",
    "describe",
    "notice_bound",
    "sampling",
    "worst_bound",
]
