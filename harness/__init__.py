"""A regression test harness and fault injector for LLM client transports.

The layers (each imports only those below it) are the table in docs/architecture.md;
the contract ``lint-imports`` checks is ``[tool.importlinter]`` in pyproject.toml, and
tests/test_docs.py keeps the two equal.
"""

__version__ = "0.1.0"
