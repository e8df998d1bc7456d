"""The tree's paths, computed once: where the package is, and what lies beside it.

``PROJECT_ROOT`` is the directory holding ``harness/`` (a checkout, or site-packages
for an installed wheel); ``CACHE_DIR`` is where ``ci/setup`` builds the third-party
virtualenvs and tools (a checkout's ``.cache``). Stdlib only, the lowest layer: every
module may read it.

Not here: the hermes driver's path to the protocol module (it runs in hermes's venv,
where this package is not importable: ``hermes_driver.PROTOCOL_PATH``).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["CACHE_DIR", "CATALOG_DIR", "EXAMPLES_DIR", "PACKAGE_DIR", "PROJECT_ROOT"]

#: ``harness/`` itself.
PACKAGE_DIR = Path(__file__).resolve().parent
#: The directory holding ``harness/`` (what a child's ``PYTHONPATH`` needs).
PROJECT_ROOT = PACKAGE_DIR.parent
#: ``ci/setup``'s virtualenvs and tools (Toxiproxy, uv, the third-party clients).
CACHE_DIR = PROJECT_ROOT / ".cache"
#: The scenario catalog (shipped in the wheel).
CATALOG_DIR = PACKAGE_DIR / "catalog"
#: ``command:`` example programs (shipped in the wheel).
EXAMPLES_DIR = PACKAGE_DIR / "targets" / "examples"
