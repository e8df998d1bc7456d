"""``harness fuzz``: search the fault space for contract failures nobody wrote down.

Fault scripts are drawn from the fault registry and the reply plans themselves
(:mod:`harness.fuzz.space`, :mod:`harness.fuzz.strategies`), each one run as a real case
through the runner and judged by the same contract; a failure is shrunk by Hypothesis
to its smallest script, replayed to confirm it, and written as a catalog scenario
(:mod:`harness.fuzz.search`, :mod:`harness.fuzz.findings`); ``harness repro`` writes one
scenario as a standalone pytest directory (:mod:`harness.fuzz.repro`). See docs/fuzz.md.

Not here: the command line (``harness.cli.fuzz``).
"""
