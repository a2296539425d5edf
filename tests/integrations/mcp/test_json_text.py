"""Red team (session 21): a string argument holding JSON, which the MCP SDK's ``MCPServer`` parses into the list or
dict its tool receives whenever the parameter is not annotated exactly ``str`` (``pre_parse_json``), including an
*unannotated* parameter that it lists as ``{"type": "string"}``. The guard judged the text; the tool ran the data
(``'{"cmd": "ls", "cmd": "rm -rf /"}'`` ran ``{"cmd": "rm -rf /"}``, ``"\\u002fetc"`` ran ``/etc``). Checked against
the real ``MCPServer`` behind the real SDK proxy (:class:`GuardProxy`) and the stdio relay."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("mcp")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from mcp import Client  # noqa: E402

from agentguard.integrations.mcp.decide import call_refusal, json_text_refusal  # noqa: E402
from agentguard.integrations.mcp.proxy import GuardProxy, Upstream  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402

from test_relay_redteam import Wire, call, run  # noqa: E402


def _server(got: dict):
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("t")

    @server.tool()
    def delete_paths(paths: str | list[str]) -> str:
        """Delete one path or several."""
        got["delete_paths"] = paths
        return "ok"

    @server.tool()
    def run_spec(spec) -> str:  # noqa: ANN001 - unannotated on purpose: listed as {"type": "string"}
        """Run a spec."""
        got["run_spec"] = spec
        return "ok"

    @server.tool()
    def write_file(path: str, content: str) -> str:
        """Write text."""
        got["write_file"] = (path, content)
        return "ok"

    return server


GUARD = ToolRuleGuard(allow=["*"], arguments=[
    {"tool": "delete_paths", "arg": "paths", "forbid": "^/etc"},
    {"tool": "run_spec", "arg": "spec", "forbid": "rm -rf /"},
])

#: (tool, arguments): each ran data the guard never read before this fix
ATTACKS = [
    ("delete_paths", {"paths": '["/etc/shadow"]'}),                       # union parameter: the list runs
    ("delete_paths", {"paths": ' \n["/etc/passwd"]'}),                     # leading JSON whitespace
    ("run_spec", {"spec": '{"cmd": "ls", "cmd": "rm -rf /"}'}),            # repeated key: Python keeps the last
    ("run_spec", {"spec": '{"cmd": "rm -rf \\u002f"}'}),                    # an escape: the tool gets "/"
    ("run_spec", {"spec": '{"cmd": "rm -rf \\/"}'}),
    ("run_spec", {"spec": '[NaN, "rm -rf /tmp"]'}),                        # not strict JSON
    ("run_spec", {"spec": " null "}),                                      # the tool gets None
    ("delete_paths", {"paths": "null"}),
]


def _proxy_run(calls):
    got: dict = {}

    async def main():
        up = Upstream("t", server=_server(got))
        async with GuardProxy(GUARD, [up]) as proxy:
            async with Client(proxy.server) as client:
                return [await client.call_tool(name, args) for name, args in calls]

    return asyncio.run(main()), got


@pytest.mark.parametrize("name,args", ATTACKS)
def test_a_json_string_the_server_parses_never_runs_unjudged_via_the_sdk_proxy(name, args):
    [res], got = _proxy_run([(name, args)])
    assert res.is_error and "JSON" in res.content[0].text
    assert name not in got  # the tool never ran


def test_the_attacks_really_ran_the_parsed_value_without_the_proxy():
    """The differential oracle: the real MCPServer hands the tool the parsed data (what the guard must judge)."""
    got: dict = {}
    server = _server(got)

    async def main():
        for name, args in ATTACKS[:5]:
            await server.call_tool(name, args)
        assert got["delete_paths"] == ["/etc/passwd"]
        assert got["run_spec"] == {"cmd": "rm -rf /"}
        await server.call_tool("run_spec", {"spec": " null "})
        assert got["run_spec"] is None

    asyncio.run(main())


def test_plain_text_and_json_without_escapes_in_a_string_parameter_still_run():
    calls = [("write_file", {"path": "a.json", "content": '{"name": "x", "tags": ["a"]}'}),
             ("run_spec", {"spec": '{"cmd": "ls"}'}),
             ("delete_paths", {"paths": "/tmp/x"}),
             ("delete_paths", {"paths": ["/tmp/y"]}),
             ("write_file", {"path": "b.txt", "content": "[not json"})]
    results, got = _proxy_run(calls)
    assert not any(r.is_error for r in results)
    assert got["run_spec"] == {"cmd": "ls"}  # the text the guard read holds every key and value verbatim
    assert got["write_file"] == ("b.txt", "[not json")


@pytest.mark.parametrize("name,args", ATTACKS)
def test_the_stdio_relay_refuses_them_too(name, args):
    from mcp.server.mcpserver import MCPServer  # noqa: F401

    tools = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in asyncio.run(_server({}).list_tools())]
    w = Wire(GUARD, tools=tools)

    async def go():
        w.send(call(1, name, args))
        await w.settle()

    run(go())
    assert w.calls() == []
    refused = next(m for m in w.client if m.get("id") == 1)
    assert refused["error"]["code"] == -32602 and "JSON" in refused["error"]["message"]
    assert w.audit.records and str(w.audit.records[-1].decision) in ("REJECT", "HALT")


# -- property: whatever a string holds, a forwarded argument reads the same as text and as MCPServer's data ----------
_leaf = st.one_of(st.text(max_size=6), st.integers(-5, 5), st.booleans(), st.none())
_json = st.recursive(_leaf, lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(st.text(max_size=4), c,
                                                                                        max_size=3)), max_leaves=8)
_SCHEMAS = [{"type": "string"}, {"anyOf": [{"type": "string"}, {"type": "array"}]}, {},
            {"type": "string", "title": "S"}]


def _strings(o):
    if isinstance(o, str):
        yield o
    elif isinstance(o, list):
        for v in o:
            yield from _strings(v)
    elif isinstance(o, dict):
        for k, v in o.items():
            yield k
            yield from _strings(v)


@settings(max_examples=300, deadline=None)
@given(data=_json, spelling=st.sampled_from(["plain", "ascii", "dup", "pretty"]), prop=st.sampled_from(_SCHEMAS))
def test_property_a_forwarded_json_string_holds_every_value_the_server_parses_verbatim(data, spelling, prop):
    text = {"plain": json.dumps(data, ensure_ascii=False), "ascii": json.dumps(data),
            "pretty": json.dumps(data, indent=1, ensure_ascii=False),
            "dup": (json.dumps(data)[:-1] + ', "k": 1, "k": 2}') if isinstance(data, dict) and data
            else json.dumps(data)}[spelling]
    schema = {"type": "object", "properties": {"a": prop}}
    if call_refusal({"t": schema}, "t", {"a": text}) is not None:
        return
    try:
        parsed = json.loads(text)
    except ValueError:
        return
    if isinstance(parsed, (list, dict)):  # what MCPServer may hand the tool: every string of it is in the text
        assert prop.get("type") == "string" and "anyOf" not in prop
        assert all(s in text for s in _strings(parsed))
        assert json_text_refusal(schema, {"a": text}) is None
