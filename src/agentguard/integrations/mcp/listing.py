"""The stdio relay's knowledge of the upstream's tools (:mod:`.relay`): each listed tool's ``inputSchema``,
learnt from the ``tools/list`` answers the relay passes on and from its own ``tools/list`` rounds.

A ``tools/call`` is forwarded only for a tool listed here, with arguments of its schema's types
(:func:`~.decide.call_refusal`). A call of a tool not listed yet, or after the upstream's
``notifications/tools/list_changed`` (which forgets every schema), makes the relay list the tools itself
(:meth:`ToolListing.refresh`, every page, one round at a time, within a time limit) before the call is
judged: a tool is never forwarded unchecked. A listing answered for a request sent before the last
``list_changed`` is stale and not learnt. A call is forwarded only while the listing still gives its tool the
schema it was checked against when its decision began (:meth:`ToolListing.checked`, :meth:`ToolListing.still`):
a ``list_changed`` or a new listing while a slow guard or a human decides refuses it.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from typing import Any, Callable

from ...core.types import ToolCall
from .decide import listing_changed, schema_text
from .wire import OWN_ID_PREFIX, key, wire

__all__ = ["ToolListing"]


class ToolListing:
    """The listed tools' schemas; ``send(bytes)`` writes a line to the upstream; ``timeout_s`` bounds a round."""

    def __init__(self, send: Callable[[bytes], None], timeout_s: float = 30.0) -> None:
        self.schemas: dict[str, Any] = {}
        self.generation = 0
        self.timeout_s = timeout_s
        self._send = send
        self._client: dict[str, int] = {}              # the client's forwarded tools/list: id key -> generation
        self._fetches: dict[str, asyncio.Future] = {}  # the relay's own tools/list requests, by id
        self._checked: dict[str, str | None] = {}      # a call being decided: the schema it was checked against
        self._round: asyncio.Future | None = None

    def checked(self, rid: Any, name: str) -> None:
        """The call with request id ``rid`` was checked against the tool ``name``'s listed schema now."""
        self._checked[key(rid)] = schema_text(self.schemas.get(name))

    def still(self, rid: Any, call: ToolCall) -> str | None:
        """Why the call ``rid`` must not be forwarded now (:func:`~.decide.listing_changed`; None when it may);
        forgets what it was checked against."""
        return listing_changed(self.schemas, call, self._checked.pop(key(rid), None))

    def asked(self, rid: Any) -> None:
        """The client's ``tools/list`` with this id was forwarded."""
        self._client[key(rid)] = self.generation

    def changed(self) -> None:
        """The upstream's tools changed: every schema is stale."""
        self.schemas.clear()
        self.generation += 1

    def waiting(self) -> bool:
        return bool(self._client or self._fetches)

    def answered(self, msg: dict) -> bool:
        """Learn from the upstream's answer to the client's ``tools/list``; True when it was one."""
        generation = self._client.pop(key(msg.get("id")), None)
        if generation is None:
            return False
        if generation == self.generation:
            self.learn(msg.get("result"))
        return True

    def learn(self, result: Any) -> None:
        """Keep each listed tool's ``inputSchema`` (pages add up)."""
        tools = result.get("tools") if isinstance(result, dict) else None
        for t in tools if isinstance(tools, list) else ():
            if isinstance(t, dict) and isinstance(t.get("name"), str):
                self.schemas[t["name"]] = t.get("inputSchema")

    def own_answer(self, line: bytes) -> bool:
        """True (and the waiting round served) when an upstream line answers the relay's own ``tools/list``:
        it is not relayed to the client, which never sent that request."""
        if not self._fetches or OWN_ID_PREFIX.encode() not in line:
            return False
        try:
            msg = json.loads(line)
        except ValueError:
            return False
        rid = msg.get("id") if isinstance(msg, dict) and "method" not in msg else None
        fut = self._fetches.pop(rid, None) if isinstance(rid, str) else None
        if fut is not None and not fut.done():
            fut.set_result(msg)
        return fut is not None

    async def refresh(self, meta: dict[str, Any]) -> None:
        """List the upstream's tools with the relay's own requests (``meta``: the ``_meta`` they carry), at
        most one round at a time; raises when the upstream answers with an error or not within ``timeout_s``."""
        if self._round is None or self._round.done():
            self._round = asyncio.ensure_future(self._pages(meta))
        await asyncio.wait_for(asyncio.shield(self._round), self.timeout_s)

    async def _pages(self, meta: dict[str, Any]) -> None:
        generation, cursor = self.generation, None
        for _ in range(1000):
            rid = f"{OWN_ID_PREFIX}list-{secrets.token_hex(12)}"
            fut = self._fetches[rid] = asyncio.get_running_loop().create_future()
            params: dict[str, Any] = {"_meta": meta} if meta else {}
            if cursor is not None:
                params["cursor"] = cursor
            self._send(wire({"jsonrpc": "2.0", "id": rid, "method": "tools/list", "params": params}))
            try:
                reply = await fut
            finally:
                self._fetches.pop(rid, None)
            result = reply.get("result")
            if not isinstance(result, dict):
                raise ValueError(f"the upstream answered {str(reply.get('error'))[:200]}")
            if generation == self.generation:
                self.learn(result)
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                return

    def close(self) -> None:
        for fut in [*self._fetches.values(), *([self._round] if self._round is not None else [])]:
            fut.cancel()
