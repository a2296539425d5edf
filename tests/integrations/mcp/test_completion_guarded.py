"""Red team (session 22): ``completion/complete`` runs server code with the client's values, and the stdio relay
forwarded it unguarded (it was among the methods that "read, list, subscribe or configure").

The MCP SDK's ``MCPServer`` hands its completion handler the reference and the argument value the client chose; a
handler completing ``file:///{path}`` lists the directory it is given (``/etc/``), past a stack that refuses every
``resources/read`` of ``/etc``, or any action it does not name. The relay now decides it like ``resources/read``:
``ToolCall("completion/complete", {"ref", "argument"[, "context"]})``, so an allow list that does not name it refuses
it (fail closed) and a rule can read its argument; a malformed request is refused. Oracle: the real ``MCPServer``'s
completion handler through ``mcp.Client``; the relay's forwarded messages."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("mcp")

from hypothesis import given, settings, strategies as st  # noqa: E402

from agentguard.policies.rules import ToolRuleGuard  # noqa: E402

from test_relay_redteam import Wire  # noqa: E402

TEMPLATE = {"type": "ref/resource", "uri": "file:///{path}"}


def completed(value: str) -> list:
    """What the real server's completion handler receives for a completion of ``value`` (no guard)."""
    from mcp import Client
    from mcp.server.mcpserver import MCPServer
    from mcp_types import Completion, ResourceTemplateReference

    got: list = []
    server = MCPServer("fs")

    @server.resource("file:///{path}")
    def read(path: str) -> str:
        return "text"

    @server.completion()
    async def complete(ref, argument, context):
        got.append((argument.name, argument.value))
        return Completion(values=[argument.value + "shadow"])

    async def go():
        async with Client(server) as c:
            await c.complete(ResourceTemplateReference(type="ref/resource", uri="file:///{path}"),
                             {"name": "path", "value": value})

    asyncio.run(go())
    return got


def request(value: str, ref: dict | None = None, rid: int = 1, **extra) -> dict:
    params = {"ref": ref or TEMPLATE, "argument": {"name": "path", "value": value}, **extra}
    return {"jsonrpc": "2.0", "id": rid, "method": "completion/complete", "params": params}


def forwarded(guard, msg: dict) -> list:
    w = Wire(guard)
    w.send(msg)
    return [m for m in w.upstream if m.get("method") == "completion/complete"]


def test_the_oracle_the_server_runs_its_completion_handler_with_the_clients_value():
    assert completed("/etc/") == [("path", "/etc/")]


def test_a_completion_is_decided_not_forwarded_past_the_guard():
    assert forwarded(ToolRuleGuard(allow=["resources/read"]), request("/etc/")) == []  # an allow list not naming it
    rule = ToolRuleGuard(allow=["*"], arguments=[{"tool": "completion/complete", "arg": "argument", "forbid": "/etc"}])
    assert forwarded(rule, request("/etc/")) == []


@pytest.mark.parametrize("params", [{"ref": "x"}, {"ref": {"type": "ref/tool", "name": "t"}},
                                    {"ref": TEMPLATE, "argument": {"name": "path", "value": 5}},
                                    {"ref": TEMPLATE, "argument": {"name": "path", "value": "a"}, "context": []},
                                    {"ref": {"type": "ref/prompt", "name": 3}, "argument": {"name": "a", "value": ""}}])
def test_a_malformed_completion_is_refused(params):
    msg = {"jsonrpc": "2.0", "id": 1, "method": "completion/complete", "params": params}
    assert forwarded(ToolRuleGuard(allow=["*"]), msg) == []


def test_regression_an_allowed_completion_is_forwarded_as_sent():
    msg = request("/tmp/", context={"arguments": {"other": "x"}})
    [sent] = forwarded(ToolRuleGuard(allow=["completion/complete"]), msg)
    assert sent["params"] == msg["params"]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["/etc/", "/tmp/", "/etc", "", "/home/a", "/et"]),
       st.sampled_from([TEMPLATE, {"type": "ref/prompt", "name": "p"}]), st.booleans())
def test_property_a_completion_reaches_the_server_only_when_its_call_is_allowed(value, ref, with_context):
    rule = ToolRuleGuard(allow=["*"], arguments=[{"tool": "completion/complete", "arg": "argument", "forbid": "/etc"}])
    msg = request(value, ref, **({"context": {"arguments": {"x": value}}} if with_context else {}))
    sent = forwarded(rule, msg)
    assert (sent != []) == ("/etc" not in value)
