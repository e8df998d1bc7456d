"""``python -I harness/targets/hermes/in_venv [--child | SPEC.json | -]``: the hermes
driver in hermes-agent's venv. Python puts this directory first on ``sys.path``; it holds
only this file and the ``hermes_driver`` package, so nothing shadows hermes's modules."""

import sys

from hermes_driver.main import main

sys.exit(main(sys.argv))
