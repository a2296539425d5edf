"""Red team of the stdio relay (agentguard.integrations.mcp.relay), pass 3: every refusal is a Pipeline
decision (audited, recorded in the run), a tool is forwarded only as listed by the upstream, and the
protocol's corners (arguments that are not an object, request ids in use or reserved, a hanging upstream).
The upstream's validation is the real ``mcp`` package's ``MCPServer`` (its tools/list and argument model)."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("mcp")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from agentguard.core import Decision  # noqa: E402
from agentguard.core.pipeline import Pipeline  # noqa: E402
from agentguard.integrations.mcp import listing  # noqa: E402
from agentguard.integrations.mcp.relay import StdioRelay  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402


class Sink:
    def __init__(self) -> None:
        self.records = []

    def write(self, rec) -> None:
        self.records.append(rec)


def dump(m) -> bytes:
    return json.dumps(m).encode() + b"\n"


def call(rid, name, args=None, **extra) -> dict:
    params = {"name": name, **({"arguments": args} if args is not None else {}), **extra}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def _server():
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("t")

    @server.tool()
    def delete_paths(paths: list[str]) -> str:
        """Delete files."""
        return "ok"

    @server.tool()
    def read_file(path: str) -> str:
        """Read."""
        return "ok"

    return server


def _listed() -> list[dict]:
    tools = asyncio.run(_server().list_tools())
    return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]


LISTED = _listed()


class Wire:
    """A relay in front of a fake upstream that answers tools/list with the real MCPServer's listing (or
    never, ``hang=True``), with an audit sink on its Pipeline."""

    def __init__(self, guard=None, *, hang=False, tools=None) -> None:
        self.audit = Sink()
        self.client: list[dict] = []
        self.upstream: list[dict] = []
        self.hang, self.tools = hang, LISTED if tools is None else tools
        pipe = Pipeline(guard or ToolRuleGuard(allow=["*"]), audit=self.audit, adapter="mcp")
        self.relay = StdioRelay(pipe, lambda b: self.client.append(json.loads(b)), self._up)

    def _up(self, b: bytes) -> None:
        msg = json.loads(b)
        self.upstream.append(msg)
        if msg.get("method") == "tools/list" and str(msg.get("id")).startswith("agentguard-") and not self.hang:
            answer = dump({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": self.tools}})
            asyncio.get_running_loop().call_soon(self.relay.upstream_line, answer)

    def send(self, m) -> None:
        self.relay.client_line(dump(m) if isinstance(m, (dict, list)) else m)

    async def settle(self) -> None:
        for _ in range(100):
            await asyncio.sleep(0.005)
            if not self.relay._tasks:
                return

    def calls(self) -> list[dict]:
        return [m for m in self.upstream if m.get("method") == "tools/call"]

    def steps(self):
        return self.relay.pipeline.run(self.relay.run_id).context.trace.steps


def run(coro):
    return asyncio.run(coro)


# -- item 3: a tool not listed is listed first; one the upstream does not list is refused -----------------
def test_an_unlisted_tool_is_listed_by_the_relay_then_schema_checked():
    """Attack (last session's open item): a tools/call for a tool the client never listed passed without the
    schema check, so MCPServer pre-parsed ``'["/etc/shadow"]'`` into a list the guard never read."""
    w = Wire(ToolRuleGuard(allow=["*"], arguments=[{"tool": "delete_paths", "arg": "paths", "forbid": "^/etc"}]))

    async def go():
        w.send(call(1, "delete_paths", {"paths": '["/etc/shadow"]'}))
        w.send(call(2, "read_file", {"path": "a"}))
        await w.settle()

    run(go())
    own = [m for m in w.upstream if m.get("method") == "tools/list"]
    assert len(own) == 1 and own[0]["id"].startswith("agentguard-list-")  # one round for both calls
    assert [c["id"] for c in w.calls()] == [2]
    assert not any(m.get("id") == own[0]["id"] for m in w.client)  # our listing is not the client's answer
    refused = next(m for m in w.client if m.get("id") == 1)
    assert refused["error"]["code"] == -32602 and "inputSchema" in refused["error"]["message"]


@pytest.mark.parametrize("name", ["read_fіle", "ｒead_file", "read_file ", "srv__read_file", "read_file\u200b",
                                  "READ_FILE", "delete_all"])
def test_a_name_the_upstream_did_not_list_is_refused_and_audited(name):
    """Unicode confusables (Cyrillic i, fullwidth r), a zero-width space, namespace separators, case: only the
    exact names the upstream listed are forwarded, whatever an upstream's own name lookup would do with them."""
    w = Wire()

    async def go():
        w.send(call(1, name, {"path": "a"}))
        await w.settle()

    run(go())
    assert w.calls() == []
    assert w.client[-1]["error"]["code"] == -32602 and "not in the upstream's tools/list" in w.client[-1]["error"]["message"]
    [rec] = w.audit.records
    assert rec.decision == "REJECT" and rec.call["name"] == name and "tools/list" in rec.reason
    assert w.steps()[-1].action.name == name


def test_list_changed_makes_the_listing_stale_and_a_stale_answer_is_not_learnt():
    w = Wire()
    w.relay.tools.learn({"tools": [{"name": "read_file", "inputSchema": {"type": "object"}}]})  # old listing
    w.relay.client_line(dump({"jsonrpc": "2.0", "id": "c", "method": "tools/list"}))
    w.relay.upstream_line(dump({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}))
    assert w.relay.tools.schemas == {}
    w.relay.upstream_line(dump({"jsonrpc": "2.0", "id": "c", "result": {"tools": [{"name": "x", "inputSchema": {}}]}}))
    assert w.relay.tools.schemas == {}  # answered for a request sent before the change


def test_a_hanging_upstream_listing_times_out_and_refuses(monkeypatch):
    w = Wire(hang=True)
    w.relay.tools.timeout_s = 0.05

    async def go():
        w.send(call(1, "read_file", {"path": "a"}))
        await asyncio.sleep(0.2)
        await w.settle()

    run(go())
    assert w.calls() == [] and w.client[-1]["error"]["code"] == -32602
    assert "TimeoutError" in w.audit.records[-1].reason and w.audit.records[-1].decision == "REJECT"


def test_a_listing_error_refuses():
    w = Wire()
    w._up = lambda b: (w.upstream.append(json.loads(b)), asyncio.get_running_loop().call_soon(  # type: ignore
        w.relay.upstream_line, dump({"jsonrpc": "2.0", "id": json.loads(b)["id"], "error": {"code": -1, "message": "no"}})))
    w.relay._to_upstream = w._up
    w.relay.tools._send = w._up

    async def go():
        w.send(call(1, "read_file", {"path": "a"}))
        await w.settle()

    run(go())
    assert w.calls() == [] and w.audit.records[-1].decision == "REJECT"


# -- item 1: schema refusals and malformed params are Pipeline decisions -----------------------------------
@pytest.mark.parametrize("args", [[], "", 0, False, ["x"], "{}"])
def test_arguments_that_are_not_an_object_are_refused_through_the_pipeline(args):
    """Attack: ``arguments: []`` (or ``""``, ``0``, ``false``) read as ``{}`` for the guard (``or {}``) while the
    upstream was sent the value itself."""
    w = Wire()
    w.relay.tools.learn({"tools": LISTED})
    w.send(call(1, "read_file", args))
    assert w.calls() == [] and w.client[-1]["error"]["code"] == -32602
    [rec] = w.audit.records
    assert rec.decision == "REJECT" and "arguments is" in rec.reason
    assert w.steps()[-1].observation.startswith("agentguard refused")


def test_arguments_null_is_no_arguments():
    w = Wire()
    w.relay.tools.learn({"tools": [{"name": "ping_tool", "inputSchema": {"type": "object"}}]})
    w.send(call(1, "ping_tool", None, arguments=None))
    assert [c["id"] for c in w.calls()] == [1]


def test_a_schema_refusal_is_audited_and_counts_in_the_run():
    w = Wire(ToolRuleGuard(allow=["*"]))
    w.relay.tools.learn({"tools": LISTED})
    w.send(call(1, "delete_paths", {"paths": '["/etc/shadow"]'}))
    [rec] = w.audit.records
    assert rec.decision == "REJECT" and rec.guard == "mcp-proxy" and "inputSchema" in rec.reason
    assert rec.call == {"name": "delete_paths", "arguments": {"paths": '["/etc/shadow"]'}, "call_id": "1"} or \
        rec.call["arguments"] == {"paths": '["/etc/shadow"]'}
    assert w.relay.pipeline.run(w.relay.run_id).context.trace.labels["blocked"] == 1


def test_a_schema_refusal_goes_through_the_enforcement_strategy():
    """One decision path: a strategy that halts after refusals counts the relay's own refusals too."""
    w = Wire()
    w.relay.pipeline.enforcement = __import__("agentguard.core.strategies", fromlist=["x"]).strategy("TT")
    w.relay.tools.learn({"tools": LISTED})
    w.send(call(1, "delete_paths", {"paths": "x"}))
    w.send(call(2, "read_file", {"path": "a"}))
    assert w.calls() == [] and w.relay.pipeline.halted(w.relay.run_id) is not None


# -- cancelled decisions are Pipeline decisions ------------------------------------------------------------
class Slow(ToolRuleGuard):
    inline_safe = False


def test_a_cancelled_ask_is_answered_no_through_the_pipeline():
    w = Wire(Slow(allow=["*"], escalate=["delete_*"]))
    w.relay.tools.learn({"tools": LISTED})

    async def go():
        w.send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}}})
        w.send(call(1, "delete_paths", {"paths": ["a"]}))
        for _ in range(60):
            await asyncio.sleep(0.005)
            if any(m.get("method") == "elicitation/create" for m in w.client):
                break
        w.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
        await w.settle()

    run(go())
    assert w.calls() == []
    kinds = [(r.kind, r.decision) for r in w.audit.records]
    assert kinds == [("check", "ESCALATE"), ("approval", "REJECT")], kinds
    assert "cancelled" in w.audit.records[-1].reason and "cancelled" in str(w.audit.records[-1].extra)
    assert w.steps()[-1].action.name == "delete_paths" and w.relay._asked == {} and w.relay._cancelled == set()


def test_a_cancelled_guard_decision_is_refused_through_the_pipeline():
    import threading

    gate = threading.Event()

    class Hanging(Slow):
        def check(self, ctx, proposal):
            gate.wait(2)
            return super().check(ctx, proposal)

    w = Wire(Hanging(allow=["*"]))
    w.relay.tools.learn({"tools": LISTED})

    async def go():
        w.send(call(1, "read_file", {"path": "a"}))
        await asyncio.sleep(0.02)
        w.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
        await asyncio.sleep(0.02)
        gate.set()
        await w.settle()

    run(go())
    assert w.calls() == []
    assert w.audit.records[-1].decision == "REJECT" and "cancelled" in w.audit.records[-1].reason


# -- request ids ----------------------------------------------------------------------------------------------
def test_a_request_id_in_use_is_refused():
    """Attack: two requests under one id: the upstream's answer to the first was recorded as the second's
    (``_pending`` keyed by id), and a cancellation named both. MCP: an id is never reused in a session."""
    w = Wire()
    w.relay.tools.learn({"tools": LISTED})
    w.send(call(1, "read_file", {"path": "a"}))
    w.send(call(1, "delete_paths", {"paths": ["b"]}))
    w.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert [c["params"]["name"] for c in w.calls()] == ["read_file"]
    assert [m["error"]["code"] for m in w.client] == [-32600, -32600]
    w.relay.upstream_line(dump({"jsonrpc": "2.0", "id": 1, "result": {"content": []}}))
    w.send(call(1, "read_file", {"path": "c"}))  # answered: the id is free again
    assert len(w.calls()) == 2


@pytest.mark.parametrize("rid", [None, 1.0, 1.5, True, [1], {"a": 1}, "agentguard-list-0"])
def test_odd_or_reserved_request_ids_are_refused(rid):
    w = Wire()
    w.relay.tools.learn({"tools": LISTED})
    w.send(call(rid, "read_file", {"path": "a"}))
    assert w.calls() == [] and w.client[-1]["error"]["code"] == -32600


def test_a_huge_integer_id_is_an_id_like_any_other():
    w = Wire()
    w.relay.tools.learn({"tools": LISTED})
    w.send(call(10**30, "read_file", {"path": "a"}))
    assert [c["id"] for c in w.calls()] == [10**30]


# -- the class: whatever the client sends, a forwarded call is listed, schema-valid and allowed, and every
#    refusal is one audit record ------------------------------------------------------------------------------
_arg = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5), st.lists(st.text(max_size=3), max_size=2),
                 st.dictionaries(st.sampled_from(["path", "paths", "x"]), st.one_of(st.text(max_size=5), st.lists(
                     st.text(max_size=5), max_size=2), st.integers()), max_size=2))
_name = st.sampled_from(["read_file", "delete_paths", "read_fіle", "x", "tools/call", ""])
_id = st.one_of(st.integers(0, 3), st.sampled_from(["a", "agentguard-x", None, 1.0, True]))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(_id, _name, _arg), min_size=1, max_size=4))
def test_property_forwarded_calls_are_listed_schema_valid_and_every_refusal_audited(msgs):
    from agentguard.integrations.mcp.decide import call_refusal

    w = Wire(ToolRuleGuard(allow=["read_*"]))

    async def go():
        for rid, name, args in msgs:
            w.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": args}})
        await w.settle()

    run(go())
    schemas = {t["name"]: t["inputSchema"] for t in LISTED}
    for c in w.calls():
        assert call_refusal(schemas, c["params"]["name"], c["params"]["arguments"]) is None
        assert c["params"]["name"] == "read_file"
    refusals = [m for m in w.client if "error" in m and m["error"]["code"] == -32602] + \
               [m for m in w.client if m.get("result", {}).get("isError")]
    audited_refusals = [r for r in w.audit.records if r.decision != "ALLOW"]
    assert len(audited_refusals) == len(refusals)
    assert Decision.ALLOW.name not in {r.decision for r in audited_refusals}


def test_listing_module_round_is_bounded():
    assert listing.ToolListing(lambda b: None).timeout_s > 0


@pytest.mark.parametrize("name", ["", None, 5, ["read_file"]])
def test_a_missing_or_empty_name_is_refused_not_a_crash(name):
    """Found by the property above: ``"name": ""`` raised out of the relay's reader (ToolCall refuses an
    empty name), which ended the whole connection."""
    w = Wire()
    w.send(call(1, name, {}))
    assert w.client[-1]["error"]["code"] == -32602 and w.audit.records[-1].decision == "REJECT"


# -- sampling with tools: the upstream runs the tool_use blocks of the client's sampling result ----------------
def _sampling_result(*uses, escaped=False) -> dict:
    content = [{"type": "text", "text": "calling"}] + [
        {"type": "tool_use", "id": f"u{i}", "name": n, "input": a} for i, (n, a) in enumerate(uses)]
    return {"role": "assistant", "model": "m", "stopReason": "toolUse", "content": content}


def _upstream_runs(result: dict) -> list[str]:
    """The tool_use names the real SDK reads in this sampling result (what MCPServer then executes)."""
    from mcp_types import CreateMessageResultWithTools

    parsed = CreateMessageResultWithTools.model_validate(result)
    blocks = parsed.content if isinstance(parsed.content, list) else [parsed.content]
    return [b.name for b in blocks if getattr(b, "type", None) == "tool_use"]


@pytest.mark.parametrize("uses,runs", [
    ([("delete_paths", {"paths": ["/"]})], False),
    ([("read_file", {"path": "a"}), ("delete_paths", {"paths": ["/"]})], False),
    ([("read_file", {"path": "a"})], True),
])
def test_a_sampling_results_tool_use_is_decided_like_a_call(uses, runs):
    """Attack: MCP sampling with tools (2025-11-25) has the *upstream* execute the tools the client's model
    chose in its sampling result; the relay passed client responses to the upstream unchecked, so a refused
    tool ran past tools/call. Each tool_use block is now decided; a refused one turns the result into an error."""
    w = Wire(ToolRuleGuard(allow=["read_*"]))
    result = _sampling_result(*uses)
    assert _upstream_runs(result) == [n for n, _ in uses]  # the SDK reads these as tools to run

    async def go():
        w.relay.upstream_line(dump({"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage",
                                    "params": {"messages": [], "maxTokens": 10, "tools": []}}))
        w.send({"jsonrpc": "2.0", "id": "s1", "result": result})
        await w.settle()

    run(go())
    [sent] = [m for m in w.upstream if m.get("id") == "s1"]
    assert ("result" in sent) is runs and ("error" in sent) is (not runs)
    if runs:
        assert sent["result"] == result
    else:
        assert w.audit.records[-1].decision == "REJECT" and w.audit.records[-1].call["name"] == "delete_paths"


def test_tool_use_in_a_modern_retrys_input_responses_is_decided():
    w = Wire(ToolRuleGuard(allow=["read_*"]))
    w.relay.tools.learn({"tools": LISTED})

    async def go():
        w.send(call(1, "read_file", {"path": "a"}, inputResponses={"s": _sampling_result(("delete_paths", {"paths": []}))},
                    requestState="up"))
        await w.settle()

    run(go())
    assert w.calls() == [] and w.client[-1]["error"]["code"] == -32602


@pytest.mark.parametrize("raw", [
    b'{"jsonrpc":"2.0","id":"s1","result":{"content":[{"type":"tool\\u005fuse","id":"u","name":"delete_paths","input":{}}]}}\n',
    b'{"jsonrpc":"2.0","id":"s1","result":{"content":{"type":"tool_use","id":"u","name":5,"input":{}}}}\n',
    b'{"jsonrpc":"2.0","id":"s1","result":{"content":[{"type":"tool_use","id":"u","name":"read_file","input":[]}]}}\n',
])
def test_escaped_or_malformed_tool_use_is_refused(raw):
    w = Wire(ToolRuleGuard(allow=["read_*"]))

    async def go():
        w.relay.client_line(raw)
        await w.settle()

    run(go())
    [sent] = [m for m in w.upstream if m.get("id") == "s1"]
    assert "error" in sent and "result" not in sent


_use = st.builds(lambda n, a: {"type": "tool_use", "id": "u", "name": n, "input": a},
                 st.sampled_from(["read_file", "delete_paths", "x"]), st.dictionaries(st.sampled_from(["p"]), st.text(max_size=3)))
_nested = st.recursive(_use | st.text(max_size=3) | st.integers(), lambda inner: st.lists(inner, max_size=3) |
                       st.dictionaries(st.sampled_from(["content", "a", "_meta", "inputResponses"]), inner, max_size=3),
                       max_leaves=8)


@settings(max_examples=80, deadline=None)
@given(_nested, st.booleans())
def test_property_no_forwarded_message_carries_a_tool_use_the_guard_refuses(body, as_response):
    from agentguard.integrations.mcp.wire import tool_uses

    w = Wire(ToolRuleGuard(allow=["read_*"]))
    w.relay.tools.learn({"tools": LISTED})
    msg = ({"jsonrpc": "2.0", "id": "s1", "result": {"content": body}} if as_response
           else call(7, "read_file", {"path": "a"}, x=body))

    async def go():
        w.send(msg)
        await w.settle()

    run(go())
    for m in w.upstream:
        uses = tool_uses(m)
        assert uses is not None and all(u.name.startswith("read_") for u in uses)


# -- resources/read: one spelling of a URI, judged and forwarded ----------------------------------------------
READ_RULES = [{"tool": "resources/read", "arg": "uri", "forbid": r"^file:///etc"}]


@pytest.mark.parametrize("uri", ["file:///tmp/../etc/shadow", "file:///%65tc/shadow", "FILE:///etc/shadow",
                                 "file:///tmp/./x/../../etc/passwd", "file:////etc/shadow", "file:///%2Fetc/shadow",
                                 "file:///tmp\\..\\etc", "file:///etc%00/x", "file:///%"])
def test_a_uri_spelled_otherwise_reads_as_what_a_server_resolves(uri):
    """Attack: a rule forbidding ``^file:///etc`` read the URI's spelling, while a server resolving it reads
    /etc/shadow (dot segments, an escaped unreserved letter, the scheme's case, an empty segment, an escaped
    slash). The relay now judges and forwards the canonical URI, and refuses one with no single reading."""
    w = Wire(ToolRuleGuard(allow=["*"], arguments=READ_RULES))
    w.send({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": uri}})
    assert not any(m.get("method") == "resources/read" for m in w.upstream)
    assert w.client[-1]["error"]["code"] in (-32602, -32003) and w.audit.records[-1].decision != "ALLOW"


def test_a_canonical_uri_is_forwarded_as_judged():
    w = Wire(ToolRuleGuard(allow=["*"], arguments=READ_RULES))
    w.send({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "file:///tmp/a/../b%20c.txt"}})
    [sent] = [m for m in w.upstream if m.get("method") == "resources/read"]
    assert sent["params"]["uri"] == "file:///tmp/b%20c.txt"
    # judged as the server reads it, its escapes decoded (session 22: test_resource_reading.py)
    assert w.audit.records[-1].call["arguments"]["uri"] == "file:///tmp/b c.txt"


_seg = st.sampled_from(["etc", "tmp", "..", ".", "", "%65tc", "%2e%2e", "a%20b", "E"])


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["file://", "FILE://", "notes://h"]), st.lists(_seg, max_size=5))
def test_property_canonical_uris_are_fixed_points_and_resolve_like_a_server(scheme, segs):
    """The canonical form is its own canonical form, and names the path a server resolving it reads
    (posixpath.normpath of the decoded path, the oracle for dot segments)."""
    import posixpath
    from urllib.parse import unquote, urlsplit

    from agentguard.integrations.mcp.wire import canonical_uri

    uri = scheme + "/" + "/".join(segs)
    c = canonical_uri(uri)
    if c is None:
        return
    assert canonical_uri(c) == c
    served = posixpath.normpath(unquote(urlsplit(uri).path))
    assert posixpath.normpath(unquote(urlsplit(c).path)) == served
    assert ".." not in urlsplit(c).path.split("/") and "." not in urlsplit(c).path.split("/")


def test_facts_cannot_name_the_pipelines_own_keywords():
    """A client's ``_meta["agentguard/facts"]`` were passed to ``Pipeline.decide`` as keywords: ``audit_kind``
    chose the audit record's kind, and ``refuse`` would be taken as a verdict. Both are dropped."""
    w = Wire(ToolRuleGuard(allow=["read_*"]))
    w.relay.tools.learn({"tools": LISTED})
    facts = {"audit_kind": "approval", "refuse": {"decision": "ALLOW"}, "ok": 1}
    w.send(call(1, "read_file", {"path": "a"}, _meta={"agentguard/facts": facts}))
    assert [c["id"] for c in w.calls()] == [1]
    [rec] = w.audit.records
    assert rec.kind == "check" and rec.decision == "ALLOW"
    meta = w.relay.pipeline.run(w.relay.run_id).context.metadata
    assert meta.get("ok") == 1 and "refuse" not in meta and "audit_kind" not in meta


def test_an_oversized_line_ends_the_connection_and_nothing_after_it_is_forwarded():
    """A line longer than the reader's limit (LINE_LIMIT, 64 MiB; 1 KiB here) is never split into pieces the
    relay would read as messages: the connection ends, and the call behind it is not forwarded."""
    w = Wire()
    w.relay.tools.learn({"tools": LISTED})

    async def go():
        client, upstream = asyncio.StreamReader(limit=1024), asyncio.StreamReader(limit=1024)
        big = dump(call(1, "read_file", {"path": "a" * 4096}))
        client.feed_data(big + dump(call(2, "read_file", {"path": "b"})))
        client.feed_eof()
        with pytest.raises(ValueError):
            await w.relay.run(client, upstream)

    run(go())
    assert w.calls() == []
