"""The recipe's MCP client (docs/recipe.md): replays scripted episodes against an MCP server command.

    python mcp_client.py --runs 4 -- agentguard mcp-proxy --guards record.toml --upstream "tools=python mcp_server.py"

Each episode is one connection (one run of the proxy, one line of its trace file). Prints what each
call answered.
"""

from __future__ import annotations

import argparse
import asyncio
import os

from mcp import Client, StdioServerParameters

from tools import EPISODES, episode_kind


async def episode(params: StdioServerParameters, kind: str) -> list[str]:
    out = []
    async with Client(params) as client:
        for name, args in EPISODES[kind]:
            res = await client.call_tool(name, args)
            text = " ".join(getattr(c, "text", "") for c in res.content)
            out.append(f"{name}: {'refused' if res.is_error else 'ok'} ({text[:60]})")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--offset", type=int, default=0, help="the first episode number")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- the server command")
    args = ap.parse_args()
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env={**os.environ}, cwd=os.getcwd())
    for i in range(args.offset, args.offset + args.runs):
        kind = episode_kind(i)
        print(f"{kind}: " + "; ".join(asyncio.run(episode(params, kind))))


if __name__ == "__main__":
    main()
