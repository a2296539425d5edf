"""The guard service's ESCALATE answered through each framework's own approval flow: the service (real
``create_app`` on loopback) behind ``RemoteGuard``; LangChain's HITL decision, the Agents SDK's
``RunState.approve()`` / ``reject()`` and MCP elicitation are reported to ``POST /v1/approvals``, whose
audit record names who answered; approve runs exactly that call, reject (or an approval the service does
not confirm) refuses it.

Least privilege: the service reads a credentials file; the agent's credential checks (``RemoteGuard``'s
client) and an approver's credential answers (``RemoteGuard(..., approvals=...)``): the audit record names
the approver credential's identity, never what the framework or the body says."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")

from agentguard.core import Decision, ToolCall  # noqa: E402
from agentguard.server.client import GuardServiceClient, GuardServiceError, RemoteGuard  # noqa: E402

TOKEN = "approval-agent-token-12345"  # role agent
#: approver credentials (identity -> token), one per way of answering, so each test finds its own rows
APPROVERS = {"alice": "approval-alice-token-1", "bob": "approval-bob-token-123", "lc-human": "approval-lc-token-123",
             "sdk-human": "approval-sdk-token-12", "mcp-human": "approval-mcp-token-12"}


def guard_for(base, approver):
    """``RemoteGuard`` as an application wires it: the agent's client checks, the approver's answers."""
    return RemoteGuard(GuardServiceClient(base, TOKEN), approvals=GuardServiceClient(base, APPROVERS[approver]))


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    from agentguard.server.app import create_app
    from agentguard.server.credentials import hash_token
    from agentguard.server.settings import ServerSettings
    from agentguard.server.testing import serve_in_thread

    d = tmp_path_factory.mktemp("svc")
    (d / "tools.toml").write_text('[[guards]]\ntype = "tool-rules"\nallow = ["*"]\n'
                                  'escalate = ["delete_*", "transfer_*"]\ndeny = ["format_*"]\n')
    creds = [("agent-1", "agent", TOKEN), *((who, "approver", tok) for who, tok in APPROVERS.items())]
    (d / "credentials.toml").write_text("".join(
        f'[[credentials]]\nidentity = "{who}"\nrole = "{role}"\ntoken_sha256 = "{hash_token(tok)}"\n\n'
        for who, role, tok in creds))
    app = create_app(ServerSettings(credentials_file=str(d / "credentials.toml"), state_dir=str(d),
                                    tool_guards=str(d / "tools.toml")))
    with serve_in_thread(app) as base:
        yield base, app.fastapi.state.store if hasattr(app, "fastapi") else app.state.store


def approvals(store, run_id):
    return [r for r in store.decisions(run_id=run_id, kind="approval")]


def test_approvals_endpoint_binds_the_call_and_answers_once(service):
    base, store = service
    c = GuardServiceClient(base, TOKEN)
    alice, bob = GuardServiceClient(base, APPROVERS["alice"]), GuardServiceClient(base, APPROVERS["bob"])
    call = ToolCall("delete_file", {"path": "/tmp/a"}, "k1")
    v = c.check(call, "ap1")
    assert v.decision is Decision.ESCALATE
    did = v.details["decision_id"]
    with pytest.raises(GuardServiceError, match="403"):  # the agent's credential cannot answer its escalation
        c.approve(did, "ap1", call, True, "human:cfo@corp")
    with pytest.raises(GuardServiceError, match="409"):  # another call cannot use this escalation
        alice.approve(did, "ap1", ToolCall("delete_file", {"path": "/etc"}, "k1"), True, "mallory")
    with pytest.raises(GuardServiceError, match="409"):  # nor another run
        alice.approve(did, "other", call, True, "mallory")
    with pytest.raises(GuardServiceError, match="404"):
        alice.approve("0" * 32, "ap1", call, True, "mallory")
    with pytest.raises(GuardServiceError, match="401"):  # an unknown token answers nothing
        GuardServiceClient(base, "wrong-token-000").approve(did, "ap1", call, True, "mallory")
    ok = alice.approve(did, "ap1", call, True, "mallory")  # the body's approver is ignored
    assert ok.decision is Decision.ALLOW and "alice" in ok.reason and "mallory" not in ok.reason
    with pytest.raises(GuardServiceError, match="409"):  # answered once: no replay, no change of mind
        bob.approve(did, "ap1", call, False, "bob")
    refused = c.check(ToolCall("format_disk", {}, "k2"), "ap1")
    with pytest.raises(GuardServiceError, match="409"):  # only an ESCALATE can be approved
        alice.approve(refused.details["decision_id"], "ap1", ToolCall("format_disk", {}, "k2"), True, "alice")
    [row] = approvals(store, "ap1")
    assert row["guard"] == "human:alice" and row["decision"] == "ALLOW" and did in row["reason"]
    for client in (c, alice, bob):
        client.close()


def test_langchain_hitl_approve_reaches_the_service(service):
    pytest.importorskip("langchain.agents.middleware")
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    from agentguard.integrations.langchain import AgentGuardMiddleware, scripted_chat_model

    base, store = service
    effects = []

    @tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        effects.append(path)
        return f"deleted {path}"

    def run(thread, decision):
        effects.clear()
        model = scripted_chat_model([AIMessage("", tool_calls=[{"name": "delete_file", "args": {"path": "/tmp/x"},
                                                               "id": "c1"}]), AIMessage("finished")])
        agent = create_agent(model, [delete_file], checkpointer=InMemorySaver(),
                             middleware=[AgentGuardMiddleware(guard_for(base, "lc-human"))])
        cfg = {"configurable": {"thread_id": thread}}
        first = agent.invoke({"messages": [{"role": "user", "content": "go"}]}, cfg)
        assert "__interrupt__" in first and effects == []
        return agent.invoke(Command(resume={"decisions": [decision]}), cfg)

    out = run("lc-approve", {"type": "approve"})
    assert effects == ["/tmp/x"] and out["messages"][-1].content == "finished"
    [row] = approvals(store, "lc-approve")
    assert row["decision"] == "ALLOW" and row["guard"] == "human:lc-human"
    run("lc-reject", {"type": "reject", "message": "no"})
    assert effects == []  # the rejected call never ran
    [row] = approvals(store, "lc-reject")
    assert row["decision"] == "REJECT" and row["guard"] == "human:lc-human"


@pytest.mark.parametrize("approve", [True, False])
def test_agents_sdk_runstate_approve_reaches_the_service(service, approve):
    pytest.importorskip("agents")
    from agents import Agent, Runner, function_tool, set_trace_processors
    from agents.testing import ScriptedModel, assistant_message, function_call

    from agentguard.integrations.openai_agents import AgentsGuard

    base, store = service
    set_trace_processors([])
    effects = []

    @function_tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        effects.append(path)
        return f"deleted {path}"

    ag = AgentsGuard(guard_for(base, "sdk-human"))
    agent = Agent(name="a", instructions="x", tools=ag.guard_tools([delete_file]), model=ScriptedModel([
        [function_call("delete_file", {"path": "/tmp/y"}, call_id="c1")], [assistant_message("done")]]))

    async def go():
        first = await Runner.run(agent, "clean")
        [item] = first.interruptions
        state = first.to_state()
        state.approve(item) if approve else state.reject(item)
        return await Runner.run(agent, state)

    def rows():
        return [r["decision"] for r in store.decisions(kind="approval")
                if r["guard"] == "human:sdk-human"]

    before = rows()
    out = asyncio.run(go())
    assert out.final_output == "done" and effects == (["/tmp/y"] if approve else [])
    # approved: recorded with who approved; rejected: the SDK refuses the call itself (no new approval)
    assert rows() == before + (["ALLOW"] if approve else [])


@pytest.mark.parametrize("case", ["approve", "decline", "service-refuses"])
def test_mcp_elicitation_reaches_the_service(service, tmp_path, case):
    pytest.importorskip("mcp")
    import sys
    from pathlib import Path

    import mcp_types as types
    from mcp import Client

    from agentguard.integrations.mcp.proxy import GuardProxy, Upstream

    base, store = service
    up = Path(__file__).resolve().parents[2] / "examples" / "integrations" / "mcp_upstream_server.py"
    guard = guard_for(base, "mcp-human")
    if case == "service-refuses":
        async def broken(*a, **k):
            raise GuardServiceError("409: already answered")
        guard.approvals.aapprove = broken

    async def human(context, request):
        return types.ElicitResult(action="accept", content={"approve": case != "decline"})

    async def main():
        upstream = Upstream("notes", command=sys.executable, args=["-W", "ignore", str(up), str(tmp_path)])
        async with GuardProxy(guard, [upstream]) as proxy:
            async with Client(proxy.server, elicitation_callback=human, mode="legacy") as c:
                res = await c.call_tool("transfer_funds", {"amount": 5, "to": "bob"})
                [run] = list(proxy.pipeline.runs)  # the connection's run (the proxy names it, not the client)
                return res, run

    res, run = asyncio.run(main())
    ran = (tmp_path / "ledger.txt").exists()
    assert ran == (case == "approve") and res.is_error == (case != "approve")
    rows = approvals(store, run)
    if case == "service-refuses":
        assert rows == [] and "did not record" in res.content[0].text
    else:
        [row] = rows
        assert row["guard"] == "human:mcp-human"
        assert row["decision"] == ("ALLOW" if case == "approve" else "REJECT")


# -- the service as a Driver (tests/integrations/drivers/service.py): the one-path properties ----------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from agentguard.core import GuardStack, Pipeline  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402

from drivers import TOOLS  # noqa: E402
from drivers.service import ServiceDriver  # noqa: E402

DRIVER = ServiceDriver()


def _deny_delete():
    return GuardStack([ToolRuleGuard(allow=["*"], deny=["delete_*"], name="no-delete")])


_calls = st.builds(
    lambda name, target, amount, cid: ToolCall(name, {"target": target, "amount": amount}, cid),
    st.sampled_from(TOOLS), st.sampled_from(["a", "b", "x"]), st.integers(0, 3),
    st.sampled_from(["", "", "c1", "c1", "dup", "c2"]))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(_calls, min_size=1, max_size=4), min_size=1, max_size=4))
def test_service_driver_refused_never_runs_allowed_runs_once(turns):
    """(a) random turns, duplicate/empty call ids, parallel calls: no refused call ever runs; every
    allowed call runs exactly once with exactly its arguments, in order."""
    res = DRIVER.run(_deny_delete(), turns)
    expected = [(c.name, dict(c.arguments)) for turn in turns for c in turn if not c.name.startswith("delete_")]
    assert res.executed == expected and not res.stopped and res.asked == []


def test_service_driver_a_refused_call_is_never_approved():
    """(b) a refusing policy + an escalating guard, approve=True: the refused call never runs (it is never
    offered to a human; the approval API refuses to approve a REJECT), and the approval request for
    another, non-refused call lists every guard's verdict."""
    stack = GuardStack([ToolRuleGuard(allow=["*"], deny=["transfer_*"], name="policy"),
                        ToolRuleGuard(allow=["*"], escalate=["transfer_*", "write_*"], name="ask-human")])
    args = {"target": "bob", "amount": 800}
    res = DRIVER.run(stack, [[ToolCall("transfer_funds", args, "t1")], [ToolCall("write_file", args, "t1")]],
                     approve=True)
    assert res.executed == [("write_file", args)]
    [asked] = res.asked
    assert asked["call"]["name"] == "write_file"
    assert [(v["guard"], v["decision"]) for v in asked["verdicts"]] == [("policy", "ALLOW"),
                                                                      ("ask-human", "ESCALATE")]
    # and straight at the API: the REJECT of the transfer cannot be approved
    from fastapi.testclient import TestClient

    from drivers.service import APPROVER_AUTH, AUTH

    with TestClient(DRIVER.app(stack, None)) as c:
        tc = {"name": "transfer_funds", "arguments": args}
        b = c.post("/v1/check", headers=AUTH, json={"run_id": "r", "tool_call": tc}).json()
        assert b["decision"] == "REJECT" and {v["guard"]: v["decision"] for v in b["verdicts"]} == {
            "policy": "REJECT", "ask-human": "ESCALATE"}
        r = c.post("/v1/approvals", headers=APPROVER_AUTH, json={"decision_id": b["decision_id"], "run_id": "r",
                                                         "tool_call": tc, "approved": True, "approver": "x"})
        assert r.status_code == 409


def test_remote_guard_approval_request_shows_every_guard(tmp_path):
    """Through RemoteGuard in a client-side Pipeline: the service's stack refuses the transfer (no human
    is asked, approve never runs it) and the approval request for the write shows both guards."""
    from agentguard.server.testing import serve_in_thread

    stack = GuardStack([ToolRuleGuard(allow=["*"], deny=["transfer_*"], name="policy"),
                        ToolRuleGuard(allow=["*"], escalate=["transfer_*", "write_*"], name="ask-human")])
    with serve_in_thread(DRIVER.app(stack, None)) as base:
        from drivers.service import APPROVER_TOKEN
        from drivers.service import TOKEN as DTOKEN

        pipe = Pipeline(RemoteGuard(GuardServiceClient(base, DTOKEN), approvals=GuardServiceClient(base, APPROVER_TOKEN)))
        out = pipe.decide("rg", ToolCall("transfer_funds", {"amount": 800}))
        assert not out.execute and not out.ask
        asked = pipe.decide("rg", ToolCall("write_file", {"path": "x"}))
        assert asked.ask
        from agentguard.core.pipeline import approval_request

        req = approval_request(asked)
        assert [v["guard"] for v in req["verdicts"]] == ["policy", "ask-human"] and "policy" in req["text"]
        done = pipe.resolve(asked, True, approver="alice")
        assert done.execute and done.call == ToolCall("write_file", {"path": "x"})


def _evil_rule():
    return GuardStack([ToolRuleGuard(allow=["*"], deny=["delete_*"],
                                     arguments=[{"tool": "transfer_funds", "arg": "target", "forbid": "evil"}],
                                     name="rules")])


def _t(target):
    return [ToolCall("transfer_funds", {"target": target, "amount": 1})]


@pytest.mark.parametrize("strategy, executed, stopped", [
    # default: each refusal skips its call, the run goes on, later allowed transfers run
    (None, ["bob", "read"], False),
    # TEH: the first refusal halts the tool: the allowed transfer to bob is refused too
    ("TEH", ["read"], False),
    # TT: the first refusal ends the run
    ("TT", [], True),
    # CRP: three refusals are handed back to re-plan; the fourth in a row ends the run (then = TT)
    ("CRP", [], True),
    # CRP+TEH: three refusals are handed back to re-plan; the fourth in a row halts the tool, so the allowed
    # transfer to bob is refused too
    ("CRP+TEH", ["read"], False),
])
def test_service_driver_strategy_changes_what_runs(strategy, executed, stopped):
    """(c) the service's configured strategy changes what runs."""
    turns = [_t("evil"), _t("evil"), _t("evil"), _t("evil"), _t("bob"),
             [ToolCall("read_note", {"target": "n", "amount": 0})]]
    res = DRIVER.run(_evil_rule(), turns, strategy=strategy)
    ran = ["read" if n == "read_note" else a["target"] for n, a in res.executed]
    assert ran == executed and res.stopped is stopped


def test_service_crp_hands_the_violation_back_and_counts_rounds():
    from fastapi.testclient import TestClient

    from drivers.service import AUTH

    with TestClient(DRIVER.app(_evil_rule(), "CRP+TEH")) as c:
        def check(target):
            return c.post("/v1/check", headers=AUTH, json={"run_id": "crp", "tool_call": {
                "name": "transfer_funds", "arguments": {"target": target, "amount": 1}}}).json()

        for k in (1, 2, 3):
            b = check("evil")
            assert b["decision"] == "REJECT" and f"attempt {k} of 3" in b["message"]
        assert check("bob")["decision"] == "ALLOW"  # an allowed call resets the rounds
        for _ in range(3):
            check("evil")
        b = check("evil")
        assert b["decision"] == "REJECT" and "halted for this run" in b["message"]


def test_service_crp_teh_refuses_a_halted_tool_afterwards():
    from fastapi.testclient import TestClient

    from drivers.service import AUTH

    with TestClient(DRIVER.app(_evil_rule(), "CRP+TEH")) as c:
        def check(target):
            return c.post("/v1/check", headers=AUTH, json={"run_id": "crp", "tool_call": {
                "name": "transfer_funds", "arguments": {"target": target, "amount": 1}}}).json()

        for _ in range(4):
            check("evil")
        assert check("bob")["decision"] == "REJECT"
