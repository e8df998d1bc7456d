"""The three servers of this package, each a fault server with a different reply source.

    with FaultProxy("https://openrouter.ai/api/v1", script) as proxy:
        client = OpenAI(base_url=proxy.base_url, api_key=key)   # faults on real traffic
    with Recorder("https://openrouter.ai/api/v1", out_dir="tapes") as rec:
        ...                                                      # one cassette per exchange
    with replay_server(read_cassettes(["tapes"]), script) as srv:
        ...                                                      # byte-exact replay

Each binds 127.0.0.1 only (``port=0``: a free port). The proxy's and the recorder's
``base_url`` is their own origin plus the upstream's path, standing in for the
upstream's base URL. ``timeline()``, ``requests()`` and ``wait_for()`` are the fault
server's.

Not here: the reply sources (``proxy.py``, ``replay.py``), the command line (``cli_*``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from harness.faults import FaultScript
from harness.record.cassette import Cassette
from harness.record.edits import check_script
from harness.record.proxy import CassetteRecorder, ProxySource
from harness.record.replay import ReplaySource
from harness.record.upstream import Upstream
from harness.server.fault_server import DEFAULT_HOST, FaultServer

__all__ = ["FaultProxy", "Recorder", "replay_server"]


class FaultProxy(FaultServer):
    """An SSE-aware fault proxy in front of ``upstream`` (a base URL): a fault server
    whose replies come from the upstream, its script applied to them."""

    def __init__(
        self,
        upstream: str,
        script: FaultScript | None = None,
        *,
        port: int = 0,
        time_scale: float = 1.0,
        out_dir: str | Path | None = None,
    ) -> None:
        if script is not None:
            check_script(script)  # FaultSpecError names the rule and the action
        self.upstream = Upstream(upstream)
        self.recorder = (
            CassetteRecorder(out_dir, upstream=self.upstream.base_url)
            if out_dir is not None
            else None
        )
        self.source = ProxySource(self.upstream, recorder=self.recorder)
        # stopping the server closes the source's httpx client on the server's loop
        super().__init__(
            script, host=DEFAULT_HOST, port=port, time_scale=time_scale, reply_source=self.source
        )

    @property
    def base_url(self) -> str:
        return self.url + self.upstream.path

    def load(self, script: FaultScript, *, time_scale: float | None = None) -> None:
        check_script(script)
        super().load(script, time_scale=time_scale)


class Recorder(FaultProxy):
    """A recording proxy: forwards everything, writes one cassette per exchange."""

    def __init__(self, upstream: str, *, out_dir: str | Path, port: int = 0) -> None:
        super().__init__(upstream, None, port=port, out_dir=out_dir)

    @property
    def written(self) -> list[Path]:
        assert self.recorder is not None
        return self.recorder.written

    def wait_written(self, count: int, *, timeout: float = 10.0) -> list[Path]:
        assert self.recorder is not None
        return self.recorder.wait_written(count, timeout=timeout)


def replay_server(
    cassettes: Sequence[Cassette],
    script: FaultScript | None = None,
    *,
    port: int = 0,
    time_scale: float = 1.0,
) -> FaultServer:
    """A fault server answering from ``cassettes`` (not started)."""
    if script is not None:
        check_script(script)
    source = ReplaySource(cassettes, time_scale=time_scale)
    return FaultServer(
        script, host=DEFAULT_HOST, port=port, time_scale=time_scale, reply_source=source
    )
