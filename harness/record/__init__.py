"""Faults on real traffic: record, byte-exact replay, and an SSE-aware fault proxy.

Each is the fault server with another reply source (``FaultServer(reply_source=...)``):

- :class:`Recorder` (``harness record``): forwards to a real upstream and writes one
  cassette per exchange, credentials removed (``cassette.py`` documents the format);
- :func:`replay_server` / :class:`~harness.record.replay.ReplaySource`
  (``harness serve --cassette``): the recorded chunks at the recorded offsets, with
  faults at ``event:N`` / ``bytes:N`` of the recorded stream;
- :class:`FaultProxy` (``harness proxy``): the fault model applied per attempt to a live
  upstream's stream, parsed into SSE events as it arrives.

Not here: the fault server itself (``harness.server``), the fault model (``harness.faults``).
"""

from harness.record.cassette import Cassette, CassetteError, Chunk, read_cassette, read_cassettes
from harness.record.front import FaultProxy, Recorder, replay_server

__all__ = [
    "Cassette",
    "CassetteError",
    "Chunk",
    "FaultProxy",
    "Recorder",
    "read_cassette",
    "read_cassettes",
    "replay_server",
]
