"""The network fault model: what a scenario's ``[network]`` table says, as frozen data.

- :mod:`~harness.faults.network.spec`     :class:`NetworkSpec`, one validated table
  (parsed by ``harness.network_spec.network_from_dict``, beside the scenario model);
- :mod:`~harness.faults.network.trigger`  scripted points (``event:3``, ``done:1``...) on
  the fault server's timeline, and the wait for one;
- :mod:`~harness.faults.network.toxics`   one Toxiproxy toxic;
- :mod:`~harness.faults.network.kernel`   a kernel dead peer's settings (``[network.kernel]``).

Data only: validating a scenario needs no backend. Running one is ``harness.netem``'s
(Toxiproxy, network namespaces) and ``harness.relay``'s (the middlebox).
"""
