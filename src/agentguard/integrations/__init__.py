"""agentguard.integrations: one guard stack in front of the agent frameworks people use.

Each adapter is its own module, imported on demand (the framework SDKs are optional, extra
``integrations``), and works with any :class:`~agentguard.core.Guard` - usually a
:class:`~agentguard.core.GuardStack` built in code or by :func:`agentguard.config.load_stack`:

- :mod:`.langchain`: ``AgentGuardMiddleware`` for LangChain v1 / LangGraph agents.
- :mod:`.openai_agents`: ``AgentsGuard`` (tool input/output guardrails) and a trace processor;
  :mod:`.openai_agents_answers`: ``AgentsAnswerGuard``, the output guardrail deciding the final answer.
- :mod:`.mcp`: ``GuardProxy`` (an MCP server gating the tools of upstream MCP servers) and ``StdioRelay``.
- :mod:`.litellm`: ``GuardrailEndpoint``, LiteLLM's generic guardrail HTTP API (the answer with
  ``answer_guard=``: :mod:`.litellm_answers`).
- :mod:`.streaming`: ``GuardedStream``, a per-step monitor cutting a streamed completion at the alarm.
- :mod:`.recording`: ``TraceRecorder``, what every adapter uses to write project traces.

Every adapter decides through one :class:`agentguard.core.Pipeline` and only translates between its
framework's objects and proposals / outcomes. Deterministic tool rules (``ToolRuleGuard``) live in
:mod:`agentguard.policies.rules`.

See docs/integrations.md for what each adapter can and cannot see.
"""
