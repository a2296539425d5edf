"""The MCP guard proxy: an MCP server between an MCP client and upstream MCP servers, gating every
``tools/call`` (and ``prompts/get``, ``resources/read``) with a guard stack through one
:class:`~agentguard.core.pipeline.Pipeline`.

- :class:`GuardProxy` (:mod:`.proxy`): the SDK server (any number of upstreams, stdio or Streamable
  HTTP, in process for tests: ``mcp.Client(proxy.server)``).
- :class:`StdioRelay` / :func:`serve_stdio_relay` (:mod:`.relay`): the line relay ``agentguard
  mcp-proxy`` runs for one stdio upstream served over stdio.
- :class:`Upstream` / :func:`parse_upstream` (:mod:`.upstream`): the upstream servers.
- :func:`strict_http_app` (:mod:`.strict`): strict JSON at the Streamable HTTP front door.

Names load on first use (``from agentguard.integrations.mcp import GuardProxy``): the relay and the
upstream parser import no MCP SDK, so the stdio fast path starts quickly.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__all__ = ["GuardProxy", "StdioRelay", "Upstream", "parse_upstream", "serve_stdio_relay", "strict_http_app"]

_WHERE = {"GuardProxy": "proxy", "StdioRelay": "relay", "serve_stdio_relay": "relay", "Upstream": "upstream",
          "parse_upstream": "upstream", "strict_http_app": "strict"}

if TYPE_CHECKING:  # pragma: no cover
    from .proxy import GuardProxy
    from .relay import StdioRelay, serve_stdio_relay
    from .strict import strict_http_app
    from .upstream import Upstream, parse_upstream


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{where}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
