"""A regression test harness and fault injector for LLM client transports.

Layers (each imports only those before it): ``faults``/``sse``/``replies``/``environment``
<- ``server``, ``client``, ``relay``, ``netem`` <- ``targets`` <- ``runner`` <- ``report``,
``cli``, ``pytest_plugin``. See DESIGN.md.
"""

__version__ = "0.1.0"
