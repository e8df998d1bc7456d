"""A regression test harness and fault injector for LLM client transports.

Layers (each imports only those before it), as in DESIGN.md: (1) ``faults``, ``sse``,
``replies``, ``environment``, ``loopthread``, ``tcpstate``, ``leaks``; (2) ``server``,
``client``, ``relay``, ``netem``; (3) ``targets``; (4) ``scenario``, ``outcome``;
(5) ``runner`` | ``live``; (6) ``report``, ``bench``, ``mutants``; (7) ``cli``,
``pytest_plugin``. The contract ``lint-imports`` checks is ``[tool.importlinter]`` in
pyproject.toml.
"""

__version__ = "0.1.0"
