"""The MCP proxy's stdio relay (agentguard.integrations.mcp.relay): unit tests on lines (fail closed on
the inline fast path and on the task path, strict reading, MODIFY, HALT, elicitation in both protocol
eras), and the real `agentguard mcp-proxy` with real `mcp` clients (notifications, approval)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from agentguard.core import BaseGuard, Decision, GuardStack, ToolCall, Verdict  # noqa: E402
from agentguard.integrations.mcp.decide import inline_safe  # noqa: E402
from agentguard.integrations.mcp.relay import StdioRelay  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/integrations: the drivers package
from drivers.mcp import listed  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
UPSTREAM = REPO / "examples" / "integrations" / "mcp_upstream_server.py"
MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}


def line(msg: dict) -> bytes:
    return json.dumps(msg).encode() + b"\n"


def call(rid, name, args=None, meta=None) -> dict:
    params = {"name": name, "arguments": args or {}}
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


class Wire:
    """A relay with both sides captured as parsed messages (and raw upstream bytes)."""

    def __init__(self, guard, **kw):
        self.client, self.upstream = [], []
        self.relay = StdioRelay(guard, lambda b: self.client.append(json.loads(b)), self.upstream.append, **kw)

    @property
    def steps(self):
        return self.relay.pipeline.run(self.relay.run_id).context.trace.steps

    def send(self, msg) -> None:
        listed(self.relay, msg)
        self.relay.client_line(line(msg) if isinstance(msg, (dict, list)) else msg)

    async def settle(self) -> None:
        """Until the relay's decision tasks are done (at most 0.3 s: one waiting on a human stays)."""
        for _ in range(60):
            await asyncio.sleep(0.005)
            if not self.relay._tasks:
                return


def rules(**kw) -> ToolRuleGuard:
    return ToolRuleGuard(**kw)


def test_allowed_call_is_forwarded_byte_for_byte_and_its_answer_recorded():
    w = Wire(rules(allow=["read_*"]))
    assert w.relay.inline
    raw = b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_file","arguments":{"p":"a"}}}\n'
    w.send(raw)
    assert w.upstream == [raw] and w.client == []
    answer = b'{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"data"}]}}\n'
    note = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}\n'
    w.relay.upstream_line(note)
    w.relay.upstream_line(answer)
    assert w.client == [json.loads(note), json.loads(answer)]  # relayed unchanged, in order
    steps = w.steps
    assert [s.observation for s in steps] == ["data"] and steps[0].action.name == "read_file"


def test_refused_call_never_reaches_the_upstream_and_halt_stops_the_session():
    w = Wire(rules(allow=["read_*"], halt=["rm_*"]))
    w.send(call(1, "delete_all"))
    w.send(call(2, "rm_rf", {"path": "/"}))
    w.send(call(3, "read_file"))  # allowed by the rules, but the session is halted
    assert w.upstream == []
    assert [m["id"] for m in w.client] == [1, 2, 3]
    assert all(m["result"]["isError"] for m in w.client)
    assert "REJECT" in w.client[0]["result"]["content"][0]["text"]
    assert "halted earlier" in w.client[2]["result"]["content"][0]["text"]
    assert "resultType" not in w.client[0]["result"]  # a handshake-era request gets a handshake-era result


@pytest.mark.parametrize("bad", ["raise", "garbage", "late"])
def test_inline_fast_path_fails_closed(bad):
    guard = rules(allow=["*"])

    def broken(context, proposal):
        if bad == "raise":
            raise RuntimeError("boom")
        if bad == "garbage":
            return "ALLOW"
        time.sleep(0.05)
        return Verdict.allow("late")

    guard.check = broken  # still the exact ToolRuleGuard class: evaluated inline
    w = Wire(guard, timeout_s=0.01)
    assert w.relay.inline
    w.send(call(1, "read_file"))
    assert w.upstream == [] and w.client[0]["result"]["isError"]
    assert "HALT" in w.client[0]["result"]["content"][0]["text"]


class Slow(BaseGuard):
    """Not inline-safe (any user class): decided through acheck in a task."""

    name = "slow"

    def __init__(self, verdict=None, error=None):
        self.verdict, self.error = verdict, error

    def check(self, context, proposal):
        if self.error:
            raise self.error
        return self.verdict


def test_task_path_fails_closed_and_applies_modify():
    w = Wire(GuardStack([Slow(error=ValueError("nope"))]))
    assert not w.relay.inline and not inline_safe(w.relay.pipeline)

    async def go():
        w.send(call(1, "read_file"))
        await w.settle()
    asyncio.run(go())
    assert w.upstream == [] and w.client[0]["result"]["isError"]

    mod = Verdict(Decision.MODIFY, "redacted", "slow", action=ToolCall("send", {"to": "me@example.com"}))
    w = Wire(Slow(mod))

    async def go2():
        w.send(call(2, "send", {"to": "evil@x.org"}))
        await w.settle()
    asyncio.run(go2())
    sent = json.loads(w.upstream[0])
    assert sent["params"]["arguments"] == {"to": "me@example.com"} and sent["id"] == 2


def test_strict_reading_batches_and_unknown_methods():
    w = Wire(rules(allow=["*"]))
    w.send(b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a","name":"b","arguments":{}}}\n')
    w.send([call(8, "read_file")])                                   # a batch would carry calls past the guard
    w.send({"jsonrpc": "2.0", "id": 9, "method": "tools/execute", "params": {}})
    w.send({"jsonrpc": "2.0", "id": True, "method": "tools/call", "params": {"name": "a"}})
    w.send({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"name": 5}})
    w.send({"jsonrpc": "2.0", "id": 11, "method": "tools/list"})
    w.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    w.send({"jsonrpc": "2.0", "method": "notifications/run_this", "params": {}})  # not MCP's: dropped
    assert [json.loads(b).get("id") for b in w.upstream] == [11, None]
    assert [(m["id"], m["error"]["code"]) for m in w.client] == [
        (7, -32700), (None, -32600), (9, -32601), (None, -32600), (10, -32602)]


def test_facts_from_meta_reach_the_context_but_never_choose_the_run():
    seen = []

    class Spy(BaseGuard):
        name = "spy"

        def check(self, context, proposal):
            seen.append((context.run_id, dict(context.metadata)))
            return Verdict.allow("spy")

    w = Wire(Spy())

    async def go():
        w.send(call(1, "x", meta={"agentguard/session": "alice", "agentguard/facts": {"age": 30, "halted": "no"}}))
        await w.settle()
    asyncio.run(go())
    run_id, meta = seen[0]
    assert run_id == w.relay.run_id and meta["age"] == 30 and "halted" not in meta


@pytest.mark.parametrize("inline", [True, False])
def test_a_halt_holds_for_the_connection_whatever_meta_says(inline):
    """The bug this kills: after a HALT, a call with a new ``agentguard/session`` (or facts claiming
    the run is not halted) was forwarded upstream. The run is the connection."""
    guard = rules(allow=["read_*"], halt=["rm_*"]) if inline else GuardStack([rules(allow=["read_*"], halt=["rm_*"]),
                                                                               Slow(Verdict.allow("ok"))])
    w = Wire(guard)
    assert w.relay.inline is inline

    async def go():
        w.send(call(1, "rm_rf", meta={"agentguard/session": "a"}))
        await w.settle()
        w.send(call(2, "read_file", meta={"agentguard/session": "b"}))
        w.send(call(3, "read_file", meta={"agentguard/session": "c", "agentguard/facts": {"halted": None}}))
        w.send(call(4, "read_file"))
        await w.settle()
    asyncio.run(go())
    assert w.upstream == []
    assert [m["id"] for m in w.client] == [1, 2, 3, 4] and all(m["result"]["isError"] for m in w.client)
    assert all("halted earlier" in m["result"]["content"][0]["text"] for m in w.client[1:])


def test_prompts_and_resources_are_guarded():
    w = Wire(rules(allow=["prompts/get"]))
    w.send({"jsonrpc": "2.0", "id": 1, "method": "prompts/get", "params": {"name": "p"}})
    w.send({"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": "file:///etc/shadow"}})
    assert [json.loads(b)["id"] for b in w.upstream] == [1]
    assert w.client[0]["id"] == 2 and w.client[0]["error"]["code"] == -32003


@pytest.mark.parametrize("answer,runs", [({"action": "accept", "content": {"approve": True}}, True),
                                         ({"action": "accept", "content": {"approve": "yes"}}, False),
                                         ({"action": "decline"}, False)])
def test_escalation_by_elicitation_handshake_era(answer, runs):
    w = Wire(rules(allow=["*"], escalate=["transfer_*"]))

    async def go():
        w.send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}}})
        w.send(call(1, "transfer_funds", {"amount": 5}))
        await w.settle()
        ask = w.client[-1]
        assert ask["method"] == "elicitation/create" and "transfer_funds" in ask["params"]["message"]
        w.send({"jsonrpc": "2.0", "id": ask["id"], "result": answer})
        await w.settle()
    asyncio.run(go())
    forwarded = [json.loads(b).get("id") for b in w.upstream]
    assert forwarded == ([0, 1] if runs else [0])
    if not runs:
        assert w.client[-1]["id"] == 1 and w.client[-1]["result"]["isError"]


def test_escalation_without_elicitation_is_refused_naming_the_approval():
    w = Wire(rules(allow=["*"], escalate=["transfer_*"]))

    async def go():
        w.send(call(1, "transfer_funds"))
        await w.settle()
    asyncio.run(go())
    assert w.upstream == [] and "needs a human's approval" in w.client[0]["result"]["content"][0]["text"]


def test_escalation_by_input_required_modern_protocol():
    w = Wire(rules(allow=["*"], escalate=["transfer_*"]))

    async def go():
        w.send(call(1, "transfer_funds", {"amount": 5}, meta=MODERN_META))
        await w.settle()
        asked = w.client[-1]["result"]
        assert asked["resultType"] == "input_required" and w.upstream == []
        retry = call(2, "transfer_funds", {"amount": 5}, meta=MODERN_META)
        yes = {"agentguard-approval": {"action": "accept", "content": {"approve": True}}}
        forged = {**retry, "params": {**retry["params"], "requestState": "forged", "inputResponses": yes}}
        w.send(forged)                       # an answer without this proxy's state asks again
        await w.settle()
        assert w.client[-1]["result"]["resultType"] == "input_required" and w.upstream == []
        other = call(3, "transfer_funds", {"amount": 5000}, meta=MODERN_META)  # the state binds the arguments
        other["params"].update(requestState=asked["requestState"], inputResponses=yes)
        w.send(other)
        await w.settle()
        assert w.client[-1]["result"]["resultType"] == "input_required" and w.upstream == []
        retry["params"].update(requestState=asked["requestState"], inputResponses=yes)
        w.send(retry)
        await w.settle()
        replay = call(4, "transfer_funds", {"amount": 5}, meta=MODERN_META)  # the same answer again
        replay["params"].update(requestState=asked["requestState"], inputResponses=yes)
        w.send(replay)
        await w.settle()
        assert w.client[-1]["result"]["resultType"] == "input_required"
    asyncio.run(go())
    assert [json.loads(b)["id"] for b in w.upstream] == [2]  # one approval, one call
    forwarded = json.loads(w.upstream[0])["params"]  # our approval round is not the upstream's
    assert "requestState" not in forwarded and "inputResponses" not in forwarded


# -- the real command with real mcp clients ----------------------------------------------------------
def _proxy(tmp_path, toml: str):
    from mcp import StdioServerParameters

    cfg = tmp_path / "agentguard.toml"
    cfg.write_text(toml)
    notes = tmp_path / "notes"
    notes.mkdir(exist_ok=True)
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "agentguard", "mcp-proxy", "--guards", str(cfg),
              "--upstream", f"notes={sys.executable} -W ignore {UPSTREAM} {notes}"],
        env={**os.environ}, cwd=str(REPO)), notes


def test_cli_relay_passes_logging_and_list_changed_notifications(tmp_path):
    """A real MCPServer upstream sends a logging message and the three list_changed notifications
    (handshake era) or change events (2026-07-28 subscriptions/listen); a real client gets them through
    `agentguard mcp-proxy`."""
    from mcp import Client

    params, _ = _proxy(tmp_path, '[[guards]]\ntype = "tool-rules"\nallow = ["announce"]\n')

    async def legacy():
        got = []

        async def handler(m):
            got.append(getattr(m, "method", type(m).__name__))

        async with Client(params, message_handler=handler, mode="legacy") as c:
            res = await c.call_tool("announce", {"text": "hello"})
            for _ in range(100):
                if len(got) >= 4:
                    break
                await asyncio.sleep(0.02)
        return res, got

    async def modern():
        got = []
        async with Client(params) as c:
            async with c.listen(tools_list_changed=True, prompts_list_changed=True,
                                resources_list_changed=True) as sub:
                await c.call_tool("announce", {"text": "hello"})

                async def take():
                    async for ev in sub:
                        got.append(type(ev).__name__)
                        if len(got) == 3:
                            return
                await asyncio.wait_for(take(), 20)
        return got

    res, got = asyncio.run(legacy())
    assert not res.is_error
    assert got == ["notifications/message", "notifications/tools/list_changed",
                   "notifications/prompts/list_changed", "notifications/resources/list_changed"]
    assert asyncio.run(modern()) == ["ToolsListChanged", "PromptsListChanged", "ResourcesListChanged"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_cli_relay_asks_the_human_through_the_client(tmp_path, mode):
    """ESCALATE through `agentguard mcp-proxy`: the real client's elicitation callback is the human;
    approving runs exactly that call, declining refuses it (both protocol eras)."""
    import mcp_types as types
    from mcp import Client

    params, notes = _proxy(tmp_path, '[[guards]]\ntype = "tool-rules"\nallow = ["*"]\nescalate = ["transfer_*"]\n')
    asked = []

    async def human(context, request):
        asked.append(request.message)
        approve = '"to": "bob"' in request.message
        return types.ElicitResult(action="accept", content={"approve": approve})

    async def main():
        async with Client(params, elicitation_callback=human, mode=mode) as c:
            yes = await c.call_tool("transfer_funds", {"amount": 5, "to": "bob"})
            no = await c.call_tool("transfer_funds", {"amount": 900, "to": "eve"})
        return yes, no

    yes, no = asyncio.run(main())
    assert len(asked) == 2 and not yes.is_error and no.is_error
    assert (notes / "ledger.txt").read_text() == "5 bob\n"


def test_approval_rounds_bind_the_call_expire_and_are_spent_once(monkeypatch):
    from agentguard.integrations.mcp import decide as mcp_decide
    from agentguard.integrations.mcp.decide import ApprovalRounds

    rounds, c = ApprovalRounds(ttl_s=60), ToolCall("pay", {"amount": 5})
    s1, s2 = rounds.issue("alice", c), rounds.issue("alice", c)
    assert s1 != s2                                            # each round its own nonce
    assert not rounds.redeem(s1, "bob", c)                     # another session
    assert not rounds.redeem(s1, "alice", ToolCall("pay", {"amount": 6}))  # another call
    assert not rounds.redeem(s1.replace(".", ".0", 1), "alice", c)         # a forged mac
    assert rounds.redeem(s1, "alice", c) and not rounds.redeem(s1, "alice", c)  # once
    now = mcp_decide.time.time()
    monkeypatch.setattr(mcp_decide.time, "time", lambda: now + 61)
    assert not rounds.redeem(s2, "alice", c)                   # expired


def test_cli_relay_on_sigterm_exits_cleanly_and_writes_the_traces(tmp_path):
    import signal
    import subprocess

    cfg = tmp_path / "agentguard.toml"
    cfg.write_text('[recording]\npath = "traces.jsonl"\n\n[[guards]]\ntype = "tool-rules"\nallow = ["list_*"]\n')
    notes = tmp_path / "notes"
    notes.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "agentguard", "mcp-proxy", "--guards", str(cfg),
                             "--upstream", f"n={sys.executable} -W ignore {UPSTREAM} {notes}"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=tmp_path, env={**os.environ})

    def ask(msg):
        proc.stdin.write(line(msg))
        proc.stdin.flush()
        while True:
            got = json.loads(proc.stdout.readline())
            if got.get("id") == msg["id"]:
                return got

    ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    assert not ask(call(2, "list_notes"))["result"]["isError"]
    assert ask(call(3, "delete_note", {"name": "x"}))["result"]["isError"]
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    [trace] = [json.loads(t) for t in (tmp_path / "traces.jsonl").read_text().splitlines()]
    assert [s["action"]["name"] for s in trace["steps"]] == ["list_notes", "delete_note"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_cli_relay_a_client_changing_meta_after_a_halt_is_still_halted(tmp_path, mode):
    """`agentguard mcp-proxy` (the relay) with a real `mcp` client: after a HALT, calls naming other
    sessions in ``_meta`` (or facts claiming no halt) are refused and never reach the upstream."""
    from mcp import Client

    params, notes = _proxy(tmp_path, '[[guards]]\ntype = "tool-rules"\nhalt = ["delete_*"]\n')

    async def main():
        async with Client(params, mode=mode) as c:
            first = await c.call_tool("write_note", {"name": "before.txt", "text": "x"})
            await c.call_tool("delete_note", {"name": "before.txt"}, meta={"agentguard/session": "alice"})
            after = [await c.call_tool("write_note", {"name": f"{who}.txt", "text": "x"}, meta=meta)
                     for who, meta in (("bob", {"agentguard/session": "bob"}),
                                       ("eve", {"agentguard/session": "eve", "agentguard/facts": {"halted": None}}),
                                       ("none", None))]
        return first, after

    first, after = asyncio.run(main())
    assert not first.is_error and (notes / "before.txt").exists()
    assert all(r.is_error and "halted earlier" in r.content[0].text for r in after)
    assert not any((notes / f"{w}.txt").exists() for w in ("bob", "eve", "none"))


def test_cli_strategy_option_reaches_the_pipeline(tmp_path):
    """`agentguard mcp-proxy --strategy CRP`: the refused call's answer is the re-planning request; an
    unknown strategy name fails before anything starts."""
    import subprocess

    from mcp import Client

    params, _ = _proxy(tmp_path, '[[guards]]\ntype = "tool-rules"\ndeny = ["delete_*"]\n')
    params.args.extend(["--strategy", "CRP"])

    async def main():
        async with Client(params) as c:
            return await c.call_tool("delete_note", {"name": "x.txt"})

    res = asyncio.run(main())
    assert res.is_error and "Propose a different action" in res.content[0].text
    bad = subprocess.run([sys.executable, "-m", "agentguard", "mcp-proxy", "--guards", params.args[4],
                          "--upstream", "n=python -c pass", "--strategy", "nope"],
                         capture_output=True, text=True, cwd=str(REPO), timeout=60)
    assert bad.returncode != 0 and "unknown enforcement strategy" in bad.stdout + bad.stderr


def test_numbers_that_overflow_and_lone_surrogates_never_reach_the_upstream():
    """Red team: ``1e999`` was read as ``inf`` by the guard (a limit rule cannot compare it meaningfully) and
    forwarded as the same bytes; the SDK path re-serialised it upstream as ``null``. Refused at the line
    reader like a duplicate key, in every spelling; a finite exponent still passes."""
    w = Wire(rules(allow=["*"]))
    for i, raw in enumerate(['{"amount": 1e999}', '{"amount": -1E400}', '{"n": [1, 2e308]}', '{"s": "\\ud800"}',
                             '{"\\udfff": 1}'], start=20):
        w.send(b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"pay","arguments":%s}}\n'
               % (i, raw.encode()))
    w.send(call(30, "pay", {"amount": 1.5e3}))
    asyncio.run(w.settle())
    assert [json.loads(b)["id"] for b in w.upstream] == [30]
    assert [(m["id"], m["error"]["code"]) for m in w.client] == [(i, -32700) for i in range(20, 25)]


def test_an_upstream_that_exits_while_the_client_is_there_ends_the_session_and_says_so(tmp_path):
    """``serve_stdio_relay`` returns whether the upstream ended the session: ``mcp-proxy --upstream a=true`` exited 0
    in silence before (the CLI now says the upstream is no MCP server on stdio); a client that ends first is a clean
    end (False)."""
    import subprocess

    from agentguard.integrations.mcp.relay import serve_stdio_relay

    def session(upstream: list[str], client_open: bool) -> bool:
        r, w = os.pipe()
        if not client_open:
            os.close(w)
        proc = subprocess.Popen(upstream, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            with os.fdopen(r, "rb") as stdin, open(tmp_path / "out", "wb") as stdout:
                return asyncio.run(serve_stdio_relay(rules(allow=["*"]), proc, stdin=stdin, stdout=stdout))
        finally:
            if client_open:
                os.close(w)
            proc.kill()

    assert session(["true"], client_open=True) is True
    assert session(["cat"], client_open=False) is False
