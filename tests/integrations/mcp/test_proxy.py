"""MCP guard proxy end to end: a real upstream MCP server (stdio subprocess), a real mcp.Client."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from mcp import Client, StdioServerParameters  # noqa: E402

from agentguard import BaseGuard, Decision, GuardStack, ToolCall, Verdict, read_traces  # noqa: E402
from agentguard.core.errors import InputError  # noqa: E402
from agentguard.integrations.mcp.proxy import GuardProxy, Upstream, parse_upstream  # noqa: E402
from agentguard.integrations.recording import TraceRecorder  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
UPSTREAM = str(REPO / "examples" / "integrations" / "mcp_upstream_server.py")


def upstream(workdir, name="notes"):
    return Upstream(name, command=sys.executable, args=[UPSTREAM, str(workdir)])


def policy():
    return GuardStack(
        [
            ToolRuleGuard(deny=["delete_note", "*__delete_note"], name="no-deletes"),
            ToolRuleGuard(
                arguments=[{"tool": "*write_note", "arg": "name", "match": r"[a-z0-9_]+\.txt"}],
                name="txt-only",
            ),
        ]
    )


def texts(result):
    return "\n".join(getattr(c, "text", "") for c in result.content)


def test_forbidden_call_never_reaches_upstream_allowed_call_runs(tmp_path):
    (tmp_path / "keep.txt").write_text("important")
    rec = TraceRecorder(tmp_path / "traces.jsonl")

    async def main():
        async with GuardProxy(policy(), [upstream(tmp_path)], recorder=rec) as proxy:
            async with Client(proxy.server) as client:
                names = sorted(t.name for t in (await client.list_tools()).tools)
                assert names == [
                    "announce",
                    "count_slowly",
                    "delete_note",
                    "list_notes",
                    "transfer_funds",
                    "write_note",
                ]  # forwarded unchanged
                denied = await client.call_tool("delete_note", {"name": "keep.txt"})
                bad_arg = await client.call_tool("write_note", {"name": "run.sh", "text": "rm -rf /"})
                ok = await client.call_tool("write_note", {"name": "hello.txt", "text": "hi"})
                return denied, bad_arg, ok

    denied, bad_arg, ok = asyncio.run(main())
    assert denied.is_error and "no-deletes" in texts(denied)
    assert bad_arg.is_error and "txt-only" in texts(bad_arg)
    assert (tmp_path / "keep.txt").read_text() == "important"  # the delete never executed
    assert not (tmp_path / "run.sh").exists()
    assert not ok.is_error and texts(ok) == "wrote 2 characters to hello.txt"  # the upstream's own answer
    assert (tmp_path / "hello.txt").read_text() == "hi"
    [trace] = read_traces(str(tmp_path / "traces.jsonl"))
    assert [s.signals["decision"] for s in trace.steps] == [Decision.REJECT, Decision.REJECT, Decision.ALLOW]
    assert trace.labels["adapter"] == "mcp" and trace.labels["blocked"] == 2


class Broken(BaseGuard):
    name = "broken"

    def check(self, context, proposal):
        raise RuntimeError("policy store unreachable")


def test_guard_error_fails_closed_and_halt_sticks_to_session(tmp_path):
    async def main():
        async with GuardProxy(Broken(), [upstream(tmp_path)]) as proxy:
            async with Client(proxy.server) as client:
                r1 = await client.call_tool("write_note", {"name": "a.txt", "text": "x"})
                return r1

    r1 = asyncio.run(main())
    assert r1.is_error and "policy store unreachable" in texts(r1)
    assert not (tmp_path / "a.txt").exists()


class HaltOnDelete(BaseGuard):
    name = "halter"

    def check(self, context, proposal):
        return (
            Verdict.halt("deleting predicted unsafe")
            if proposal.name.endswith("delete_note")
            else Verdict.allow()
        )


def test_per_session_state_halt_is_per_session(tmp_path):
    """Two legacy (initialize-handshake) client sessions: a halt in one does not halt the other."""

    async def main():
        async with GuardProxy(HaltOnDelete(), [upstream(tmp_path)]) as proxy:
            async with Client(proxy.server, mode="legacy") as a, Client(proxy.server, mode="legacy") as b:
                await a.call_tool("delete_note", {"name": "x.txt"})
                a2 = await a.call_tool("write_note", {"name": "a.txt", "text": "x"})
                b1 = await b.call_tool("write_note", {"name": "b.txt", "text": "y"})
                return a2, b1, proxy

    a2, b1, proxy = asyncio.run(main())
    assert a2.is_error and "halted earlier" in texts(a2)
    assert not b1.is_error and (tmp_path / "b.txt").exists() and not (tmp_path / "a.txt").exists()


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_client_changing_meta_after_a_halt_is_still_halted(tmp_path, mode):
    """The run belongs to the connection, never to ``_meta["agentguard/session"]`` (which the client
    writes): after a HALT, calls naming another session, or facts claiming no halt, stay refused and
    nothing reaches the upstream."""

    async def main():
        async with GuardProxy(HaltOnDelete(), [upstream(tmp_path)]) as proxy:
            async with Client(proxy.server, mode=mode) as c:
                await c.call_tool("delete_note", {"name": "x.txt"}, meta={"agentguard/session": "alice"})
                r_alice = await c.call_tool(
                    "write_note", {"name": "a.txt", "text": "x"}, meta={"agentguard/session": "alice"}
                )
                r_bob = await c.call_tool(
                    "write_note", {"name": "b.txt", "text": "x"},
                    meta={"agentguard/session": "bob", "agentguard/facts": {"halted": None}},
                )
                r_none = await c.call_tool("write_note", {"name": "c.txt", "text": "x"})
                return r_alice, r_bob, r_none

    results = asyncio.run(main())
    assert all(r.is_error and "halted earlier" in texts(r) for r in results)
    assert not any((tmp_path / n).exists() for n in ("a.txt", "b.txt", "c.txt"))


def test_two_upstreams_are_prefixed_and_routed(tmp_path):
    d1, d2 = tmp_path / "one", tmp_path / "two"
    d1.mkdir(), d2.mkdir()

    async def main():
        async with GuardProxy(policy(), [upstream(d1, "one"), upstream(d2, "two")]) as proxy:
            async with Client(proxy.server) as client:
                names = sorted(t.name for t in (await client.list_tools()).tools)
                await client.call_tool("two__write_note", {"name": "n.txt", "text": "2"})
                denied = await client.call_tool("one__delete_note", {"name": "n.txt"})
                return names, denied

    names, denied = asyncio.run(main())
    assert names == sorted(
        f"{u}__{t}"
        for u in ("one", "two")
        for t in ("announce", "count_slowly", "delete_note", "list_notes", "transfer_funds", "write_note")
    )
    assert (d2 / "n.txt").read_text() == "2" and not (d1 / "n.txt").exists() and denied.is_error


def test_parse_upstream():
    u = parse_upstream("notes=python server.py /tmp")
    assert u.command == sys.executable and u.args == ["server.py", "/tmp"]
    assert parse_upstream("web=http://127.0.0.1:9/mcp").url == "http://127.0.0.1:9/mcp"
    with pytest.raises(InputError):
        parse_upstream("no-equals-sign")


def test_cli_proxy_over_stdio_end_to_end(tmp_path):
    """The `agentguard mcp-proxy` command as a subprocess: client -> proxy (stdio) -> upstream (stdio)."""
    cfg = tmp_path / "agentguard.toml"
    cfg.write_text(
        '[recording]\npath = "traces.jsonl"\n\n[[guards]]\ntype = "tool-rules"\ndeny = ["delete_*"]\n'
    )
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "keep.txt").write_text("k")
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "agentguard",
            "mcp-proxy",
            "--config",
            str(cfg),
            "--upstream",
            f"notes={sys.executable} {UPSTREAM} {notes}",
        ],
        env={**os.environ},
        cwd=str(REPO),
    )

    async def main():
        async with Client(params) as client:
            denied = await client.call_tool("delete_note", {"name": "keep.txt"})
            ok = await client.call_tool("list_notes", {})
            return denied, ok

    denied, ok = asyncio.run(main())
    assert denied.is_error and (notes / "keep.txt").exists()
    assert texts(ok) == "keep.txt"
    lines = (tmp_path / "traces.jsonl").read_text().splitlines()
    assert len(lines) == 1 and len(json.loads(lines[0])["steps"]) == 2


def test_cli_proxy_over_streamable_http_per_session(tmp_path):
    """`agentguard mcp-proxy --http`: real Streamable HTTP on loopback; guard state per MCP session
    (Mcp-Session-Id for handshake-era clients); stateless requests share one run, whatever session
    their ``_meta`` names."""
    import socket
    import subprocess
    import time

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    cfg = tmp_path / "agentguard.toml"
    cfg.write_text('[[guards]]\ntype = "tool-rules"\nhalt = ["delete_*"]\n')
    notes = tmp_path / "notes"
    notes.mkdir()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentguard",
            "mcp-proxy",
            "--guards",
            str(cfg),
            "--http",
            f"127.0.0.1:{port}",
            "--upstream",
            f"notes={sys.executable} {UPSTREAM} {notes}",
        ],
        cwd=str(REPO),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stderr.readline()  # the proxy prints where it serves, path included
        url = f"http://127.0.0.1:{port}/mcp"
        assert line.strip() == f"agentguard MCP proxy on {url} (Streamable HTTP)"
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.1)

        async def main():
            out = {}
            async with Client(url, mode="legacy") as a, Client(url, mode="legacy") as b:
                await a.call_tool("delete_note", {"name": "x.txt"})
                out["a"] = await a.call_tool("list_notes", {})
                out["b"] = await b.call_tool("list_notes", {})
            async with Client(url) as c:  # stateless protocol: no session, so one shared run (the client names none)
                await c.call_tool("delete_note", {"name": "x.txt"}, meta={"agentguard/session": "alice"})
                out["alice"] = await c.call_tool("list_notes", {}, meta={"agentguard/session": "alice"})
                out["bob"] = await c.call_tool("list_notes", {}, meta={"agentguard/session": "bob"})
            return out

        out = asyncio.run(main())
    finally:
        proc.terminate()
        proc.wait(10)
    assert out["a"].is_error and "halted earlier" in texts(out["a"])
    assert not out["b"].is_error and texts(out["b"]) == "(none)"
    assert out["alice"].is_error and out["bob"].is_error and "halted earlier" in texts(out["bob"])


@pytest.mark.parametrize("answer", [True, False])
def test_escalate_asks_the_approver(tmp_path, answer):
    asked = []

    async def approve(verdict, call):
        asked.append((verdict.decision, call.name, dict(call.arguments)))
        return answer

    async def main():
        guard = ToolRuleGuard(escalate=["write_note"])
        async with GuardProxy(guard, [upstream(tmp_path)], approve=approve) as proxy:
            async with Client(proxy.server) as client:
                return await client.call_tool("write_note", {"name": "n.txt", "text": "t"})

    r = asyncio.run(main())
    assert asked == [(Decision.ESCALATE, "write_note", {"name": "n.txt", "text": "t"})]
    assert (tmp_path / "n.txt").exists() is answer and r.is_error is (not answer)


def test_the_sdk_proxy_records_the_call_history_state(tmp_path):
    """``GuardProxy(state_fn=history_state)`` (what ``agentguard mcp-proxy --state history`` passes on the
    SDK path) records each call with the history before it, refusals included."""
    from agentguard.spec.history import history_state

    rec = TraceRecorder(tmp_path / "traces.jsonl")

    async def main():
        async with GuardProxy(policy(), [upstream(tmp_path)], recorder=rec, state_fn=history_state) as proxy:
            async with Client(proxy.server) as client:
                await client.call_tool("list_notes", {})
                await client.call_tool("delete_note", {"name": "x.txt"})
                await client.call_tool("write_note", {"name": "a.txt", "text": "hi"})

    asyncio.run(main())
    [trace] = read_traces(str(tmp_path / "traces.jsonl"))
    states = [s.state for s in trace.steps]
    assert [s["call"]["tool"] for s in states] == ["list_notes", "delete_note", "write_note"]
    assert states[2]["tools"] == ["list_notes"] and states[2]["refused"] == ["delete_note"]
    assert states[2]["call"]["args"] == {"name": "a.txt", "text": "hi"}


def test_arguments_the_upstream_would_coerce_are_refused_before_the_guard(tmp_path):
    """Red team: the upstream (MCPServer) validates with pydantic, so ``"5000"`` and ``5000.0`` reach
    ``transfer_funds(amount: int)`` as 5000 while a limit rule read the spelling. The proxy checks each call
    against the tool's listed inputSchema (no coercion) and refuses what does not conform; a conforming
    call under the limit still runs."""
    guard = ToolRuleGuard(allow=["*"], arguments=[{"tool": "transfer_funds", "arg": "amount", "forbid": r"^\d{4,}$"}])

    async def main():
        async with GuardProxy(guard, [upstream(tmp_path)]) as proxy:
            async with Client(proxy.server) as client:
                got = [await client.call_tool("transfer_funds", {"amount": a, "to": "bob"})
                       for a in ("5000", 5000.0, " 5000 ", 12)]
                return got

    got = asyncio.run(main())
    assert [r.is_error for r in got] == [True, True, True, False]
    assert "inputSchema" in texts(got[0])
    assert (tmp_path / "ledger.txt").read_text() == "12 bob\n"


def test_refusals_before_the_guard_are_pipeline_decisions_and_unlisted_tools_are_refused(tmp_path):
    """Red team (pass 3): a schema refusal was answered without a Pipeline decision (no audit record, not in
    the run); a tool name the upstreams do not list (a confusable spelling, a tool added or removed since the
    proxy listed) is listed again and refused when still unknown, never forwarded unchecked."""
    from agentguard.core.pipeline import Pipeline  # noqa: F401 - the proxy's own

    records = []

    class Sink:
        def write(self, rec):
            records.append(rec)

    guard = ToolRuleGuard(allow=["*"])

    async def main():
        async with GuardProxy(guard, [upstream(tmp_path)]) as proxy:
            proxy.pipeline.audit = Sink()
            proxy._schemas.pop("transfer_funds")  # as if listed before the tool was added
            async with Client(proxy.server) as client:
                return [await client.call_tool("transfer_funds", {"amount": "5000", "to": "bob"}),
                        await client.call_tool("transfеr_funds", {"amount": 1, "to": "bob"}),  # Cyrillic e
                        await client.call_tool("transfer_funds", {"amount": 3, "to": "bob"})]

    got = asyncio.run(main())
    assert [r.is_error for r in got] == [True, True, False]
    assert "inputSchema" in texts(got[0]) and "tools/list" in texts(got[1])
    assert [(r.decision, r.guard) for r in records][:2] == [("REJECT", "mcp-proxy"), ("REJECT", "mcp-proxy")]
    assert records[2].decision == "ALLOW"
    assert (tmp_path / "ledger.txt").read_text() == "3 bob\n"


def test_a_cancelled_decision_is_refused_through_the_pipeline(tmp_path):
    """Red team (pass 3): a request cancelled while its approval was pending (the client's
    ``notifications/cancelled`` cancels the SDK handler) left no decision in the audit: it is now a refusal
    through the Pipeline (the ask answered "no")."""
    records = []

    class Sink:
        def write(self, rec):
            records.append(rec)

    async def never(verdict, call):
        await asyncio.sleep(3600)

    proxy = GuardProxy(ToolRuleGuard(allow=["*"], escalate=["transfer_*"]), [upstream(tmp_path)], approve=never)
    proxy.pipeline.audit = Sink()

    async def main():
        task = asyncio.ensure_future(proxy._decide(None, ToolCall("transfer_funds", {"amount": 1}, "1")))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert [(r.kind, r.decision) for r in records] == [("check", "ESCALATE"), ("check", "REJECT")]
    assert "cancelled" in records[-1].reason
