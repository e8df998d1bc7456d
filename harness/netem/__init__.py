"""Real network faults the userspace fault server cannot make.

- :mod:`harness.netem.toxiproxy`  a Toxiproxy server in front of the fault server;
- :mod:`harness.netem.netns`      a kernel dead peer: two network namespaces joined by a
  veth pair, the link taken down at a scripted point (no FIN, no RST), the client's TCP
  state sampled (:mod:`harness.netem.tcpwatch`); :mod:`harness.netem.deadpeer`
  measures a client against it;
- :mod:`harness.netem.backends`   runner-facing: the set-up / tear-down of one backend
  (relay, toxiproxy, kernel) around one call;
- :mod:`harness.netem.prereq`     what each backend needs and whether it is here
  (skip locally, fail in CI);
- :mod:`harness.netem.sse_stub`   a stdlib-only SSE upstream (tests, benchmarks);
- :mod:`harness.netem.probe`      a minimal streaming client run inside a namespace.

What a scenario says about them (toxics, kernel settings, trigger points, the
``[network]`` table) is data in :mod:`harness.faults.network`. The middlebox relay lives
in :mod:`harness.relay` (it needs no privileges).
Submodules are imported by callers: importing this package does nothing.
"""
