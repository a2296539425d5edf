"""Guard overhead per tool call through each adapter, excluding the model.

For every adapter the same scripted workload runs three ways: without agentguard (``none``), with
an always-allow guard (``allow``: the adapter's own machinery), and with the example policy stack
(``stack``: GuardStack of two ToolRuleGuards, examples/integrations/agentguard.toml). The scripted
model and the tools are identical in all three, so ``per_call_us[x] - per_call_us['none']`` is the
guard's overhead per tool call, the model excluded. Labels are interleaved within each repeat. Both
the CPU time of this process (``time.process_time``, all its threads: steady on a shared, loaded
machine) and the wall time are reported, as medians over ``--repeats`` runs; ``cpu_overhead_us_per_call``
is the headline figure. For MCP the upstream server is another process (identical work in every
label), so its CPU is not counted; the proxy runs in this process, so its CPU is.
Also timed: the adapter's hook alone (``hook_us``: CPU microseconds of one guarded decision through the
adapter's hook, no framework around it).

    python benchmarks/integrations_overhead.py [--calls 20] [--repeats 15]
        [--out benchmarks/results/integrations_overhead.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from agentguard import BaseGuard, Verdict  # noqa: E402
from agentguard.config import load_stack  # noqa: E402

EX = REPO / "examples" / "integrations"


class AllowAll(BaseGuard):
    name = "allow-all"

    def check(self, context, proposal):
        return Verdict.allow(self.name)


def guards():
    return {"none": None, "allow": AllowAll(), "stack": load_stack(EX / "agentguard.toml")}


def interleaved(runs, repeats, per=1):
    """Samples (wall s, CPU s of this process) per call for each labelled run, labels alternated within
    every repeat so that load changes on a shared machine hit all of them alike. ``per``: calls per run."""
    for fn in runs.values():
        fn()  # warm-up
    ts = {k: [] for k in runs}
    for _ in range(repeats):
        for k, fn in runs.items():
            w0, c0 = time.perf_counter(), time.process_time()
            fn()
            ts[k].append(((time.perf_counter() - w0) / per, (time.process_time() - c0) / per))
    return ts


def micro(fn, n=2000):
    """CPU microseconds per call of ``fn`` (single-threaded hook code: CPU time is its cost)."""
    c0 = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - c0) / n * 1e6


def bench_langchain(calls, repeats):
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.prebuilt.tool_node import ToolCallRequest

    from agentguard.integrations.langchain import (
        AgentGuardMiddleware,
        AgentGuardToolGate,
        scripted_chat_model,
    )

    @tool
    def send_email(to: str, body: str) -> str:
        """Send."""
        return "ok"

    def script():
        return [
            AIMessage(
                "",
                tool_calls=[
                    {"name": "send_email", "args": {"to": "a@example.com", "body": "x"}, "id": f"c{i}"}
                ],
            )
            for i in range(calls)
        ] + [AIMessage("done")]

    def runner(g, cls=AgentGuardMiddleware):
        mw = [] if g is None else [cls(g)]

        def run():
            agent = create_agent(scripted_chat_model(script()), [send_email], middleware=mw)
            agent.invoke(
                {"messages": [{"role": "user", "content": "go"}]},
                {"configurable": {"thread_id": "b"}, "recursion_limit": 10 * calls + 10},
            )

        return run

    runs = {k: runner(g) for k, g in guards().items()}
    runs["stack_gate_only"] = runner(load_stack(EX / "agentguard.toml"), AgentGuardToolGate)
    samples = interleaved(runs, repeats, calls)
    g = load_stack(EX / "agentguard.toml")
    mw = AgentGuardMiddleware(g)
    req = ToolCallRequest(
        tool_call={"name": "send_email", "args": {"to": "a@example.com", "body": "x"}, "id": "c"},
        tool=None,
        state={"messages": []},
        runtime=SimpleNamespace(config={"configurable": {"thread_id": "b"}}),
    )
    hook = micro(lambda: mw.wrap_tool_call(req, lambda r: None))
    return samples, hook


def bench_openai_agents(calls, repeats):
    from agents import Agent, Runner, function_tool, set_trace_processors
    from agents.testing import ScriptedModel, assistant_message, function_call
    from agents.tool_context import ToolContext
    from agents.tool_guardrails import ToolInputGuardrailData

    from agentguard.integrations.openai_agents import AgentsGuard

    set_trace_processors([])

    def make_tool():
        @function_tool
        def send_email(to: str, body: str) -> str:
            """Send."""
            return "ok"

        return send_email

    def steps():
        return [
            [function_call("send_email", {"to": "a@example.com", "body": "x"}, call_id=f"c{i}")]
            for i in range(calls)
        ] + [[assistant_message("done")]]

    def runner(g):
        def run():
            tools = [make_tool()] if g is None else AgentsGuard(g).guard_tools([make_tool()])
            agent = Agent(name="a", model=ScriptedModel(steps()), tools=tools)
            asyncio.run(Runner.run(agent, "go", max_turns=calls + 5))

        return run

    samples = interleaved({k: runner(g) for k, g in guards().items()}, repeats, calls)
    ag = AgentsGuard(load_stack(EX / "agentguard.toml"))
    agent = Agent(name="a")
    data = ToolInputGuardrailData(
        context=ToolContext(
            context=None,
            tool_name="send_email",
            tool_call_id="c",
            tool_arguments='{"to":"a@example.com","body":"x"}',
        ),
        agent=agent,
    )

    async def many(n=2000):
        c0 = time.process_time()
        for _ in range(n):
            await ag._input(data)
        return (time.process_time() - c0) / n * 1e6

    hook = asyncio.run(many())
    ag.forget("default")
    return samples, hook


def bench_mcp(calls, repeats):
    from mcp import Client

    from agentguard.integrations.mcp.proxy import GuardProxy, Upstream

    work = tempfile.mkdtemp(prefix="agentguard-bench-")
    up = Upstream("notes", command=sys.executable, args=[str(EX / "mcp_upstream_server.py"), work])

    async def all_labels():
        from contextlib import AsyncExitStack

        async with AsyncExitStack() as st:
            clients = {"none": await st.enter_async_context(Client(up.target()))}
            for label, g in guards().items():
                if g is not None:
                    proxy = await st.enter_async_context(GuardProxy(g, [up]))
                    clients[label] = await st.enter_async_context(Client(proxy.server))
            for c in clients.values():
                await c.call_tool("list_notes", {})  # warm-up
            ts = {k: [] for k in clients}
            for _ in range(repeats):  # labels interleaved within each repeat
                for k, c in clients.items():
                    w0, c0 = time.perf_counter(), time.process_time()
                    for _ in range(calls):
                        await c.call_tool("list_notes", {})
                    ts[k].append(((time.perf_counter() - w0) / calls, (time.process_time() - c0) / calls))
            return ts

    return asyncio.run(all_labels()), None


def bench_litellm(calls, repeats):
    import http.client

    from agentguard.integrations.litellm import GUARDRAIL_PATH, GuardrailEndpoint, serve_in_thread

    body = json.dumps(
        {
            "input_type": "response",
            "litellm_trace_id": "t",
            "texts": [],
            "request_data": {},
            "tool_calls": [
                {
                    "id": "1",
                    "type": "function",
                    "function": {"name": "send_email", "arguments": '{"to": "a@example.com", "body": "x"}'},
                }
            ],
        }
    )
    servers, runs = [], {}
    for label, g in guards().items():
        if g is None:
            continue
        srv = serve_in_thread(GuardrailEndpoint(g))
        conn = http.client.HTTPConnection("127.0.0.1", srv.server_address[1])
        servers.append((srv, conn))

        def run(conn=conn):
            for _ in range(calls):
                conn.request("POST", GUARDRAIL_PATH, body, {"Content-Type": "application/json"})
                conn.getresponse().read()

        runs[label] = run
    samples = interleaved(runs, repeats, calls)
    for srv, conn in servers:
        conn.close()
        srv.shutdown()
        srv.server_close()
    ep = GuardrailEndpoint(load_stack(EX / "agentguard.toml"))
    payload = json.loads(body)
    hook = micro(lambda: ep.handle(payload))
    return samples, hook


def bench_streaming(calls, repeats):
    from agentguard.calibration import ThresholdMonitor
    from agentguard.integrations.streaming import GuardedStream

    chunks = [{"choices": [{"index": 0, "delta": {"content": f"step {i} text\n"}}]} for i in range(calls)]

    def raw():
        for c in chunks:
            _ = c["choices"][0]["delta"]["content"]

    runs = {"none": raw}
    for label, g in {"allow": AllowAll(), "stack": ThresholdMonitor(0.5, scorer=lambda t, c: 0.9)}.items():
        runs[label] = lambda g=g: list(GuardedStream(chunks, g))
    return interleaved(runs, repeats * 5, calls), None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "integrations_overhead.json"))
    a = ap.parse_args(argv)
    benches = {
        "langchain": bench_langchain,
        "openai_agents": bench_openai_agents,
        "mcp": bench_mcp,
        "litellm": bench_litellm,
        "streaming": bench_streaming,
    }
    import os

    results = {}
    load_before = os.getloadavg()
    for name, fn in benches.items():
        if a.only and name not in a.only:
            continue
        print(f"[{name}] running ...", file=sys.stderr, flush=True)
        samples, hook = fn(a.calls, a.repeats)
        cpu = {k: statistics.median(c for _, c in v) * 1e6 for k, v in samples.items()}
        wall = {k: statistics.median(w for w, _ in v) * 1e6 for k, v in samples.items()}
        wall_min = {k: min(w for w, _ in v) * 1e6 for k, v in samples.items()}
        cb, wb = cpu.get("none"), wall.get("none")
        results[name] = {
            "cpu_us_per_call_median": {k: round(v, 1) for k, v in cpu.items()},
            "cpu_overhead_us_per_call": {
                k: round(v - cb, 1) for k, v in cpu.items() if cb is not None and k != "none"
            },
            "wall_us_per_call_median": {k: round(v, 1) for k, v in wall.items()},
            "wall_us_per_call_min": {k: round(v, 1) for k, v in wall_min.items()},
            "wall_overhead_us_per_call_median": {
                k: round(v - wb, 1) for k, v in wall.items() if wb is not None and k != "none"
            },
            "hook_us": round(hook, 2) if hook is not None else None,
        }
        print(f"[{name}] {json.dumps(results[name])}", file=sys.stderr, flush=True)
    notes = {
        "langchain": "create_agent + scripted GenericFakeChatModel, one tool call per model turn; stack_gate_only = "
        "AgentGuardToolGate (no after_model node); hook_us = AgentGuardMiddleware.wrap_tool_call alone",
        "openai_agents": "Runner.run + agents.testing.ScriptedModel; hook_us = the input guardrail function alone",
        "mcp": "mcp.Client -> GuardProxy (in-process) -> stdio upstream vs mcp.Client -> stdio upstream directly; "
        "overhead includes the proxy's extra MCP hop, not only the guard",
        "litellm": "HTTP POST per guardrail request on loopback (keep-alive); 'none' has no equivalent (LiteLLM without the "
        "guardrail makes no request); hook_us = GuardrailEndpoint.handle alone",
        "streaming": "per stream step (one chunk per step), in-memory chunks; 'stack' = ThresholdMonitor with a constant scorer",
    }
    doc = {
        "command": "python "
        + " ".join(
            [
                str(Path(sys.argv[0]).relative_to(REPO)) if Path(sys.argv[0]).is_absolute() else sys.argv[0],
                *sys.argv[1:],
            ]
        ),
        "calls_per_run": a.calls,
        "repeats": a.repeats,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_average_before_after": [round(x, 2) for x in (*load_before, *os.getloadavg())],
        "results": results,
        "notes": notes,
    }
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(doc, indent=2) + "\n")
    print(json.dumps(doc, indent=2))


if __name__ == "__main__":
    main()
