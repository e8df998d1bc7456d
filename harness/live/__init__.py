"""The opt-in live tier: real provider round trips judged strictly, and their dry run.

Modules (each with one job):

- ``sentinels``  where to look for failure texts: replies, chunks, errors, log records
                 (the list and the matcher are ``harness.sentinels``, one layer down:
                 the runner uses them too)
- ``redact``     secret redaction for output, log records, reports and errors
- ``config``     provider config and cost/time bounds from ``harness.environment``
- ``cases``      the chats, their results and the strict judge
- ``session``    the checks through the in-process reference client: sequential echo
                 chats across a client rebuild
- ``targets``    the same checks through any target in its child process
- ``dry_run``    the same checks against the embedded fault server (default CI)
- ``report``     console, JSON, JUnit and Markdown for a run
- ``cli_live``   ``harness live``

Importing this package imports nothing heavy; the client and server are loaded only by
the functions that need them.
"""

from harness.live.redact import Redactor
from harness.live.sentinels import Finding, find_sentinels

__all__ = ["Finding", "Redactor", "find_sentinels"]
