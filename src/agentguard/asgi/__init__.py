"""HTTP hardening shared by every agentguard endpoint (the service, the LiteLLM guardrail endpoint, the
MCP proxy over Streamable HTTP): one pure-ASGI middleware, :class:`Hardening`.

This package sits below :mod:`agentguard.integrations` and :mod:`agentguard.server` and imports only
:mod:`agentguard.core` (and the standard library).
"""

from .hardening import CSP, DOCS_CSP, SECURITY_HEADERS, Hardening, send_error

__all__ = ["CSP", "DOCS_CSP", "Hardening", "SECURITY_HEADERS", "send_error"]
