"""What hermes-agent's own python runs: this directory (``python -I .../in_venv``), its
``__main__.py`` and the stdlib-only ``hermes_driver`` package. A package here too, so the
harness's venv imports the driver's pure parts (``hermes_driver.spec``, ``.tool``)."""
