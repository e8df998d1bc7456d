"""``status``: answer with an HTTP error instead of the reply."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from harness.faults.base import Action, FaultSpecError, Site, check_duration, register


@register
@dataclass(frozen=True)
class Status(Action):
    """Answer with HTTP ``code`` and the API's error body (or ``body`` verbatim), after
    the request body is read; the connection stays usable.

    ``retry_after_s`` sets a ``Retry-After`` header in whole seconds; ``retry_after``
    sets it verbatim (e.g. an HTTP date); ``content_type`` lets a 502 be an HTML page.
    """

    name: ClassVar[str] = "status"
    phases: ClassVar[tuple[str, ...]] = ("accept", "request")
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
            headers.append(("retry-after", str(int(round(self.retry_after_s)))))
        elif self.retry_after is not None:
            headers.append(("retry-after", self.retry_after))
        await site.respond(self.code, body, self.content_type, headers)
