"""Session 20: a refusal the guard reaches late in an Agents SDK run steers the run instead of ending it, and
``allow_unguarded`` never covers a tool that executes commands or drives a machine (``openai_agents_reach``).

Checked against the real SDK (0.24, its own ``ScriptedModel`` and a local ``SandboxAgent``) before the fix:

- a ``SandboxAgent``'s ``exec_command`` (a tool the SDK builds for the run, which only the hooks' backstop decides)
  denied by the guard: the run ended with ``UngatedToolCall`` (wrapped in the SDK's ``UserError``); the model never
  learned why and could not re-plan;
- a denied ``transfer_to_b`` handoff: the run ended with ``HandoffRefused``;
- ``guard_agent(agent, allow_unguarded=True)`` with a local ``ShellTool``, ``LocalShellTool``, ``ComputerTool``,
  ``ApplyPatchTool``, a ``CustomTool``, ``CodeInterpreterTool`` or ``HostedMCPTool``: accepted, and the hooks'
  backstop let a shell call start unjudged.

Now: a REJECT is the call's output (the model's next turn reads it, the run goes on, the body never runs); a HALT
still ends the run; ``allow_unguarded`` covers only the read-only hosted kinds (web/file/tool search, images).
"""

from __future__ import annotations

import asyncio
import os

import pytest

pytest.importorskip("agents")

from agents import (  # noqa: E402
    Agent,
    ApplyPatchTool,
    CodeInterpreterTool,
    CustomTool,
    FileSearchTool,
    HostedMCPTool,
    ImageGenerationTool,
    LocalShellTool,
    RunConfig,
    Runner,
    ShellTool,
    WebSearchTool,
    handoff,
)
from agents.extensions import handoff_filters  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from agentguard.core.errors import InputError  # noqa: E402
from agentguard.integrations.openai_agents import AgentsGuard  # noqa: E402
from agentguard.integrations.openai_agents_reach import GuardHooks, UngatedToolCall, unguarded_ok  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402

RC = RunConfig(tracing_disabled=True)
RULES = {"reject": {"deny": ["exec_command", "transfer_to_*"]}, "halt": {"halt": ["exec_command", "transfer_to_*"]},
         "allow": {"deny": ["nothing"]}}


def sandbox(marker: str, rule: str, allow_unguarded: bool = False, streamed: bool = False) -> tuple[str, ScriptedModel]:
    """Run a local SandboxAgent whose model calls ``exec_command`` (touch ``marker``), then answers: how the run
    ended ("finished" or the exception's name) and the model (its calls)."""
    from agents.run_config import SandboxRunConfig
    from agents.sandbox.capabilities.shell import Shell
    from agents.sandbox.sandbox_agent import SandboxAgent
    from agents.sandbox.sandboxes.unix_local import UnixLocalSandboxClient

    model = ScriptedModel([[function_call("exec_command", {"cmd": f"touch {marker}"}, call_id="c1")],
                           [assistant_message("re-planned")]])
    a = SandboxAgent(name="a", capabilities=[Shell()], model=model)
    AgentsGuard(ToolRuleGuard(name="r", **RULES[rule])).guard_agent(a, allow_unguarded=allow_unguarded)
    rc = RunConfig(tracing_disabled=True, sandbox=SandboxRunConfig(client=UnixLocalSandboxClient()))

    async def go():
        if not streamed:
            return await Runner.run(a, "go", run_config=rc)
        res = Runner.run_streamed(a, "go", run_config=rc)
        async for _ in res.stream_events():
            pass
        return res

    try:
        asyncio.run(go())
        return "finished", model
    except Exception as exc:  # noqa: BLE001 - the test reads how the run ended
        return type(exc).__name__, model


def handoff_run(rule: str, filtered: bool = False) -> tuple[str, list, ScriptedModel, str]:
    ran: list = []

    async def on_h(ctx):
        ran.append("on_handoff")

    b = Agent(name="b", model=ScriptedModel([[assistant_message("b here")]]))
    model = ScriptedModel([[function_call("transfer_to_b", {}, call_id="h1")], [assistant_message("a re-planned")]])
    h = handoff(b, on_handoff=on_h, input_filter=handoff_filters.remove_all_tools if filtered else None)
    a = Agent(name="a", handoffs=[h], model=model)
    AgentsGuard(ToolRuleGuard(name="r", **RULES[rule])).guard_agent(a)
    try:
        r = asyncio.run(Runner.run(a, "go", run_config=RC, context={"run_id": "r"}))
        return "finished", ran, model, r.last_agent.name
    except Exception as exc:  # noqa: BLE001
        return type(exc).__name__, ran, model, ""


def model_read_refusal(model: ScriptedModel) -> bool:
    return len(model.calls) >= 2 and "agentguard refused tool call" in str(model.calls[-1].input)


def test_a_late_rejected_tool_call_is_returned_to_the_model_and_the_run_goes_on(tmp_path):
    marker = str(tmp_path / "m")
    how, model = sandbox(marker, "reject")
    assert how == "finished" and not os.path.exists(marker)
    assert model_read_refusal(model)


def test_a_late_halt_ends_the_run_before_the_tool_runs(tmp_path):
    marker = str(tmp_path / "m")
    how, model = sandbox(marker, "halt")
    assert how != "finished" and not os.path.exists(marker) and len(model.calls) == 1


def test_regression_a_late_allowed_call_runs(tmp_path):
    marker = str(tmp_path / "m")
    assert sandbox(marker, "allow")[0] == "finished" and os.path.exists(marker)


def test_a_rejected_handoff_steers_back_to_the_asking_agent():
    how, ran, model, last = handoff_run("reject")
    assert how == "finished" and ran == [] and last == "a" and model_read_refusal(model)


def test_a_rejected_handoff_keeps_its_refusal_through_the_handoffs_input_filter():
    """``remove_all_tools`` would drop the call and its output from the history: the model would not see why."""
    how, ran, model, last = handoff_run("reject", filtered=True)
    assert how == "finished" and ran == [] and last == "a" and model_read_refusal(model)


def test_a_halted_handoff_ends_the_run():
    how, ran, model, _ = handoff_run("halt")
    assert how == "HandoffRefused" and ran == [] and len(model.calls) == 1


def test_regression_an_allowed_handoff_transfers():
    how, ran, _, last = handoff_run("allow")
    assert how == "finished" and ran == ["on_handoff"] and last == "b"


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.sampled_from(sorted(RULES)), st.sampled_from(["tool", "streamed tool", "handoff", "filtered handoff"]))
def test_property_refused_never_runs_reject_steers_halt_stops(tmp_path, rule, via):
    """Over rules (reject, halt, allow) and late paths (a run-built tool, a handoff with or without a filter): the
    refused body never runs; a REJECT finishes the run with the refusal in the model's next input; a HALT ends it."""
    if via.endswith("tool"):
        marker = str(tmp_path / f"m-{rule}-{via.replace(' ', '-')}")
        how, model = sandbox(marker, rule, streamed=via.startswith("streamed"))
        ran = os.path.exists(marker)
    else:
        how, calls, model, _ = handoff_run(rule, filtered=via != "handoff")
        ran = calls != []
    assert ran == (rule == "allow")
    assert (how == "finished") == (rule != "halt")
    if rule == "reject":
        assert model_read_refusal(model)


# -- allow_unguarded covers only read-only hosted tools -------------------------------------------------------------
class Editor:
    def create_file(self, op):  # pragma: no cover - never called
        raise AssertionError("ran")

    update_file = delete_file = create_file


async def _custom(ctx, text):  # pragma: no cover - never called
    raise AssertionError("ran")


EXECUTING = {
    "shell (hosted)": lambda: ShellTool(environment={"type": "container_auto"}),
    "shell (own approvals)": lambda: ShellTool(executor=lambda req: "ran", needs_approval=True),
    "local shell": lambda: LocalShellTool(executor=lambda req: "ran"),
    "computer": lambda: __import__("agents").ComputerTool(computer=object()),
    "apply patch": lambda: ApplyPatchTool(editor=Editor()),
    "custom": lambda: CustomTool(name="c", description="d", on_invoke_tool=_custom),
    "code interpreter": lambda: CodeInterpreterTool(tool_config={"type": "code_interpreter", "container": {
        "type": "auto"}}),
    "hosted mcp": lambda: HostedMCPTool(tool_config={"type": "mcp", "server_label": "s",
                                                     "server_url": "https://example.com/mcp"}),
}
READ_ONLY = {
    "web search": lambda: WebSearchTool(),
    "file search": lambda: FileSearchTool(vector_store_ids=["v"]),
    "image generation": lambda: ImageGenerationTool(tool_config={"type": "image_generation"}),
}


@pytest.mark.parametrize("kind", sorted(EXECUTING))
def test_allow_unguarded_never_covers_a_tool_that_executes(kind):
    a = Agent(name="a", tools=[EXECUTING[kind]()])
    with pytest.raises(InputError, match="cannot gate"):
        AgentsGuard(ToolRuleGuard(deny=["x"], name="r")).guard_agent(a, allow_unguarded=True)


@pytest.mark.parametrize("kind", sorted(READ_ONLY))
def test_regression_allow_unguarded_still_covers_read_only_hosted_tools(kind):
    a = Agent(name="a", tools=[READ_ONLY[kind]()])
    assert AgentsGuard(ToolRuleGuard(deny=["x"], name="r")).guard_agent(a, allow_unguarded=True) is a


@given(st.sampled_from(sorted(EXECUTING)), st.booleans())
@settings(max_examples=20, deadline=None)
def test_property_an_executing_tool_never_starts_unjudged(kind, allow_unguarded):
    """The hooks' backstop, with or without ``allow_unguarded``: a tool of an executing kind never starts; a
    subclass of a read-only kind (which might run anything) is not covered either."""
    assert not unguarded_ok(EXECUTING[kind]())
    hooks = GuardHooks(AgentsGuard(ToolRuleGuard(deny=["x"], name="r")), None, allow_unguarded)
    with pytest.raises(UngatedToolCall):
        asyncio.run(hooks.on_tool_start(object(), Agent(name="a"), EXECUTING[kind]()))

    class LooksReadOnly(WebSearchTool):
        pass

    assert not unguarded_ok(LooksReadOnly())


def test_a_shell_tool_appended_after_guard_agent_stops_the_run_even_with_allow_unguarded():
    ran: list = []
    model = ScriptedModel([[assistant_message("done")]])
    a = Agent(name="a", model=model)
    AgentsGuard(ToolRuleGuard(deny=["x"], name="r")).guard_agent(a, allow_unguarded=True)
    a.tools.append(LocalShellTool(executor=lambda req: ran.append(req) or "ran"))  # (a local ShellTool is judged)
    with pytest.raises(InputError, match="cannot gate"):
        asyncio.run(Runner.run(a, "go", run_config=RC))
    assert model.calls == () and ran == []


# -- the same through streaming and run_sync; a guard that fails or is cancelled mid-decision --------------------------
def test_a_rejected_handoff_steers_when_streamed_and_when_run_sync():
    for how in ("streamed", "sync"):
        ran: list = []

        async def on_h(ctx):
            ran.append("on_handoff")

        b = Agent(name="b", model=ScriptedModel([[assistant_message("b")]]))
        model = ScriptedModel([[function_call("transfer_to_b", {}, call_id="h1")], [assistant_message("again")]])
        a = Agent(name="a", handoffs=[handoff(b, on_handoff=on_h)], model=model)
        AgentsGuard(ToolRuleGuard(name="r", **RULES["reject"])).guard_agent(a)
        if how == "sync":
            r = Runner.run_sync(a, "go", run_config=RC)
        else:
            async def go():
                res = Runner.run_streamed(a, "go", run_config=RC)
                async for _ in res.stream_events():
                    pass
                return res

            r = asyncio.run(go())
        assert r.last_agent.name == "a" and ran == [] and model_read_refusal(model), how


class Raising(ToolRuleGuard):
    def check(self, context, proposal):
        raise RuntimeError("guard broke")

    async def acheck(self, context, proposal):
        raise RuntimeError("guard broke")


@pytest.mark.parametrize("on_error", ["HALT", "REJECT"])
def test_a_guard_that_raises_at_a_handoff_fails_closed(on_error):
    """A guard error never lets the handoff run: on_error HALT ends the run, REJECT steers it."""
    ran: list = []

    async def on_h(ctx):
        ran.append("on_handoff")

    b = Agent(name="b", model=ScriptedModel([[assistant_message("b")]]))
    model = ScriptedModel([[function_call("transfer_to_b", {}, call_id="h1")], [assistant_message("again")]])
    a = Agent(name="a", handoffs=[handoff(b, on_handoff=on_h)], model=model)
    AgentsGuard(Raising(name="boom", deny=["x"]), on_error=on_error).guard_agent(a)
    try:
        r = asyncio.run(Runner.run(a, "go", run_config=RC))
        how, last = "finished", r.last_agent.name
    except Exception as exc:  # noqa: BLE001
        how, last = type(exc).__name__, ""
    assert ran == []
    assert (how, last) == (("HandoffRefused", "") if on_error == "HALT" else ("finished", "a"))


def test_a_refused_handoff_steers_only_to_the_running_agent_that_offers_it():
    """The agent a refused handoff returns to is the running one the hooks recorded, and only when it offers this
    very handoff (a stale record, an agent whose hooks were replaced, a handoff shared by another agent): else the
    run ends (HandoffRefused), never put in the hands of an agent that did not ask."""
    from agents import RunContextWrapper

    from agentguard.integrations.openai_agents_reach import RUNNING, HandoffRefused

    z = Agent(name="z")
    x = Agent(name="x", handoffs=[handoff(z)])
    AgentsGuard(ToolRuleGuard(name="r", deny=["transfer_to_z"])).guard_agent(x)
    [h] = x.handoffs
    for running, expect in ((x, "x"), (Agent(name="other", handoffs=[handoff(z)]), "HandoffRefused"),
                            (None, "HandoffRefused")):
        w = RunContextWrapper(context=None)
        if running is not None:
            setattr(w, RUNNING, running)
        try:
            got = asyncio.run(h.on_invoke_handoff(w, "{}")).name
        except HandoffRefused:
            got = "HandoffRefused"
        assert got == expect


class Slow(ToolRuleGuard):
    async def acheck(self, context, proposal):
        await asyncio.sleep(0.5)
        return super().check(context, proposal)


def test_a_run_cancelled_while_the_guard_decides_a_late_call_never_runs_it(tmp_path):
    """Cancelled mid-decision (the caller's timeout), the tool body never runs, not even after the guard would
    have answered ALLOW."""
    from agents.run_config import SandboxRunConfig
    from agents.sandbox.capabilities.shell import Shell
    from agents.sandbox.sandbox_agent import SandboxAgent
    from agents.sandbox.sandboxes.unix_local import UnixLocalSandboxClient

    marker = tmp_path / "m"
    a = SandboxAgent(name="a", capabilities=[Shell()], model=ScriptedModel([
        [function_call("exec_command", {"cmd": f"touch {marker}"}, call_id="c1")], [assistant_message("x")]]))
    AgentsGuard(Slow(name="slow", deny=["nothing"])).guard_agent(a)

    async def go():
        with pytest.raises((asyncio.TimeoutError, asyncio.CancelledError)):
            await asyncio.wait_for(Runner.run(a, "go", run_config=RunConfig(
                tracing_disabled=True, sandbox=SandboxRunConfig(client=UnixLocalSandboxClient()))), 0.2)
        await asyncio.sleep(1.0)

    asyncio.run(go())
    assert not marker.exists()


def test_parallel_late_calls_of_one_tool_are_answered_each_on_its_own(tmp_path):
    """Two ``exec_command`` calls in one model turn (the SDK runs them concurrently on one tool object): the refused
    one is answered with its refusal, the allowed one runs; the refusal of one never leaks to the other."""
    from agents.run_config import SandboxRunConfig
    from agents.sandbox.capabilities.shell import Shell
    from agents.sandbox.sandbox_agent import SandboxAgent
    from agents.sandbox.sandboxes.unix_local import UnixLocalSandboxClient

    ok, bad = tmp_path / "ok", tmp_path / "bad"
    model = ScriptedModel([[function_call("exec_command", {"cmd": f"mkdir {bad}"}, call_id="c1"),
                            function_call("exec_command", {"cmd": f"touch {ok}"}, call_id="c2")],
                           [assistant_message("x")]])
    a = SandboxAgent(name="a", capabilities=[Shell()], model=model)
    AgentsGuard(ToolRuleGuard(name="r", arguments=[{"tool": "exec_command", "arg": "cmd", "forbid": "^mkdir"}])
                ).guard_agent(a)
    asyncio.run(Runner.run(a, "go", run_config=RunConfig(
        tracing_disabled=True, sandbox=SandboxRunConfig(client=UnixLocalSandboxClient()))))
    assert ok.exists() and not bad.exists()
    outs = {i["call_id"]: i["output"] for i in model.calls[-1].input if isinstance(i, dict)
            and i.get("type") == "function_call_output"}
    assert "agentguard refused" in outs["c1"] and "agentguard refused" not in outs["c2"]


# -- a handoff's input is judged as its callback receives it (the SDK validates it with the input type) --------------
class Aliased(__import__("pydantic").BaseModel):
    path: str = __import__("pydantic").Field(alias="file")


class Stripped(__import__("pydantic").BaseModel):
    path: __import__("typing").Annotated[str, __import__("pydantic").StringConstraints(strip_whitespace=True)]
    depth: int = 1


def typed_handoff(input_type, args: dict, rule: ToolRuleGuard) -> tuple[list, str]:
    ran: list = []

    async def on_h(ctx, inp):
        ran.append(inp.model_dump())

    b = Agent(name="b", model=ScriptedModel([[assistant_message("b")]]))
    a = Agent(name="a", handoffs=[handoff(b, on_handoff=on_h, input_type=input_type)],
              model=ScriptedModel([[function_call("transfer_to_b", args, call_id="h1")], [assistant_message("x")]]))
    AgentsGuard(rule).guard_agent(a)
    try:
        return ran, asyncio.run(Runner.run(a, "go", run_config=RC)).last_agent.name
    except Exception as exc:  # noqa: BLE001
        return ran, type(exc).__name__


ETC = ToolRuleGuard(name="r", arguments=[{"tool": "transfer_to_*", "arg": "path", "forbid": "^/etc"}])


def test_a_handoff_input_given_under_its_alias_is_judged_as_the_field_the_callback_reads():
    """Before: the guard read ``{"file": "/etc/shadow"}`` (no ``path``: the rule did not apply) and ``on_handoff``
    received ``path = "/etc/shadow"``."""
    assert typed_handoff(Aliased, {"file": "/etc/shadow"}, ETC) == ([], "a")
    assert typed_handoff(Aliased, {"file": "/srv/x"}, ETC) == ([{"path": "/srv/x"}], "b")  # regression: allowed


def test_a_handoff_input_its_type_refuses_is_refused_and_steered():
    """The SDK would end the run (ModelBehaviorError); the guard refuses it first and the model reads why."""
    ran, last = typed_handoff(Aliased, {"path": "/srv/x"}, ETC)  # the field's name is not its alias: invalid
    assert ran == [] and last == "a"


@settings(max_examples=20, deadline=None)
@given(st.sampled_from([Aliased, Stripped]), st.sampled_from(["/etc/shadow", " /etc/x", "/srv/a", "\t/etc/y "]),
       st.booleans())
def test_property_a_handoff_runs_iff_the_guard_allows_what_its_callback_receives(input_type, path, alias):
    key = "file" if input_type is Aliased and alias else "path"
    ran, _ = typed_handoff(input_type, {key: path}, ETC)
    for got in ran:  # whatever the callback received, the guard allows it
        from agentguard.core import Context, Decision, ToolCall

        assert ETC.check(Context(run_id="x"), ToolCall("transfer_to_b", got)).decision == Decision.ALLOW, got


# -- regression list: tried this session, already refused --------------------------------------------------------------
@pytest.mark.parametrize("order", [("read_file", "wipe_disk"), ("wipe_disk", "read_file")])
def test_regression_a_halt_in_a_parallel_turn_runs_no_call_of_that_turn(order):
    """Two calls in one model turn, one HALTed: the SDK decides both (needs_approval) before running either; the
    allowed one, decided first or second, never runs once the run is halted."""
    ran: list = []

    def mk(n):
        def f(path: str) -> str:
            """A tool."""
            ran.append(n)
            return "ok"

        f.__name__ = n
        return __import__("agents").function_tool(f)

    model = ScriptedModel([[function_call(n, {"path": "/x"}, call_id=f"c{i}") for i, n in enumerate(order)],
                           [assistant_message("done")]])
    a = Agent(name="a", tools=[mk("read_file"), mk("wipe_disk")], model=model)
    AgentsGuard(ToolRuleGuard(name="r", halt=["wipe_*"])).guard_agent(a)
    with pytest.raises(Exception):  # noqa: B017 - the SDK's tripwire; what matters is that nothing ran
        asyncio.run(Runner.run(a, "go", run_config=RC))
    assert ran == []
