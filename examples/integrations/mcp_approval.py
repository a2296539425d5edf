"""MCP guard proxy in front of a real MCP server: a refusal the session carries on from, a human approval
through MCP elicitation (the client's own form), and per-run facts (``_meta["agentguard/facts"]``)
reaching a verified policy. Real upstream over stdio, a real ``mcp.Client``; no network.

    python examples/integrations/mcp_approval.py

Same guard stack as langchain_approval.py: the shared agentguard.toml + "ask before writing"
(ESCALATE) + the verified transfer-limit policy reading the user's own limit from the facts.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

import mcp_types as types
from mcp import Client

from agentguard import GuardStack
from agentguard.config import load_stack
from agentguard.integrations.mcp import GuardProxy, Upstream
from agentguard.policies.rules import ToolRuleGuard
from agentguard.policies import ToolCallGuard

HERE = Path(__file__).resolve().parent


def guard_stack() -> GuardStack:
    user_limit = ToolCallGuard.from_config({
        "policy": str(HERE / "policies" / "transfer_limit.py"), "name": "user-limit",
        "tools": ["transfer_funds"], "unknown_tool": "allow",
        "fields": {"amount": {"from": "argument", "key": "amount"},
                   "limit": {"from": "metadata", "key": "user_info.transfer_limit"}},
    })
    ask = ToolRuleGuard(escalate=["write_note"], name="ask-before-writing")
    return GuardStack([load_stack(HERE / "agentguard.toml"), ask, user_limit], name="example+approval")


def main(workdir: str | None = None, user_limit: int = 500) -> dict:
    work = Path(workdir or tempfile.mkdtemp(prefix="agentguard-notes-"))
    (work / "keep.txt").write_text("important")
    upstream = Upstream("notes", command=sys.executable, args=[str(HERE / "mcp_upstream_server.py"), str(work)])
    asked = []

    async def human(context, params: types.ElicitRequestFormParams) -> types.ElicitResult:
        """The client's elicitation form, answered by 'the human': yes to todo.txt only."""
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": "todo.txt" in params.message})

    async def run() -> dict:
        meta = {"agentguard/facts": {"user_info": {"transfer_limit": user_limit}}}
        async with GuardProxy(guard_stack(), [upstream]) as proxy, \
                Client(proxy.server, elicitation_callback=human) as client:
            for name, args in [
                ("delete_note", {"name": "keep.txt"}),                  # refused; the session goes on
                ("transfer_funds", {"amount": 800, "to": "bob"}),       # this user's own limit decides
                ("write_note", {"name": "todo.txt", "text": "milk"}),   # the human approves
                ("write_note", {"name": "evil.txt", "text": "x"}),      # the human refuses
            ]:
                r = await client.call_tool(name, args, meta=meta)
                print(f"{name}: {'ERROR ' if r.is_error else ''}{r.content[0].text}")
        ledger = work / "ledger.txt"
        return {
            "kept": (work / "keep.txt").exists(),
            "transferred": ledger.read_text().split() if ledger.exists() else [],
            "written": sorted(p.name for p in work.iterdir() if p.name not in ("keep.txt", "ledger.txt")),
            "asked": len(asked),
        }

    return asyncio.run(run())


if __name__ == "__main__":
    print(main(user_limit=500))
    print(main(user_limit=5000))
