"""Red team (session 21): an argument left out runs with the default the tool declares. The MCP SDK's ``MCPServer``
(pydantic) hands ``purge(path: str = "/")`` called with ``{}`` the path ``"/"``, and a nested model its field
defaults, while the guard judged a call without them: a rule forbidding ``path = "/"`` refused ``{"path": "/"}``
and let ``{}`` run ``purge("/")``. The judged call now carries the listed defaults (:func:`judged_call`); the
request forwarded is still the client's. Real MCPServer behind the SDK proxy and the stdio relay."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("mcp")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from mcp import Client  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from agentguard.core.types import ToolCall  # noqa: E402
from agentguard.integrations.mcp.decide import judged_call  # noqa: E402
from agentguard.integrations.mcp.proxy import GuardProxy, Upstream  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402

from test_relay_redteam import Wire, call, run  # noqa: E402


class Options(BaseModel):
    target: str = "/"
    recursive: bool = True


def _server(got: list):
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("t")

    @server.tool()
    def purge(path: str = "/", note: str = None) -> str:  # type: ignore[assignment]  # noqa: RUF013 - sloppy on purpose
        """Delete under path."""
        got.append(("purge", path, note))
        return "ok"

    @server.tool()
    def wipe(options: Options) -> str:
        """Delete per options."""
        got.append(("wipe", options.target, options.recursive))
        return "ok"

    return server


GUARD = ToolRuleGuard(allow=["*"], arguments=[
    {"tool": "purge", "arg": "path", "forbid": "^/$"},
    {"tool": "wipe", "arg": "options.target", "forbid": "^/$"},
])


def _tools():
    return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in asyncio.run(_server([]).list_tools())]


def _proxy(calls):
    got: list = []

    async def main():
        async with GuardProxy(GUARD, [Upstream("t", server=_server(got))]) as proxy:
            async with Client(proxy.server) as client:
                return [await client.call_tool(n, a) for n, a in calls]

    return asyncio.run(main()), got


def test_the_default_really_runs_without_the_proxy():
    got: list = []
    asyncio.run(_server(got).call_tool("purge", {}))
    assert got == [("purge", "/", None)]


def test_an_argument_left_out_is_judged_with_its_listed_default_via_the_sdk_proxy():
    [res], got = _proxy([("purge", {})])
    assert res.is_error and "purge" in res.content[0].text
    assert got == []  # purge("/") never ran


def test_a_nested_default_is_judged_too():
    schemas = {t["name"]: t["inputSchema"] for t in _tools()}
    judged = judged_call(schemas, ToolCall("wipe", {"options": {}}))
    assert judged.arguments == {"options": {"target": "/", "recursive": True}}


def test_regression_an_explicit_allowed_value_and_a_none_default_still_run():
    """The request forwarded is the client's: the ``None`` default of ``note`` (a ``str`` parameter) is judged but
    never sent (sending it would fail MCPServer's validation)."""
    results, got = _proxy([("purge", {"path": "/srv/tmp"})])
    assert not results[0].is_error, results[0].content[0].text
    assert got == [("purge", "/srv/tmp", None)]


def test_the_stdio_relay_judges_the_default_and_forwards_the_clients_request():
    w = Wire(GUARD, tools=_tools())

    async def go():
        w.send(call(1, "purge", {}))
        w.send(call(2, "purge", {"path": "/srv/a"}))
        await w.settle()

    run(go())
    assert [c["params"]["arguments"] for c in w.calls()] == [{"path": "/srv/a"}]  # as sent: no default added
    assert next(m for m in w.client if m.get("id") == 1)["result"]["isError"] is True


_names = st.sampled_from(["a", "b", "c"])
_values = st.one_of(st.integers(), st.text(max_size=4), st.none(), st.booleans())


@settings(max_examples=200, deadline=None)
@given(defaults=st.dictionaries(_names, _values), given_args=st.dictionaries(_names, _values))
def test_property_the_judged_call_is_the_call_with_every_absent_default(defaults, given_args):
    """What the guard judges is exactly what pydantic hands the function: the given arguments, and for each
    property left out that lists a default, that default (never overriding a given value)."""
    schema = {"type": "object", "properties": {k: ({"default": defaults[k]} if k in defaults else {}) | {"title": k}
                                                for k in ["a", "b", "c"]}}
    judged = judged_call({"t": schema}, ToolCall("t", dict(given_args)))
    assert judged.arguments == {**{k: defaults[k] for k in defaults}, **given_args}
