"""One module per contract check; importing this package registers every one of them.

Adding a check is one new module here (a :class:`harness.contract.check.Check` subclass
with ``@register``) plus its test: the modules are discovered, so nothing else needs an
edit; ``harness docs`` writes its row into ``docs/contract.md``.
"""

from __future__ import annotations

import importlib
import pkgutil

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    importlib.import_module(f"{__name__}.{_info.name}")
