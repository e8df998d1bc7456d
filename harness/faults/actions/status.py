"""``status``: answer with an HTTP error instead of the reply."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from harness.faults.base import Action, FaultSpecError, Site, check_duration, register


def retry_after_headers(delay_s: float) -> list[tuple[str, str]]:
    """The two headers that ask for ``delay_s`` real seconds of wait."""
    return [
        ("retry-after-ms", str(max(int(round(delay_s * 1000)), 0))),
        ("retry-after", str(math.ceil(delay_s))),
    ]


@register
@dataclass(frozen=True)
class Status(Action):
    """Answer with HTTP ``code`` and the API's error body (or ``body`` verbatim), after
    the request body is read; the connection stays usable.

    ``retry_after_s`` (scenario seconds, scaled) is sent twice: exactly, in milliseconds,
    as ``retry-after-ms`` (both official SDKs read it first), and as ``Retry-After`` in
    whole seconds rounded up, for clients that read only that (so waiting it out is never
    too early). Rounding alone would make a fast run send ``Retry-After: 0``, and no retry
    could then be judged early. ``retry_after`` sets ``Retry-After`` verbatim (e.g. an HTTP
    date); ``content_type`` lets a 502 be an HTML page.
    """

    name: ClassVar[str] = "status"
    phases: ClassVar[tuple[str, ...]] = ("accept", "request")
    answers_status: ClassVar[bool] = True
    code: int = 500
    message: str = "injected error"
    body: str | None = None
    content_type: str = "application/json"
    retry_after_s: float | None = None
    retry_after: str | None = None
    headers: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        code = self.code
        if not isinstance(code, int) or isinstance(code, bool) or not 400 <= code <= 599:
            raise FaultSpecError("code", code, "an HTTP error status 400..599")
        check_duration("retry_after_s", self.retry_after_s, optional=True)
        if self.retry_after_s is not None and self.retry_after is not None:
            raise FaultSpecError(
                "retry_after", self.retry_after, "only one of retry_after_s, retry_after"
            )
        headers = self.headers
        if isinstance(headers, Mapping):
            headers = tuple((str(k), str(v)) for k, v in headers.items())
        for pair in headers:
            if not (isinstance(pair, tuple | list) and len(pair) == 2):
                raise FaultSpecError("headers", self.headers, "a table of header name = value")
        # lists of pairs (from to_dict / JSON) become the same tuples a table gives
        object.__setattr__(self, "headers", tuple((str(k), str(v)) for k, v in headers))

    async def before_body(self, site: Site) -> bool:
        return False  # answered once the body is read, like a real provider

    async def fire(self, site: Site) -> None:
        body = (
            self.body.encode("utf-8")
            if self.body is not None
            else site.error_body(self.code, self.message)
        )
        headers = list(self.headers)
        if self.retry_after_s is not None:
            headers += retry_after_headers(self.retry_after_s)
        elif self.retry_after is not None:
            headers.append(("retry-after", self.retry_after))
        await site.respond(self.code, body, self.content_type, headers)
