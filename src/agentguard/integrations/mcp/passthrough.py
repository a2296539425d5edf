"""The MCP proxy's pass-through of prompts and resources (a mixin of
:class:`~agentguard.integrations.mcp.proxy.GuardProxy`; see that module's doc).

Listings are merged from every upstream that offers them (prompt names prefixed like tools when the
proxy prefixes); ``prompts/get`` and ``resources/read`` are guarded as the calls
``ToolCall("prompts/get", {"name", "arguments"})`` and ``ToolCall("resources/read", {"uri"})`` (the URI as the
server reads it, :func:`~.wire.uri_reading`; the canonical spelling is forwarded) by the proxy's Pipeline: only
an outcome that runs exactly the request forwards it, anything else answers with
an MCP error naming the refusal.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from ...core.enforcement import Outcome
from ...core.types import ToolCall
from .decide import refusal_text
from .wire import canonical_uri, uri_reading

__all__ = ["PassThrough"]


class PassThrough:
    """Prompts and resources of the upstreams, passed through (guarded gets and reads)."""

    upstreams: list[Any]
    clients: dict[str, Any]
    prefix: bool
    pipeline: Any
    _prompt_routes: dict[str, tuple[str, str]]
    _resource_routes: dict[str, str]

    async def _decide(self, ctx: Any, call: ToolCall, params: Any = None) -> tuple[str, Any]:
        raise NotImplementedError  # pragma: no cover - provided by GuardProxy

    async def _refuse(self, ctx: Any, call: ToolCall, reason: str) -> Any:
        raise NotImplementedError  # pragma: no cover - provided by GuardProxy

    # -- prompts and resources (passed through; gets and reads guarded) ------------------------------
    async def _each(self, what: str) -> list[tuple[str, Any]]:
        """``(upstream, result)`` of ``client.<what>()`` for every upstream that answers it."""
        out = []
        for u in self.upstreams:
            try:
                out.append((u.name, await getattr(self.clients[u.name], what)()))
            except Exception:  # the upstream does not offer prompts / resources
                continue
        return out

    async def _on_list_prompts(self, ctx: Any, params: Any) -> types.ListPromptsResult:
        prompts: list[Any] = []
        routes: dict[str, tuple[str, str]] = {}
        for up, res in await self._each("list_prompts"):
            for p in res.prompts:
                exposed = f"{up}__{p.name}" if self.prefix else p.name
                routes.setdefault(exposed, (up, p.name))
                prompts.append(p.model_copy(update={"name": exposed}) if exposed != p.name else p)
        self._prompt_routes = routes
        return types.ListPromptsResult(prompts=prompts)

    async def _on_list_resources(self, ctx: Any, params: Any) -> types.ListResourcesResult:
        resources: list[Any] = []
        routes: dict[str, str] = {}
        for up, res in await self._each("list_resources"):
            for r in res.resources:
                routes.setdefault(str(r.uri), up)
                resources.append(r)
        self._resource_routes = routes
        return types.ListResourcesResult(resources=resources)

    async def _on_list_resource_templates(self, ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        templates = [t for _, res in await self._each("list_resource_templates") for t in res.resource_templates]
        return types.ListResourceTemplatesResult(resource_templates=templates)

    async def _gate(self, ctx: Any, call: ToolCall, params: Any) -> Any:
        """Guard a non-tool request like a call: None when exactly it may run; else the MCP error to
        raise, or the protocol object asking the client (returned as is)."""
        _, out = await self._decide(ctx, call, params)
        if not isinstance(out, Outcome):
            return out
        if out.call is call:
            self.pipeline.record(out)
            return None
        text = refusal_text(out, call)
        self.pipeline.record(out, observation=text)
        from mcp.shared.exceptions import MCPError

        return MCPError(code=-32003, message=text)

    async def _on_get_prompt(self, ctx: Any, params: Any) -> Any:
        call = ToolCall("prompts/get", {"name": params.name, "arguments": dict(params.arguments or {})})
        refused = await self._gate(ctx, call, params)
        if isinstance(refused, Exception):
            raise refused
        if refused is not None:
            return refused
        if params.name not in self._prompt_routes:
            await self._on_list_prompts(ctx, None)
        route = self._prompt_routes.get(params.name)
        if route is None:
            from mcp.shared.exceptions import MCPError

            raise MCPError(code=-32602, message=f"unknown prompt {params.name!r}")
        return await self.clients[route[0]].get_prompt(route[1], dict(params.arguments or {}) or None)

    async def _on_read_resource(self, ctx: Any, params: Any) -> Any:
        uri = canonical_uri(str(params.uri)) or ""  # read in one spelling (see canonical_uri)
        reading = uri_reading(uri) if uri else None  # judged as the server reads it (its escapes decoded)
        if not (uri and reading):
            from mcp.shared.exceptions import MCPError

            res = await self._refuse(ctx, ToolCall("resources/read", {"uri": str(params.uri)}), "the URI has no single reading")
            raise MCPError(code=-32602, message=res.content[0].text)
        call = ToolCall("resources/read", {"uri": reading})
        refused = await self._gate(ctx, call, params)
        if isinstance(refused, Exception):
            raise refused
        if refused is not None:
            return refused
        if uri not in self._resource_routes:
            await self._on_list_resources(ctx, None)
        up = self._resource_routes.get(uri) or (self.upstreams[0].name if len(self.upstreams) == 1 else None)
        if up is None:
            from mcp.shared.exceptions import MCPError

            raise MCPError(code=-32602, message=f"no upstream lists resource {uri!r}")
        return await self.clients[up].read_resource(uri)

