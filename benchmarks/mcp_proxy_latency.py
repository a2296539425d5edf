"""MCP guard proxy: per-call latency and start-up against a direct connection, side by side in one run.

The upstream is the PyPI server ``mcp-server-time`` (``python -m mcp_server_time``) over stdio. Three real
``mcp.Client`` connections are open at once: one straight to the server; one to ``agentguard mcp-proxy
--guards examples/integrations/agentguard.toml --upstream time=...`` (a subprocess, which starts its own
copy of the server; one stdio upstream served over stdio: the line relay,
``agentguard.integrations.mcp.relay``); and one to the same command with ``--prefix`` (the SDK server
path, ``GuardProxy``, which multi-upstream and ``--http`` proxies use; its tool is
``time__get_current_time``). Calls of ``get_current_time {"timezone": "UTC"}`` rotate between the three
(direct, proxy, proxy_sdk, direct, ...), so all see the same machine load; reported: the median, p10 and
p90 of each, ``ratio_median = proxy / direct`` and ``ratio_median_sdk = proxy_sdk / direct``, and the
1-minute load average before and after. ``--rounds`` repeats the per-call measurement over fresh
connections (``calls`` per connection each round): the figures above pool all rounds; ``rounds`` lists
each round's medians, ratios and load. Start-up: the time from spawning the client's connection to the
end of the first ``tools/list``, alternating direct and proxy ``--startups`` times. ``relay_us_per_call``:
the relay's own work per call in this process (a ``tools/call`` line of the shape the client sends and the
upstream's answer line fed to ``StdioRelay`` with the same stack, 2,000 calls, no pipes), median of 5.

    python benchmarks/mcp_proxy_latency.py [--calls 300] [--startups 5] [--rounds 3]
        [--out benchmarks/results/mcp_proxy_latency.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "examples" / "integrations" / "agentguard.toml"


def _targets():
    from mcp import StdioServerParameters, stdio_client

    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    server = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]
    direct = StdioServerParameters(command=server[0], args=server[1:], env=env)
    cmd = ["-m", "agentguard", "mcp-proxy", "--guards", str(CONFIG), "--upstream", "time=" + " ".join(server)]
    proxy = StdioServerParameters(command=sys.executable, args=cmd, env=env, cwd=str(REPO))
    sdk = StdioServerParameters(command=sys.executable, args=[*cmd, "--prefix"], env=env, cwd=str(REPO))
    return (lambda: stdio_client(direct)), (lambda: stdio_client(proxy)), (lambda: stdio_client(sdk))


def _relay_us_per_call(n: int = 2000) -> float:
    from agentguard.config import build_stack, load_config
    from agentguard.integrations.mcp.relay import StdioRelay

    sink: list[bytes] = []
    relay = StdioRelay(build_stack(load_config(str(CONFIG))), sink.append, sink.append)
    # the relay forwards only tools the upstream listed (a call of another is listed first): as after the
    # client's tools/list of mcp-server-time (its get_current_time schema), so each call is schema-checked
    relay.tools.learn({"tools": [{"name": "get_current_time", "inputSchema": {
        "type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}}]})
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    text = json.dumps({"timezone": "UTC", "datetime": "2026-11-24T02:19:02+00:00", "day_of_week": "Tuesday"})
    calls = [json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
        "name": "get_current_time", "arguments": {"timezone": "UTC"}, "_meta": meta}}).encode() + b"\n"
        for i in range(n)]
    answers = [json.dumps({"jsonrpc": "2.0", "id": i, "result": {
        "content": [{"type": "text", "text": text}], "isError": False}}).encode() + b"\n" for i in range(n)]
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        for c, a in zip(calls, answers):
            relay.client_line(c)
            relay.upstream_line(a)
        runs.append((time.perf_counter() - t0) / n * 1e6)
        assert len(sink) == 2 * n and json.loads(sink[0]) == json.loads(calls[0])  # forwarded (its own serialisation)
        sink.clear()
    return statistics.median(runs)


def _stats(xs: list[float]) -> dict:
    q = statistics.quantiles(xs, n=10)
    return {"median_ms": statistics.median(xs), "p10_ms": q[0], "p90_ms": q[-1], "n": len(xs)}


async def _startup(make) -> float:
    from mcp import Client

    t0 = time.perf_counter()
    async with Client(make()) as c:
        await c.list_tools()
        return (time.perf_counter() - t0) * 1000


async def _round(direct, proxy, sdk, calls: int) -> dict[str, list[float]]:
    """``calls`` calls per connection over three fresh connections, rotating, after 10 warm-up calls each."""
    from mcp import Client

    lat: dict[str, list[float]] = {"direct": [], "proxy": [], "proxy_sdk": []}
    args = {"timezone": "UTC"}
    async with Client(direct()) as d, Client(proxy()) as p, Client(sdk()) as s:
        clients = (("direct", d, "get_current_time"), ("proxy", p, "get_current_time"),
                   ("proxy_sdk", s, "time__get_current_time"))
        for _, c, tool in clients:  # warm-up
            for _ in range(10):
                await c.call_tool(tool, args)
        for _ in range(calls):
            for name, c, tool in clients:
                t0 = time.perf_counter()
                r = await c.call_tool(tool, args)
                lat[name].append((time.perf_counter() - t0) * 1000)
                assert not r.is_error, r
    return lat


async def run(calls: int, startups: int, rounds: int = 3) -> dict:
    direct, proxy, sdk = _targets()
    starts = {"direct": [], "proxy": []}
    for _ in range(startups):
        starts["direct"].append(await _startup(direct))
        starts["proxy"].append(await _startup(proxy))
    lat: dict[str, list[float]] = {"direct": [], "proxy": [], "proxy_sdk": []}
    by_round = []
    for _ in range(rounds):  # fresh connections (and processes) each round
        got = await _round(direct, proxy, sdk, calls)
        for k, v in got.items():
            lat[k].extend(v)
        med = {k: statistics.median(v) for k, v in got.items()}
        by_round.append({"direct_ms": med["direct"], "proxy_ms": med["proxy"], "proxy_sdk_ms": med["proxy_sdk"],
                         "ratio": med["proxy"] / med["direct"], "ratio_sdk": med["proxy_sdk"] / med["direct"],
                         "load1": os.getloadavg()[0]})
    per_call = {k: _stats(v) for k, v in lat.items()}
    start = {k: {"median_ms": statistics.median(v), "all_ms": v} for k, v in starts.items()}
    return {
        "per_call": per_call,
        "ratio_median": per_call["proxy"]["median_ms"] / per_call["direct"]["median_ms"],
        "ratio_median_sdk": per_call["proxy_sdk"]["median_ms"] / per_call["direct"]["median_ms"],
        "rounds": by_round,
        "target_ratio_median": 1.3,
        "startup": start,
        "startup_added_ms": start["proxy"]["median_ms"] - start["direct"]["median_ms"],
        "target_startup_added_ms": 1000,
        "relay_us_per_call": _relay_us_per_call(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--startups", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "mcp_proxy_latency.json"))
    a = ap.parse_args()
    load_before, t0 = os.getloadavg()[0], time.perf_counter()
    out = asyncio.run(run(a.calls, a.startups, a.rounds))
    out["command"] = "python benchmarks/mcp_proxy_latency.py " + " ".join(sys.argv[1:])
    out["machine"] = {"python": platform.python_version(), "cpus": os.cpu_count(), "load1": load_before,
                      "load1_after": os.getloadavg()[0], "wall_s": time.perf_counter() - t0}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k != "startup"}, indent=2))
    print("startup medians (ms):", {k: round(v["median_ms"]) for k, v in out["startup"].items()})


if __name__ == "__main__":
    main()
