"""Red team (session 22): an Agents SDK agent's MCP tool that the SDK renames is judged as the server's own tool.

With ``mcp_config={"include_server_in_tool_names": True}`` the SDK calls a server's ``purge`` ``mcp_fs__purge``, and
``mcp_a_b__purge_4bdc81d0`` when two servers' names sanitise alike (``a.b``, ``a_b``): the guard judged the public
name, so a rule denying ``purge`` let it run, and the server's reading of the arguments (by the schema it listed under
``purge``) was skipped: ``{"paths": "[\\"/etc/shadow\\"]"}`` ran as the list. Now the call is judged under the server's
name (``fs__purge``: a refusing rule meets ``purge``, an allow list names the whole) and read as that server reads it.
The servers are the SDK's MCP server interface over real ``mcp`` ``MCPServer`` instances (what the function receives
is recorded), the runs real ``Runner.run`` with a scripted model."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("agents")
pytest.importorskip("mcp")

from agents import Agent, RunConfig, Runner  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402
from hypothesis import given, settings, strategies as st  # noqa: E402

from agentguard.core.types import Verdict  # noqa: E402
from agentguard.integrations.openai_agents import AgentsGuard  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402

from test_openai_agents_mcp_reading import Bridge  # noqa: E402

PREFIX = {"include_server_in_tool_names": True}


class Named(Bridge):
    """A real ``MCPServer`` behind the SDK's server interface, under a chosen name; records what its tools received."""

    def __init__(self, ran: list, name: str) -> None:
        super().__init__(ran)
        self._name = name

    @property
    def name(self) -> str:
        return self._name


class Judged:
    """A guard that allows everything and records the calls it judged."""

    name = "judged"

    def __init__(self) -> None:
        self.calls: list = []

    def check(self, ctx, call):
        self.calls.append((call.name, dict(call.arguments)))
        return Verdict.allow()

    async def acheck(self, ctx, call):
        return self.check(ctx, call)


async def _public_names(servers: list, cfg: dict) -> dict:
    from agents import RunContextWrapper

    agent = Agent(name="probe", mcp_servers=servers, mcp_config=cfg)
    tools = await agent.get_mcp_tools(RunContextWrapper(None))
    return {(t._mcp_tool_binding[0], t._mcp_tool_binding[1]): t.name for t in tools}


def public_name(server_names: list[str], server: str, tool: str, cfg: dict) -> str:
    """The name the SDK gives ``server``'s ``tool`` (what the model calls), asked of the SDK itself."""
    names = asyncio.run(_public_names([Named([], n) for n in server_names], cfg))
    return names[(server, tool)]


def run(name: str, args: dict, server_names: list[str], guard, cfg: dict | None = None, strict: bool = False) -> list:
    ran: list = []
    agent = Agent(name="a", mcp_servers=[Named(ran, n) for n in server_names],
                  mcp_config={**(cfg or {}), "convert_schemas_to_strict": strict}, model=ScriptedModel(
        [[function_call(name, args, call_id="c1")], [assistant_message("done")], [assistant_message("done")]]))
    if guard is not None:
        AgentsGuard(guard).guard_agent(agent)
    try:
        asyncio.run(Runner.run(agent, "go", max_turns=4, run_config=RunConfig(tracing_disabled=True)))
    except Exception:  # noqa: BLE001 - what ran is what the test reads
        pass
    return ran


DENY = ToolRuleGuard(deny=["purge"], name="deny")
ARGS = ToolRuleGuard(arguments=[{"tool": "delete_paths", "arg": "paths", "forbid": "^/etc"}], name="args")

ATTACKS = [  # (public name, arguments, servers, guard): each ran the server's tool with the guard installed
    ("mcp_fs__delete_paths", {"paths": '["/etc/shadow"]'}, ["fs"], ARGS),        # read skipped under the prefix
    ("mcp_a_b__purge_4bdc81d0", {"path": "/srv"}, ["a.b", "a_b"], DENY),          # hashed: no form is 'purge'
    ("mcp_a_b__delete_paths_8eadae08", {"paths": '["/etc/shadow"]'}, ["a.b", "a_b"], ARGS),
]


def test_the_oracle_the_sdk_renames_and_the_server_runs_its_own_tool():
    assert public_name(["a.b", "a_b"], "a.b", "purge", PREFIX) == "mcp_a_b__purge_4bdc81d0"
    assert public_name(["fs"], "fs", "purge", PREFIX) == "mcp_fs__purge"
    for name, args, servers, _ in ATTACKS:
        assert run(name, args, servers, None, PREFIX)  # no guard: the server's tool runs


@pytest.mark.parametrize("name,args,servers,guard", ATTACKS)
def test_a_renamed_mcp_tool_is_judged_as_the_servers_tool(name, args, servers, guard):
    assert run(name, args, servers, guard, PREFIX) == []


def test_regression_the_servers_name_is_what_an_allow_list_grants():
    allow = ToolRuleGuard(allow=["fs__purge"], name="allow")
    assert run("mcp_fs__purge", {"path": "/srv", "keep": 2}, ["fs"], allow, PREFIX) == [("purge", "/srv", 2)]
    assert run("mcp_fs__purge", {"path": "/srv", "keep": 2}, ["fs"],
               ToolRuleGuard(allow=["mcp_fs__purge"], name="allow"), PREFIX) == []  # the public name grants nothing
    both = ToolRuleGuard(allow=["a.b__purge"], name="allow")
    assert run("mcp_a_b__purge_4bdc81d0", {"path": "/srv"}, ["a.b", "a_b"], both, PREFIX) == [("purge", "/srv", 1)]
    assert run("mcp_a_b__purge_27787612", {"path": "/srv"}, ["a.b", "a_b"], both, PREFIX) == []  # a_b's is not a.b's
    assert run("purge", {"path": "/srv"}, ["fs"], ToolRuleGuard(allow=["purge"], name="allow")) == \
        [("purge", "/srv", 1)]  # not renamed: the listed name, as before


SERVER_NAMES = st.lists(st.sampled_from(["fs", "a.b", "a_b", "a-b", "x" * 70, "srv one", "a b"]), min_size=1,
                        max_size=3, unique=True)
CALLS = st.sampled_from([
    ("purge", {}), ("purge", {"path": "/srv", "keep": 3}), ("purge", {"path": "/srv", "keep": "00"}),
    ("delete_paths", {"paths": ["/tmp/a"]}), ("delete_paths", {"paths": '["/etc/shadow"]'}),
    ("delete_paths", {"paths": "/tmp/b"}),
])


@settings(max_examples=20, deadline=None)
@given(SERVER_NAMES, st.data(), CALLS, st.booleans(), st.booleans())
def test_property_the_guard_judges_the_tool_and_arguments_the_server_runs(servers, data, call, prefix, strict):
    """Whatever the servers are called, renamed or not, strict or not: every call that reaches a server's tool was
    judged under that server's tool (a namespace form of the judged name is the listed name) with exactly the
    arguments the tool received, and the guard refuses what the server would read otherwise (a JSON text, "00")."""
    if not prefix:
        servers = servers[:1]  # without prefixes the SDK refuses two servers listing the same names
    cfg = PREFIX if prefix else {}
    server = data.draw(st.sampled_from(servers))
    tool, args = call
    name = public_name(servers, server, tool, cfg) if prefix else tool
    judged = Judged()
    ran = run(name, args, servers, judged, cfg, strict)
    expected = tool if not prefix or name == tool else f"{server}__{tool}"
    read_otherwise = args in ({"paths": '["/etc/shadow"]'}, {"path": "/srv", "keep": "00"})
    assert judged.calls == ([] if read_otherwise else [(expected, judged.calls[0][1] if judged.calls else None)])
    if read_otherwise:
        assert ran == []
        return
    received = {"purge": lambda r: {"path": r[1], "keep": r[2]}, "delete_paths": lambda r: {"paths": r[1]}}
    assert [received[r[0]](r) for r in ran] == [judged.calls[0][1]]
    refused = run(name, args, servers, ToolRuleGuard(deny=[tool], name="deny"), cfg, strict)
    assert refused == []
