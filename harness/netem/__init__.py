"""Real network faults the userspace fault server cannot make.

- :mod:`harness.netem.toxiproxy`  a Toxiproxy server in front of the fault server;
- :mod:`harness.netem.toxics`     the validated, frozen toxic description scenarios embed
  (``toxic_from_dict``);
- :mod:`harness.netem.kernel`     a kernel dead peer's settings (``[network.kernel]``): two
  network namespaces joined by a veth pair (:mod:`harness.netem.netns`), the link taken
  down at a scripted point (no FIN, no RST), the client's TCP state sampled
  (:mod:`harness.netem.tcpwatch`); :mod:`harness.netem.deadpeer` measures a client
  against it;
- :mod:`harness.netem.backends`   runner-facing: the ``[network]`` table of a scenario and
  the set-up / tear-down of one backend (relay, toxiproxy, kernel) around one call;
- :mod:`harness.netem.trigger`    scripted points (``event:3``, ``done:1``...) on the
  fault server's timeline;
- :mod:`harness.netem.prereq`     what each backend needs and whether it is here
  (skip locally, fail in CI);
- :mod:`harness.netem.sse_stub`   a stdlib-only SSE upstream (tests, benchmarks);
- :mod:`harness.netem.probe`      a minimal streaming client run inside a namespace.

The middlebox relay lives in :mod:`harness.relay` (it needs no privileges).
Submodules are imported by callers: importing this package does nothing.
"""
