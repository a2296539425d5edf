"""MCP guard proxy in front of a real MCP server (started over stdio), used by a real MCP client.

    python examples/integrations/mcp_proxy_demo.py

The same proxy as a command, for an MCP client configuration:

    python -m agentguard mcp-proxy --config examples/integrations/agentguard.toml \
        --upstream "notes=python examples/integrations/mcp_upstream_server.py /tmp/notes"
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from mcp import Client

from agentguard.config import load_stack
from agentguard.integrations.mcp import GuardProxy, Upstream

HERE = Path(__file__).resolve().parent


def main(workdir: str | None = None) -> dict:
    work = Path(workdir or tempfile.mkdtemp(prefix="agentguard-notes-"))
    (work / "keep.txt").write_text("important")
    upstream = Upstream(
        "notes", command=sys.executable, args=[str(HERE / "mcp_upstream_server.py"), str(work)]
    )

    async def run() -> dict:
        async with GuardProxy(load_stack(HERE / "agentguard.toml"), [upstream]) as proxy:
            async with Client(proxy.server) as client:
                print("tools:", [t.name for t in (await client.list_tools()).tools])
                for name, args in [
                    ("delete_note", {"name": "keep.txt"}),
                    ("write_note", {"name": "todo.txt", "text": "buy milk"}),
                ]:
                    r = await client.call_tool(name, args)
                    print(f"{name}: {'ERROR ' if r.is_error else ''}{r.content[0].text}")
        return {"kept": (work / "keep.txt").exists(), "written": (work / "todo.txt").exists()}

    return asyncio.run(run())


if __name__ == "__main__":
    print(main())
