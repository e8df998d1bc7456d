"""The child runtime every target runs in: the wire protocol (:mod:`.protocol`,
stdlib-only so the hermes driver loads it by file path), the child side (:mod:`.child`),
the parent side (:mod:`.process`), children forked from a warm one (:mod:`.forking`),
the warm-up (:mod:`.warmup`) and targets whose client has a venv of its own (:mod:`.venv`).

Not here: the targets themselves (``harness.targets.clients``, ``.hermes``, ``.mutants``).
"""
