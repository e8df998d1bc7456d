"""One module per action; importing this package registers every one of them.

Adding an action is one new module here (a frozen dataclass with ``@register`` and the
hooks of :class:`harness.faults.base.Action` its behaviour needs) plus its test: the
modules are discovered, so nothing else needs an edit.
"""

from __future__ import annotations

import importlib
import pkgutil

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    importlib.import_module(f"{__name__}.{_info.name}")
