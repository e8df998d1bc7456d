"""The hermes driver: what runs inside hermes-agent's virtualenv, stdlib and hermes only
(the harness package is not importable there). ``python -I .../in_venv`` runs it
(``in_venv/__main__.py``); its modules import only each other, relatively:

* :mod:`.main`: the process entry and the runner's child protocol loop;
* :mod:`.spec`: the call spec and the settings -> hermes variables mapping (also read by
  ``harness.targets.hermes`` in the harness's venv);
* :mod:`.turns`: running hermes; :mod:`.tool`: the one harmless tool it registers;
* :mod:`.fresh`: what a reused child restores before a job, and why;
* ``.protocol``: the runner's child protocol, ``harness/targets/runtime/protocol.py``
  (stdlib-only, written once for every child), loaded here by its file path.
"""

import importlib.util
import sys
from pathlib import Path

#: ``harness/targets/runtime/protocol.py``, from ``harness/targets/hermes/in_venv/hermes_driver``.
PROTOCOL_PATH = Path(__file__).resolve().parents[3] / "runtime" / "protocol.py"


def _load_protocol() -> None:
    name = f"{__name__}.protocol"
    if name in sys.modules:
        return
    spec = importlib.util.spec_from_file_location(name, PROTOCOL_PATH)
    assert spec is not None and spec.loader is not None, PROTOCOL_PATH
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)


_load_protocol()
