"""The MCP proxy's pass-through of prompts and resources (a mixin of
:class:`~agentguard.integrations.mcp_proxy.GuardProxy`; see that module's doc).

Listings are merged from every upstream that offers them (prompt names prefixed like tools when the
proxy prefixes); ``prompts/get`` and ``resources/read`` are guarded as the calls
``ToolCall("prompts/get", {"name", "arguments"})`` and ``ToolCall("resources/read", {"uri"})``: only
ALLOW forwards them, anything else answers with an MCP error naming the refusal.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from ..core.types import Context, Decision, ToolCall, Verdict
from .runtime import refusal_message

__all__ = ["PassThrough"]


class PassThrough:
    """Prompts and resources of the upstreams, passed through (guarded gets and reads)."""

    upstreams: list[Any]
    clients: dict[str, Any]
    prefix: bool
    runtime: Any
    _prompt_routes: dict[str, tuple[str, str]]
    _resource_routes: dict[str, str]

    def _context(self, ctx: Any) -> Context:  # pragma: no cover - provided by GuardProxy
        raise NotImplementedError

    async def _decide(self, gctx: Context, call: ToolCall, ctx: Any = None, params: Any = None) -> Any:
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
        prompts, routes = [], {}
        for up, res in await self._each("list_prompts"):
            for p in res.prompts:
                exposed = f"{up}__{p.name}" if self.prefix else p.name
                routes.setdefault(exposed, (up, p.name))
                prompts.append(p.model_copy(update={"name": exposed}) if exposed != p.name else p)
        self._prompt_routes = routes
        return types.ListPromptsResult(prompts=prompts)

    async def _on_list_resources(self, ctx: Any, params: Any) -> types.ListResourcesResult:
        resources, routes = [], {}
        for up, res in await self._each("list_resources"):
            for r in res.resources:
                routes.setdefault(str(r.uri), up)
                resources.append(r)
        self._resource_routes = routes
        return types.ListResourcesResult(resources=resources)

    async def _on_list_resource_templates(self, ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        templates = [t for _, res in await self._each("list_resource_templates") for t in res.resource_templates]
        return types.ListResourceTemplatesResult(resource_templates=templates)

    async def _gate(self, ctx: Any, call: ToolCall, params: Any) -> tuple[Context, Any]:
        """Guard a non-tool request like a call (ALLOW runs it; anything else refuses)."""
        gctx = self._context(ctx)
        v = await self._decide(gctx, call, ctx, params)
        if isinstance(v, types.InputRequiredResult):
            return gctx, v
        if v.decision is Decision.HALT:
            gctx.metadata.setdefault("halted", v.reason)
        self.runtime.record(gctx, call, v, observation=None if not v.blocks else refusal_message(v, call))
        return gctx, v

    @staticmethod
    def _refused(v: Verdict, call: ToolCall) -> Exception:
        from mcp.shared.exceptions import MCPError

        return MCPError(code=-32003, message=refusal_message(v, call))

    async def _on_get_prompt(self, ctx: Any, params: Any) -> Any:
        call = ToolCall("prompts/get", {"name": params.name, "arguments": dict(params.arguments or {})})
        _, v = await self._gate(ctx, call, params)
        if isinstance(v, types.InputRequiredResult):
            return v
        if v.decision is not Decision.ALLOW:
            raise self._refused(v, call)
        if params.name not in self._prompt_routes:
            await self._on_list_prompts(ctx, None)
        route = self._prompt_routes.get(params.name)
        if route is None:
            from mcp.shared.exceptions import MCPError

            raise MCPError(code=-32602, message=f"unknown prompt {params.name!r}")
        return await self.clients[route[0]].get_prompt(route[1], dict(params.arguments or {}) or None)

    async def _on_read_resource(self, ctx: Any, params: Any) -> Any:
        uri = str(params.uri)
        call = ToolCall("resources/read", {"uri": uri})
        _, v = await self._gate(ctx, call, params)
        if isinstance(v, types.InputRequiredResult):
            return v
        if v.decision is not Decision.ALLOW:
            raise self._refused(v, call)
        if uri not in self._resource_routes:
            await self._on_list_resources(ctx, None)
        up = self._resource_routes.get(uri) or (self.upstreams[0].name if len(self.upstreams) == 1 else None)
        if up is None:
            from mcp.shared.exceptions import MCPError

            raise MCPError(code=-32602, message=f"no upstream lists resource {uri!r}")
        return await self.clients[up].read_resource(uri)

