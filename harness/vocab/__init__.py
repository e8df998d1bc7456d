"""The harness's vocabularies, each written once, below everything that uses it.

One module per vocabulary; every other module imports its names from here and never
writes them out again (the import contract puts this package under every other layer)::

    dialects.py   the dialect profiles of real servers and which APIs each one speaks
    statuses.py   the HTTP statuses a retry can fix, and those it cannot
    deadlines.py  the reference stack's deadline settings, by name

Where to add one (one edit in one module): a dialect is one entry of ``dialects.PROFILES`` (its ``apis``
field says which APIs it shapes); a retryable status is one number in
``statuses.RETRYABLE_STATUSES``. A fault action's traits are not here: they are class
attributes of the action (``harness.faults.base.Action``); an API's are its module's
(``harness.apis``).

This package imports nothing from the rest of ``harness``.
"""
