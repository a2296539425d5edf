"""Red team of the stdio relay's wire (agentguard.integrations.mcp.relay): what the upstream reads from the
bytes the relay forwards must be exactly the messages the relay read and judged.

Differential oracle: the upstream's own reader, the real ``mcp`` SDK's stdio server loop
(``mcp.server.stdio``: ``TextIOWrapper(stdin, encoding="utf-8", errors="replace")`` iterated line by line,
each line validated by ``mcp.types.jsonrpc_message_adapter``). That wrapper is in universal-newline mode:
a lone ``\\r`` ends a line. JSON allows ``\\r`` as whitespace between tokens, so a single message the relay
read (a ``ping``, a notification, a response) could carry a whole ``tools/call`` between two ``\\r``: the
relay forwarded the very bytes, and the upstream read three lines, one of them an unguarded call.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from agentguard.core import Context, ToolCall  # noqa: E402
from agentguard.integrations.mcp.relay import StdioRelay  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/integrations: the drivers package
from drivers.mcp import listed  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402


def upstream_reads(forwarded: list[bytes]) -> list[dict]:
    """The messages the real MCP SDK stdio server reads from these bytes (its own line reader and model)."""
    from mcp.server.stdio import _UnownedTextWrapper
    from mcp.types import jsonrpc_message_adapter

    text = _UnownedTextWrapper(io.BytesIO(b"".join(forwarded)), encoding="utf-8", errors="replace")
    out = []
    for ln in text:
        try:
            msg = jsonrpc_message_adapter.validate_json(ln, by_name=False)
        except Exception:  # noqa: BLE001 - the server answers a parse error; nothing runs
            continue
        out.append(json.loads(msg.model_dump_json(by_alias=True, exclude_unset=True)))
    return out


class Wire:
    def __init__(self, guard) -> None:
        self.client: list[bytes] = []
        self.upstream: list[bytes] = []
        self.relay = StdioRelay(guard, self.client.append, self.upstream.append)


SMUGGLED = b'{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"delete_all","arguments":{}}}'


@pytest.mark.parametrize("carrier", [
    b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":\r%s\r}}\n',                  # a forwarded request
    b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"x":\r%s\r}}\n',     # a notification
    b'{"jsonrpc":"2.0","id":"s1","result":{"x":\r%s\r}}\n',                              # a client response
    b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{},"x":\r%s\r}}\n',
])
def test_a_call_hidden_between_carriage_returns_never_reaches_the_upstream(carrier):
    """Attack: one message the relay reads (JSON whitespace ``\\r`` around a nested object), three lines for
    the SDK's universal-newline reader, the middle one a ``tools/call`` of a refused tool. Fixed by the rule
    that the relay forwards only its own serialisation of what it read (ASCII, no line break inside)."""
    w = Wire(ToolRuleGuard(allow=["read_*"]))
    listed(w.relay, {"method": "tools/call", "params": {"name": "read_file"}})
    w.relay.client_line(carrier % SMUGGLED)
    calls = [m for m in upstream_reads(w.upstream) if m.get("method") == "tools/call"]
    assert all(c["params"]["name"] == "read_file" for c in calls), calls


# -- the class: any line the relay accepts reads upstream as exactly the messages the relay judged ----------
_ws = st.text(alphabet=" \t\r\n", max_size=3).map(lambda s: s.replace("\n", ""))  # JSON whitespace, no \n
_names = st.sampled_from(["read_file", "delete_all", "Read_file", "read_file ", "read_file\u2028", "r\u0065ad"])
_strings = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)
_values = st.recursive(st.none() | st.booleans() | st.integers(-10**20, 10**20) | _strings,
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_strings, inner, max_size=3),
                       max_leaves=6)


def _spaced(obj, ws: list[str]) -> str:
    """``obj`` as JSON with the given whitespace between tokens (cycled)."""
    i = 0

    def w() -> str:
        nonlocal i
        i += 1
        return ws[i % len(ws)] if ws else ""

    def enc(o) -> str:
        if isinstance(o, dict):
            return "{" + w() + ",".join(f"{w()}{json.dumps(k, ensure_ascii=False)}{w()}:{w()}{enc(v)}{w()}"
                                        for k, v in o.items()) + "}"
        if isinstance(o, list):
            return "[" + w() + ",".join(w() + enc(v) + w() for v in o) + "]"
        return json.dumps(o, ensure_ascii=False)

    return enc(obj)


@st.composite
def client_messages(draw):
    kind = draw(st.sampled_from(["call", "ping", "note", "response"]))
    extra = draw(st.dictionaries(st.sampled_from(["x", "_meta", "y"]), _values, max_size=2))
    if kind == "call":
        params = {"name": draw(_names), "arguments": draw(st.dictionaries(_strings, _values, max_size=3)), **extra}
        return {"jsonrpc": "2.0", "id": draw(st.integers(0, 5)), "method": "tools/call", "params": params}
    if kind == "ping":
        return {"jsonrpc": "2.0", "id": draw(st.integers(0, 5)), "method": "ping", "params": extra}
    if kind == "note":
        return {"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": 1, "progress": 1, **extra}}
    return {"jsonrpc": "2.0", "id": draw(st.integers(0, 5)), "result": extra}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(client_messages(), st.lists(_ws, max_size=4))
def test_property_upstream_reads_exactly_what_the_relay_judged(msg, ws):
    guard = ToolRuleGuard(allow=["read_file"])
    w = Wire(guard)
    listed(w.relay, msg)
    w.relay.client_line(_spaced(msg, ws).encode() + b"\n")
    seen = upstream_reads(w.upstream)
    assert len(seen) == len(w.upstream)  # one forwarded line, one message upstream
    for m in seen:
        assert m.get("method") == msg.get("method") and m.get("id") == msg.get("id")
        if m.get("method") == "tools/call":  # the very call judged, and one the guard allows
            assert m["params"]["name"] == msg["params"]["name"]
            assert m["params"].get("arguments", {}) == msg["params"]["arguments"]
            assert not guard.check(Context(), ToolCall(m["params"]["name"], m["params"].get("arguments", {}))).blocks


class Slow(ToolRuleGuard):
    """A rule guard that is not inline-safe (decided in a task, as any slow guard)."""

    inline_safe = False


def test_a_cancelled_request_never_runs_even_if_approved_later():
    """Red team: a client cancels a call on its own timeout (``notifications/cancelled``) while the relay
    still asks the human; the late approval ran it anyway (and a client that retried would run it twice).
    The pending decision is now cancelled with the request; the cancellation is not relayed (the upstream
    never saw the request); other requests are unaffected."""
    import asyncio

    w = Wire(Slow(allow=["*"], escalate=["transfer_*"]))
    for name in ("transfer_funds", "read_file"):
        listed(w.relay, {"method": "tools/call", "params": {"name": name}})
    dump = lambda m: json.dumps(m).encode() + b"\n"  # noqa: E731

    async def go():
        w.relay.client_line(dump({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                  "params": {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}}}))
        w.relay.client_line(dump({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                  "params": {"name": "transfer_funds", "arguments": {"amount": 5}}}))
        for _ in range(40):
            await asyncio.sleep(0.005)
            if any(json.loads(b).get("method") == "elicitation/create" for b in w.client):
                break
        ask = next(json.loads(b) for b in w.client if json.loads(b).get("method") == "elicitation/create")
        w.relay.client_line(dump({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                  "params": {"requestId": 1, "reason": "timeout"}}))
        w.relay.client_line(dump({"jsonrpc": "2.0", "id": ask["id"],
                                  "result": {"action": "accept", "content": {"approve": True}}}))
        w.relay.client_line(dump({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                  "params": {"name": "read_file", "arguments": {}}}))
        for _ in range(40):
            await asyncio.sleep(0.005)
            if not w.relay._tasks:
                break

    asyncio.run(go())
    sent = [json.loads(b) for b in w.upstream]
    assert [m.get("id") for m in sent] == [0, 2]
    assert not any(m.get("method") == "notifications/cancelled" for m in sent)
    assert w.relay._deciding == {} and w.relay._asks == {}


# -- the upstream's own validation: MCPServer turns a JSON string into a list, "5000" into an int -------------
def _server():
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("t")

    @server.tool()
    def delete_paths(paths: list[str]) -> str:
        """Delete files."""
        return "ok"

    @server.tool()
    def transfer_funds(amount: int, to: str) -> str:
        """Transfer."""
        return "ok"

    return server


def _listed(server) -> list[dict]:
    import asyncio

    tools = asyncio.run(server.list_tools())
    return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]


def _received(server, name: str, args: dict) -> dict:
    """What the real MCPServer hands the tool's function for these arguments (its own validation)."""
    tool = server._tool_manager.get_tool(name)
    return tool.fn_metadata.validate_arguments(args)


RULES = [{"tool": "delete_paths", "arg": "paths", "forbid": r"^\[?'?/etc"},
         {"tool": "transfer_funds", "arg": "amount", "forbid": r"^\d{4,}$"}]
SCHEMA_ATTACKS = [
    ("delete_paths", {"paths": '["/etc/shadow"]'}),          # MCPServer pre-parses the JSON string
    ("transfer_funds", {"amount": " 5000 ", "to": "bob"}),    # pydantic: the int 5000
    ("transfer_funds", {"amount": 5000.0, "to": "bob"}),
]


@pytest.mark.parametrize("name,args", SCHEMA_ATTACKS)
def test_arguments_the_upstream_would_read_otherwise_are_refused(name, args):
    server = _server()
    guard = ToolRuleGuard(allow=["*"], arguments=RULES)
    received = _received(server, name, args)  # the attack is real: the tool would get a forbidden value
    assert guard.check(Context(), ToolCall(name, received)).blocks
    if name == "delete_paths":  # ... while the guard reads the spelling (argument rules read the number a string
        # spells since session 13, so " 5000 " and 5000.0 are refused by the rule too; the relay must refuse all)
        assert not guard.check(Context(), ToolCall(name, args)).blocks
    w = Wire(guard)
    dump = lambda m: json.dumps(m).encode() + b"\n"  # noqa: E731
    w.relay.client_line(dump({"jsonrpc": "2.0", "id": "l", "method": "tools/list"}))
    w.relay.upstream_line(dump({"jsonrpc": "2.0", "id": "l", "result": {"tools": _listed(server)}}))
    w.relay.client_line(dump({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                              "params": {"name": name, "arguments": args}}))
    assert [json.loads(b)["id"] for b in w.upstream] == ["l"]
    assert json.loads(w.client[-1])["error"]["code"] == -32602


_args = st.fixed_dictionaries({"paths": st.one_of(
    st.lists(st.sampled_from(["a", "/etc/shadow"]), max_size=2),
    st.lists(st.sampled_from(["a", "/etc/shadow"]), max_size=2).map(json.dumps))})
_money = st.fixed_dictionaries({"amount": st.one_of(st.integers(0, 9999), st.integers(0, 9999).map(str),
                                                    st.integers(0, 9999).map(float)), "to": st.just("bob")})


@settings(max_examples=60, deadline=None)
@given(st.one_of(_args.map(lambda a: ("delete_paths", a)), _money.map(lambda a: ("transfer_funds", a))))
def test_property_what_the_upstream_runs_is_what_the_guard_judged(call):
    name, args = call
    server = _server()
    listed = _listed(server)
    w = Wire(ToolRuleGuard(allow=["*"]))
    dump = lambda m: json.dumps(m).encode() + b"\n"  # noqa: E731
    w.relay.client_line(dump({"jsonrpc": "2.0", "id": "l", "method": "tools/list"}))
    w.relay.upstream_line(dump({"jsonrpc": "2.0", "id": "l", "result": {"tools": listed}}))
    w.relay.client_line(dump({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": args}}))
    for m in upstream_reads(w.upstream):
        if m.get("method") == "tools/call":
            sent = m["params"]["arguments"]
            assert sent == args and _received(server, name, sent) == sent
