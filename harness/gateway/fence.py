"""The fence between a gateway's jobs: what a request of an ended job gets instead of a
later job's fault server.

A LiteLLM proxy keeps serving a request after its client left (a target child killed at
the runner's ceiling, a client that gave up on its own deadline): it waits for the
upstream, and when the upstream leg is cut it retries (``num_retries`` 2, backing off
0.5-2 s). Its retry goes wherever the gateway's relay points by then, and a later job's
fault server would count the stray request as its own, and may spend a scripted
first-request fault on it (seen in CI on 2026-12-02: a killed child's request reached the
next job's server). So the gateway ends each job

* by answering the job's unanswered upstream legs in the provider's place with
  :data:`ANSWER`, an HTTP 400 that neither the OpenAI SDK (the status, and
  ``x-should-retry: false``) nor LiteLLM's Router (400 is not retryable) retries; legs that
  had a reply under way are closed, as before (nothing retries a started reply);
* by pointing the relay at a :class:`Fence` until the next job begins: a request
  arriving between jobs (a retry already backing off when its job ended) gets the same
  answer.

Stdlib only: it runs in LiteLLM's virtualenv, in the gateway process.

Not here: the relay's in-place answer (:meth:`harness.relay.Relay.close_connections`).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["ANSWER", "ANSWER_BODY", "Fence"]

#: What a request of an ended job is told (an OpenAI-shaped error body).
ANSWER_BODY: bytes = json.dumps(
    {
        "error": {
            "message": "harness gateway: this request's job has ended",
            "type": "invalid_request_error",
            "code": "job_ended",
        }
    }
).encode()

_HEADERS = (
    ("Content-Type", "application/json"),
    ("x-should-retry", "false"),
    ("Connection", "close"),
)

#: The whole HTTP/1.1 response the relay writes on an unanswered leg.
ANSWER: bytes = (
    "HTTP/1.1 400 Bad Request\r\n"
    + "".join(f"{name}: {value}\r\n" for name, value in _HEADERS)
    + f"Content-Length: {len(ANSWER_BODY)}\r\n\r\n"
).encode("ascii") + ANSWER_BODY


class Fence:
    """An HTTP server on a free loopback port answering every request with
    :data:`ANSWER`; :attr:`answered` counts them. A context manager; :meth:`close`
    stops it."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self._lock = threading.Lock()
        self._answered = 0
        self._server = ThreadingHTTPServer((host, 0), self._handler_type())
        self._server.daemon_threads = True
        self.address: tuple[str, int] = (host, self._server.server_address[1])
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="gateway-fence", daemon=True
        )
        self._thread.start()

    @property
    def answered(self) -> int:
        with self._lock:
            return self._answered

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> Fence:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _count(self) -> None:
        with self._lock:
            self._answered += 1

    def _handler_type(self) -> type[BaseHTTPRequestHandler]:
        fence = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                # Read the request's body first: a client still writing it when the
                # answer and the close come would see a reset, which it retries.
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                # Counted before it is written: whoever reads the answer finds it counted.
                fence._count()
                self.wfile.write(ANSWER)  # the very bytes the relay answers with
                self.close_connection = True

            do_POST = do_GET = do_PUT = do_DELETE = do_PATCH = _answer

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass  # the count is the record; stderr is the proxy's log

        return Handler
