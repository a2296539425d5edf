"""Red team (session 19): every tool the real Agents SDK can run passes through the guard (``openai_agents_reach``).

Checked against the real SDK (0.24, its own ``ScriptedModel``) before the fix, a stack denying ``delete_*`` and
``transfer_to_*``, after ``AgentsGuard.guard_agent``:

- a tool appended to ``agent.tools`` afterwards ran (``delete_file`` executed);
- ``agent.clone(tools=[*agent.tools, delete_file])`` ran it;
- two tools named ``read`` in namespaces ``safe`` and ``danger``: the guard judged the bare ``read``, so an allow list
  granting ``read`` let ``danger.read`` run (the SDK dispatches ``namespace.name``);
- a handoff's ``on_handoff`` callback ran with the model's input (``{"path": "/etc"}``) though ``transfer_to_*`` is
  denied: no guardrail sees a handoff;
- an ESCALATE of a namespaced tool that the human approved never ran (the guard asked the SDK about ``send``, the SDK
  records the approval of ``mail.send``): over-refusal, fixed with the same name.

Each stays here with the property: over generated tool sets (namespaced or not, added before or after
``guard_agent``, by append, clone or a helper agent) and scripted calls, no tool the guard refuses runs.
"""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("agents")

from agents import Agent, RunConfig, Runner, ShellTool, function_tool, handoff, tool_namespace  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from agentguard.core import Context, Decision, ToolCall  # noqa: E402
from agentguard.core.errors import InputError  # noqa: E402
from agentguard.integrations.openai_agents import AgentsGuard  # noqa: E402
from agentguard.integrations.openai_agents_reach import (  # noqa: E402
    GuardHooks,
    HandoffRefused,
    UngatedToolCall,
    call_name,
    has_passed,
)
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402

RC = RunConfig(tracing_disabled=True)


def tool(ran: list, name: str, tag: str | None = None):
    def f(path: str) -> str:
        """A tool."""
        ran.append((tag or name, path))
        return "ok"

    f.__name__ = name
    return function_tool(f)


def script(*calls) -> ScriptedModel:
    return ScriptedModel([[*calls], [assistant_message("done")], [assistant_message("done")]])


def run(agent: Agent) -> str:
    try:
        asyncio.run(Runner.run(agent, "go", max_turns=6, run_config=RC, context={"run_id": "r"}))
        return "finished"
    except Exception as exc:  # noqa: BLE001 - the test reads what ran, and which exception stopped the run
        return type(exc).__name__


def deny() -> AgentsGuard:
    return AgentsGuard(ToolRuleGuard(deny=["delete_*", "transfer_to_*"], name="nd"))


def test_a_tool_appended_after_guard_agent_is_gated():
    ran: list = []
    a = Agent(name="a", tools=[tool(ran, "read_file")], model=script(function_call("delete_file", {"path": "/x"},
                                                                                    call_id="c1")))
    deny().guard_agent(a)
    a.tools.append(tool(ran, "delete_file"))
    run(a)
    assert ran == []


def test_a_clone_with_new_tools_is_gated():
    ran: list = []
    a = Agent(name="a", tools=[tool(ran, "read_file")], model=script(function_call("delete_file", {"path": "/x"},
                                                                                    call_id="c1")))
    deny().guard_agent(a)
    run(a.clone(tools=[*a.tools, tool(ran, "delete_file")]))
    assert ran == []


def test_regression_an_allowed_appended_tool_still_runs():
    ran: list = []
    a = Agent(name="a", tools=[], model=script(function_call("read_file", {"path": "/x"}, call_id="c1")))
    deny().guard_agent(a)
    a.tools.append(tool(ran, "read_file"))
    assert run(a) == "finished" and ran == [("read_file", "/x")]


def test_namespaced_tools_are_judged_by_the_name_the_sdk_dispatches():
    ran: list = []
    ag = AgentsGuard(ToolRuleGuard(allow=["read"], name="al"))
    tools = [*tool_namespace(name="safe", description="d", tools=[tool(ran, "read", "safe.read")]),
             *tool_namespace(name="danger", description="d", tools=[tool(ran, "read", "danger.read")])]
    a = Agent(name="a", tools=tools, model=script(function_call("read", {"path": "/x"}, call_id="c1",
                                                                namespace="danger")))
    ag.guard_agent(a)
    run(a)
    assert ran == []
    ok = AgentsGuard(ToolRuleGuard(allow=["safe.read"], name="al"))
    tools = [*tool_namespace(name="safe", description="d", tools=[tool(ran, "read", "safe.read")]),
             *tool_namespace(name="danger", description="d", tools=[tool(ran, "read", "danger.read")])]
    b = Agent(name="b", tools=tools, model=script(function_call("read", {"path": "/x"}, call_id="c2", namespace="safe")))
    ok.guard_agent(b)
    assert run(b) == "finished" and ran == [("safe.read", "/x")]


def test_a_refusing_rule_still_meets_a_namespaced_tool():
    ran: list = []
    tools = tool_namespace(name="fs", description="d", tools=[tool(ran, "delete_file")])
    a = Agent(name="a", tools=tools, model=script(function_call("delete_file", {"path": "/x"}, call_id="c1",
                                                                namespace="fs")))
    deny().guard_agent(a)
    run(a)
    assert ran == []


def test_tools_copied_into_a_namespace_after_guarding_are_rebound():
    ran: list = []
    ag = AgentsGuard(ToolRuleGuard(allow=["read"], name="al"))
    plain = [tool(ran, "read")]
    ag.guard_tools(plain)  # guarded under the bare name, then copied into a namespace
    a = Agent(name="a", tools=tool_namespace(name="danger", description="d", tools=plain),
              model=script(function_call("read", {"path": "/x"}, call_id="c1", namespace="danger")))
    ag.guard_agent(a)
    run(a)
    assert ran == []


def test_an_approved_namespaced_escalation_runs_once():
    ran: list = []
    ag = AgentsGuard(ToolRuleGuard(escalate=["send"], name="esc"))
    a = Agent(name="a", tools=tool_namespace(name="mail", description="d", tools=[tool(ran, "send")]),
              model=script(function_call("send", {"path": "x"}, call_id="c1", namespace="mail")))
    ag.guard_agent(a)

    async def go():
        r = await Runner.run(a, "go", run_config=RC, context={"run_id": "r"})
        [item] = r.interruptions
        assert "mail.send" in ag.approval_request(item)["text"]
        state = r.to_state()
        state.approve(item)
        await Runner.run(a, state, run_config=RC, context={"run_id": "r"})

    asyncio.run(go())
    assert ran == [("send", "x")]


class Where(BaseModel):
    path: str


def test_a_refused_handoff_never_runs_its_callback():
    ran: list = []

    async def on_h(ctx, inp: Where):
        ran.append(("on_handoff", inp.path))

    b = Agent(name="b", model=ScriptedModel([[assistant_message("hi")]]))
    model = ScriptedModel([[function_call("transfer_to_b", {"path": "/etc"}, call_id="h1")], [assistant_message("ok")]])
    a = Agent(name="a", handoffs=[handoff(b, on_handoff=on_h, input_type=Where)], model=model)
    deny().guard_agent(a)
    # session 20: refused, the run is steered (not ended): agent a goes on and its model reads the refusal
    assert run(a) == "finished" and ran == []
    assert "agentguard refused tool call transfer_to_b" in str(model.calls[-1].input[-1])


def test_regression_an_allowed_handoff_runs_and_its_agent_is_gated():
    ran: list = []

    async def on_h(ctx, inp: Where):
        ran.append(("on_handoff", inp.path))

    b = Agent(name="b", tools=[tool(ran, "delete_file")],
              model=script(function_call("delete_file", {"path": "/y"}, call_id="d1")))
    a = Agent(name="a", handoffs=[handoff(b, on_handoff=on_h, input_type=Where)],
              model=ScriptedModel([[function_call("transfer_to_b", {"path": "/srv"}, call_id="h1")]]))
    AgentsGuard(ToolRuleGuard(deny=["delete_*"], name="nd")).guard_agent(a)
    assert run(a) == "finished"
    assert ran == [("on_handoff", "/srv")]


def test_a_tool_of_another_kind_added_later_stops_the_run_before_the_model_is_called():
    ran: list = []
    model = script()
    a = Agent(name="a", tools=[tool(ran, "read_file")], model=model)
    deny().guard_agent(a)
    # (session 20: a local ShellTool is now judged through its approval hooks; a hosted one still cannot be gated)
    a.tools.append(ShellTool(environment={"type": "container_auto"}))
    with pytest.raises(InputError, match="not a function tool"):
        asyncio.run(Runner.run(a, "go", run_config=RC))
    assert model.calls == ()


class Ctx:
    """What the SDK hands ``on_tool_start`` for a function tool (a ToolContext's fields)."""

    context = None

    def __init__(self, name: str, args: str) -> None:
        self.tool_name, self.tool_arguments, self.tool_call_id = name, args, "c9"


def test_the_backstop_decides_a_tool_start_the_guardrail_did_not_pass():
    """A function tool whose call did not pass the guardrail is decided at its start: refused -> its body never runs
    and the invocation answers the refusal (session 20: the run goes on; before, UngatedToolCall ended it); a stop
    (an unreadable call under on_error = HALT) ends the run; allowed -> it runs (marked). A tool of another kind
    stops the run, with or without ``allow_unguarded`` (session 20: a shell tool ran unjudged with it)."""
    ag = deny()
    hooks = GuardHooks(ag, None, allow_unguarded=False)
    refused, body = Ctx("delete_file", '{"path": "/x"}'), tool(ran := [], "delete_file")
    asyncio.run(hooks.on_tool_start(refused, Agent(name="a"), body))
    assert not has_passed(refused, ag)
    assert "agentguard refused" in asyncio.run(body.on_invoke_tool(refused, '{"path": "/x"}')) and ran == []
    with pytest.raises(UngatedToolCall):  # arguments no strict reader agrees on
        asyncio.run(hooks.on_tool_start(Ctx("read_file", '{"path": "a", "path": "b"}'), Agent(name="a"),
                                        tool([], "read_file")))
    ag = deny()  # (the unreadable call halted the first guard's run, as on_error = HALT says)
    hooks = GuardHooks(ag, None, allow_unguarded=False)
    ok = Ctx("read_file", '{"path": "/x"}')
    asyncio.run(hooks.on_tool_start(ok, Agent(name="a"), tool([], "read_file")))
    assert has_passed(ok, ag)
    with pytest.raises(UngatedToolCall):
        asyncio.run(hooks.on_tool_start(Ctx("shell", "{}"), Agent(name="a"), ShellTool(executor=lambda req: "x")))
    with pytest.raises(UngatedToolCall):
        asyncio.run(GuardHooks(ag, None, allow_unguarded=True).on_tool_start(Ctx("shell", "{}"), Agent(name="a"),
                                                                             ShellTool(executor=lambda req: "x")))


def test_the_agents_own_hooks_still_run():
    seen: list = []
    from agents import AgentHooks

    class Mine(AgentHooks):
        async def on_tool_start(self, context, agent, tool):
            seen.append(tool.name)

    ran: list = []
    a = Agent(name="a", tools=[tool(ran, "read_file")], hooks=Mine(),
              model=script(function_call("read_file", {"path": "/x"}, call_id="c1")))
    deny().guard_agent(a)
    assert run(a) == "finished" and seen == ["read_file"] and ran == [("read_file", "/x")]


def test_regression_refused_under_stop_on_first_tool():
    ran: list = []
    a = Agent(name="a", tools=[tool(ran, "delete_file")], tool_use_behavior="stop_on_first_tool",
              model=script(function_call("delete_file", {"path": "/x"}, call_id="c1")))
    deny().guard_agent(a)
    run(a)
    assert ran == []


NAMES = ["read", "delete_file", "send"]
NAMESPACES = [None, "fs", "danger"]
HOW = ["initial", "append", "clone", "helper"]
RULES = [dict(deny=["delete_*"]), dict(allow=["read", "fs.send"]), dict(deny=["danger.*", "send"])]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(NAMESPACES), st.sampled_from(HOW)), min_size=1,
                max_size=5, unique_by=lambda t: (t[0], t[1])),
       st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(NAMESPACES)), min_size=1, max_size=4),
       st.sampled_from(range(len(RULES))))
def test_property_no_tool_the_guard_refuses_runs(specs, calls, rules):
    """Over generated tool sets and scripted calls: every tool body that ran is one the guard allows under the
    name the SDK dispatched (the oracle: the same rule guard asked directly)."""
    ran: list = []
    rule = ToolRuleGuard(name="r", **RULES[rules])
    by_how: dict[str, list] = {h: [] for h in HOW}
    for name, ns, how in specs:
        t = tool(ran, name, call_name(name, ns))
        by_how[how] += tool_namespace(name=ns, description="d", tools=[t]) if ns else [t]
    turns = [function_call(n, {"path": "/p"}, call_id=f"c{i}", namespace=ns) for i, (n, ns) in enumerate(calls)]
    leaf = Agent(name="leaf", tools=by_how["helper"], model=script(*turns))
    outer_turns = [function_call("ask_leaf", {"input": "go"}, call_id="o1"), *turns]
    helper = leaf.as_tool(tool_name="ask_leaf", tool_description="Ask.")
    a = Agent(name="a", tools=[helper, *by_how["initial"]], model=script(*outer_turns))
    AgentsGuard(rule).guard_agent(a)
    a.tools.extend(by_how["append"])
    leaf.tools.extend([])
    if by_how["clone"]:
        a = a.clone(tools=[*a.tools, *by_how["clone"]])
    run(a)
    for qualified, _ in ran:
        assert rule.check(Context(run_id="x"), ToolCall(qualified, {"path": "/p"})).decision == Decision.ALLOW, (qualified, ran)


# -- MCP servers attached to an agent: gated through the SDK's own server-level tool guardrails ----------------------
from agents.mcp import MCPServer  # noqa: E402
from mcp.types import CallToolResult, ListPromptsResult, TextContent, Tool  # noqa: E402


class FakeServer(MCPServer):
    """An in-memory MCP server for the SDK (its own MCPServer interface): lists two tools, records each call."""

    def __init__(self, ran: list, **kw) -> None:
        super().__init__(**kw)
        self.ran = ran

    async def connect(self):
        return None

    @property
    def name(self) -> str:
        return "fs"

    async def cleanup(self):
        return None

    async def list_tools(self, run_context=None, agent=None):
        schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
        return [Tool(name=n, inputSchema=schema) for n in ("delete_file", "read_file", "send")]

    async def call_tool(self, tool_name, arguments, meta=None):
        self.ran.append((tool_name, (arguments or {}).get("path")))
        return CallToolResult(content=[TextContent(type="text", text="ok")])

    async def list_prompts(self):
        return ListPromptsResult(prompts=[])

    async def get_prompt(self, name, arguments=None):
        raise KeyError(name)


@pytest.mark.parametrize("allow_unguarded", [False, True])
@pytest.mark.parametrize("later", [False, True])
def test_an_agents_mcp_server_tools_are_gated(allow_unguarded, later):
    """Before: guard_agent refused an agent with ``mcp_servers`` (InputError), and with ``allow_unguarded=True`` its
    tools ran unjudged; a server attached after guard_agent ran unjudged too. The SDK builds each MCP tool with the
    server's ``tool_input_guardrails``: the guard's are added there."""
    ran: list = []
    srv = FakeServer(ran)
    a = Agent(name="a", model=script(function_call("delete_file", {"path": "/x"}, call_id="c1"),
                                     function_call("read_file", {"path": "/y"}, call_id="c2")))
    if later:
        deny().guard_agent(a, allow_unguarded=allow_unguarded)
        a.mcp_servers.append(srv)
    else:
        a.mcp_servers.append(srv)
        deny().guard_agent(a, allow_unguarded=allow_unguarded)
    assert run(a) == "finished"
    assert ran == [("read_file", "/y")]


def test_an_escalated_mcp_tool_call_is_refused_not_run():
    """The SDK asks no human through agentguard for an MCP tool (its approval policy is the server's): refused."""
    ran: list = []
    a = Agent(name="a", mcp_servers=[FakeServer(ran)],
              model=script(function_call("send", {"path": "x"}, call_id="c1")))
    AgentsGuard(ToolRuleGuard(escalate=["send"], name="esc")).guard_agent(a)
    run(a)
    assert ran == []


def test_a_tool_replaced_between_an_interruption_and_its_resume_does_not_run_unjudged():
    """The resumed run executes the approved call before any model call (no walk runs first): a tool object put in
    the approved one's place meanwhile carries no guardrail, and the backstop stops the run before its body."""
    ran: list = []
    ag = AgentsGuard(ToolRuleGuard(escalate=["send"], name="esc"))
    a = Agent(name="a", tools=[tool(ran, "send")], model=script(function_call("send", {"path": "x"}, call_id="c1")))
    ag.guard_agent(a)

    async def go():
        r = await Runner.run(a, "go", run_config=RC, context={"run_id": "r"})
        state = r.to_state()
        state.approve(r.interruptions[0])
        a.tools[0] = tool(ran, "send", "replacement")
        await Runner.run(a, state, run_config=RC, context={"run_id": "r"})

    try:
        asyncio.run(go())
    except Exception:  # noqa: BLE001 - the run may end with the backstop's error; what matters is what ran
        pass
    assert ("replacement", "x") not in ran


# -- SandboxAgent: the SDK clones the agent at run time with its capabilities' tools (shell, filesystem) --------------
def sandbox_run(tmp_path, command: str, rule: dict, allow_unguarded: bool = False) -> bool:
    from agents.run_config import SandboxRunConfig
    from agents.sandbox.capabilities.shell import Shell
    from agents.sandbox.sandbox_agent import SandboxAgent
    from agents.sandbox.sandboxes.unix_local import UnixLocalSandboxClient

    marker = tmp_path / f"ran-{abs(hash((command, str(rule), allow_unguarded)))}"
    a = SandboxAgent(name="a", capabilities=[Shell()],
                     model=script(function_call("exec_command", {"cmd": f"{command} {marker}"}, call_id="c1")))
    AgentsGuard(ToolRuleGuard(name="r", **rule)).guard_agent(a, allow_unguarded=allow_unguarded)
    try:
        asyncio.run(Runner.run(a, "go", run_config=RunConfig(
            tracing_disabled=True, sandbox=SandboxRunConfig(client=UnixLocalSandboxClient()))))
    except Exception:  # noqa: BLE001 - a refused capability call ends the run; what matters is whether it ran
        pass
    return marker.exists()


@pytest.mark.parametrize("allow_unguarded", [False, True])
def test_a_sandbox_agents_shell_capability_is_decided(tmp_path, allow_unguarded):
    """Before: ``exec_command`` (a function tool the SDK adds to a clone of the SandboxAgent for the run, which no
    walk of the agent reaches) ran ``touch`` though the guard denies ``exec_command``, with or without
    ``allow_unguarded``. Now it is decided at its start: refused, the run ends before the command runs."""
    assert not sandbox_run(tmp_path, "touch", {"deny": ["exec_command"]}, allow_unguarded)
    assert sandbox_run(tmp_path, "touch", {"deny": ["delete_*"]}, allow_unguarded)  # allowed: it runs


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.sampled_from(["touch", "mkdir", "mkdir -p"]), st.sampled_from(["^touch", "^mkdir", "^rm"]))
def test_property_a_sandbox_command_runs_iff_the_guard_allows_it(tmp_path, command, forbid):
    rule = {"arguments": [{"tool": "exec_command", "arg": "cmd", "forbid": forbid}]}
    allowed = ToolRuleGuard(name="r", **rule).check(Context(run_id="x"), ToolCall(
        "exec_command", {"cmd": f"{command} /m"})).decision == Decision.ALLOW
    assert sandbox_run(tmp_path, command, rule) == allowed


@pytest.mark.parametrize("namespaced", [False, True])
def test_two_guards_on_one_agent_each_decide_each_call_once(namespaced):
    """Two AgentsGuards gating the same agent, over two turns (a tool copied into a namespace after both guarded it):
    each guard decides each call once. Before: the walk of one guard did not see its closure under the other's and
    wrapped the tool again each turn (three, then five decisions of one call), and the run-time marker named one
    guard only, so the other's backstop decided again."""
    seen: list = []

    class Count(ToolRuleGuard):
        def check(self, context, proposal):
            seen.append((self.name, getattr(proposal, "name", None)))
            return super().check(context, proposal)

    ran: list = []
    ns = "fs" if namespaced else None
    tools = [tool(ran, "read_file")]
    one, two = AgentsGuard(Count(name="one")), AgentsGuard(Count(name="two"))
    one.guard_tools(tools)
    two.guard_tools(tools)
    model = ScriptedModel([[function_call("read_file", {"path": "/x"}, call_id="c1", namespace=ns)],
                           [function_call("read_file", {"path": "/y"}, call_id="c2", namespace=ns)],
                           [assistant_message("done")]])
    a = Agent(name="a", tools=tool_namespace(name="fs", description="d", tools=tools) if ns else tools, model=model)
    one.guard_agent(a)
    two.guard_agent(a)
    assert run(a) == "finished" and ran == [("read_file", "/x"), ("read_file", "/y")]
    name = call_name("read_file", ns)
    assert sorted(seen) == [("one", name)] * 2 + [("two", name)] * 2
