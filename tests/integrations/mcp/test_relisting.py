"""Red team (session 19): the upstream's tools change between the decision and the forward.

A call is checked against the tool's listed ``inputSchema`` when its decision begins; a slow guard or a human's
approval can take minutes, during which the upstream may send ``notifications/tools/list_changed`` and list the tool
under the same name with another schema (or list it from another upstream). Before the fix, both proxy paths then
forwarded the decided call unchecked: the stdio relay forwarded ``count({"n": "5000"})`` after the upstream had
forgotten and re-listed ``n`` as an integer (MCPServer would coerce ``"5000"`` to 5000: the read ``call_refusal``
exists to refuse), and after a ``list_changed`` that left the tool unlisted; the SDK proxy forwarded after a re-listing
had changed the schema. Now the call is forwarded only while the listing gives its tool the schema it was checked
against (:func:`agentguard.integrations.mcp.decide.listing_changed`).

Already refused before (kept as regressions): a call made after a ``list_changed`` is listed again first and checked
against the new schema; a batch (JSON array) of calls; a namespaced or confusable name the upstream did not list.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from agentguard.core.pipeline import Pipeline  # noqa: E402
from agentguard.integrations.mcp.decide import listing_changed, schema_text  # noqa: E402
from agentguard.integrations.mcp.relay import StdioRelay  # noqa: E402
from agentguard.core import ToolCall  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_proxy import upstream  # noqa: E402


def schema(kind: str) -> dict:
    return {"type": "object", "properties": {"n": {"type": kind}}}


def tools(kind: str | None) -> list[dict]:
    return [] if kind is None else [{"name": "count", "inputSchema": schema(kind)}]


def dump(m) -> bytes:
    return json.dumps(m).encode() + b"\n"


class Wire:
    """A relay whose guard escalates ``count`` to an approver the test releases, in front of a fake upstream whose
    listing the test changes (answering the relay's own ``tools/list`` with the current one)."""

    def __init__(self, kind: str | None = "string") -> None:
        self.kind = kind
        self.upstream: list[dict] = []
        self.client: list[dict] = []
        self.gate = asyncio.Event()

        async def approve(verdict, call):
            await self.gate.wait()
            return True

        pipe = Pipeline(ToolRuleGuard(allow=["*"], escalate=["count"]), adapter="mcp")
        self.relay = StdioRelay(pipe, lambda b: self.client.append(json.loads(b)), self._up, approve=approve)

    def _up(self, b: bytes) -> None:
        msg = json.loads(b)
        self.upstream.append(msg)
        if msg.get("method") == "tools/list" and str(msg.get("id")).startswith("agentguard-"):
            answer = dump({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": tools(self.kind)}})
            asyncio.get_running_loop().call_soon(self.relay.upstream_line, answer)

    def send(self, m) -> None:
        self.relay.client_line(dump(m))

    def changed(self, kind: str | None, relist: bool) -> None:
        self.kind = kind
        self.relay.upstream_line(dump({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}))
        if relist:  # the client lists again and the upstream answers with the new listing
            self.send({"jsonrpc": "2.0", "id": "L", "method": "tools/list"})
            self.relay.upstream_line(dump({"jsonrpc": "2.0", "id": "L", "result": {"tools": tools(kind)}}))

    def calls(self) -> list[dict]:
        return [m["params"] for m in self.upstream if m.get("method") == "tools/call"]

    async def settle(self) -> None:
        for _ in range(200):
            await asyncio.sleep(0.005)
            if not self.relay._tasks:
                return


def call(rid, n) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": "count", "arguments": {"n": n}}}


def relay_run(new_kind: str | None, relist: bool, n="5000") -> list[dict]:
    w = Wire("string")

    async def go():
        w.send({"jsonrpc": "2.0", "id": 0, "method": "tools/list"})
        w.relay.upstream_line(dump({"jsonrpc": "2.0", "id": 0, "result": {"tools": tools("string")}}))
        w.send(call(1, n))
        await asyncio.sleep(0.02)  # the decision waits for the approver
        if new_kind != "same":
            w.changed(new_kind, relist)
        w.gate.set()
        await w.settle()

    asyncio.run(go())
    return w.calls()


@pytest.mark.parametrize("new_kind,relist", [("integer", True), (None, True), ("integer", False), (None, False)])
def test_the_relay_refuses_a_call_whose_tool_changed_while_it_was_decided(new_kind, relist):
    assert relay_run(new_kind, relist) == []


def test_regression_an_unchanged_listing_still_forwards_the_approved_call():
    assert relay_run("same", False) == [{"name": "count", "arguments": {"n": "5000"}}]


def test_regression_a_call_after_list_changed_is_listed_again_and_checked():
    w = Wire("string")

    async def go():
        w.changed("integer", relist=False)
        w.send(call(1, "5000"))
        w.gate.set()
        await w.settle()

    asyncio.run(go())
    assert w.calls() == [] and "inputSchema" in json.dumps(w.client[-1])


def test_the_sdk_proxy_refuses_a_call_whose_tool_was_listed_again_with_another_schema(tmp_path):
    from mcp import Client

    from agentguard.integrations.mcp.proxy import GuardProxy

    async def main():
        holder: dict = {}

        async def approve(verdict, c):  # meanwhile the upstream lists transfer_funds with another schema
            proxy = holder["proxy"]
            real = proxy._upstream_tools

            async def changed(name):
                out = await real(name)
                return [t.model_copy(update={"input_schema": {"type": "object", "properties": {
                    "amount": {"type": "string"}, "to": {"type": "string"}}}}) if t.name == "transfer_funds" else t
                        for t in out]

            proxy._upstream_tools = changed
            await proxy._collect_tools()
            return True

        guard = ToolRuleGuard(allow=["*"], escalate=["transfer_funds"])
        async with GuardProxy(guard, [upstream(tmp_path)], approve=approve) as proxy:
            holder["proxy"] = proxy
            async with Client(proxy.server) as client:
                return await client.call_tool("transfer_funds", {"amount": 12, "to": "bob"})

    r = asyncio.run(main())
    assert r.is_error and "changed while the call was decided" in "".join(getattr(c, "text", "") for c in r.content)
    assert not (tmp_path / "ledger.txt").exists()


KINDS = ["string", "integer", "number", "array", None]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(KINDS[:-1]), st.lists(st.sampled_from(KINDS), max_size=3), st.booleans())
def test_property_forwarded_only_under_the_schema_it_was_checked_against(first, changes, relist):
    """Over generated sequences of listings during a decision: the relay forwards the call exactly when the listing
    at the forward gives the tool the schema the call was checked against (and that schema accepts it); the oracle
    is :func:`listing_changed` written out as an equality of listings."""
    w = Wire(first)
    value = {"string": "5", "integer": 5, "number": 5.5, "array": ["5"]}[first]

    async def go():
        w.send({"jsonrpc": "2.0", "id": 0, "method": "tools/list"})
        w.relay.upstream_line(dump({"jsonrpc": "2.0", "id": 0, "result": {"tools": tools(first)}}))
        w.send(call(1, value))
        await asyncio.sleep(0.01)
        for kind in changes:
            w.changed(kind, relist)
        w.gate.set()
        await w.settle()

    asyncio.run(go())
    final = changes[-1] if changes and relist else (first if not changes else None)
    assert (w.calls() != []) == (final == first), (first, changes, relist, w.calls())


def test_listing_changed_unit():
    c = ToolCall("count", {"n": "5"})
    judged = schema_text(schema("string"))
    assert listing_changed({"count": schema("string")}, c, judged) is None
    assert "inputSchema" in listing_changed({"count": schema("integer")}, c, judged)
    assert "not in the upstream's tools/list" in listing_changed({}, c, judged)
    assert listing_changed({"count": schema("string")}, c, None) is not None  # never checked: refused
