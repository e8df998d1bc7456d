"""The client targets: one module per client stack the catalog runs against -- the
reference client, the OpenAI and Anthropic SDKs (bare and guarded), LiteLLM (SDK and
proxy), LangChain, the OpenAI Agents SDK, and any program (``command:PATH``).

Not here: the child runtime (``harness.targets.runtime``), hermes-agent
(``harness.targets.hermes``), the mutant stacks (``harness.targets.mutants``).
"""
