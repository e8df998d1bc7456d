"""Real gateways between a target and the fault server (layer 3, beside the targets).

A gateway is a third-party proxy server the harness starts on a free loopback port with
a generated configuration that routes to the fault server, so a scenario's fault
reaches the client *through* a real middlebox instead of our own relay:

* :mod:`harness.gateway.litellm_proxy` -- the LiteLLM proxy server (``litellm[proxy]``),
  run by :mod:`harness.gateway.litellm_main` in LiteLLM's own virtualenv, with the
  kernel TCP states of both legs (client -> proxy, proxy -> provider) sampled over the
  call (:mod:`harness.gateway.legs`: the legs' timeline and the middlebox measurement),
  each job fenced off from the next (:mod:`harness.gateway.fence`).

Not here: the targets that talk to a gateway (``harness.targets.clients.litellm_proxy``).
"""
