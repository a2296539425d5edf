"""The recipe's tools as an MCP server over stdio (docs/recipe.md): ``python mcp_server.py``."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from tools import TOOLS

server = MCPServer("recipe-tools")
for fn in TOOLS:
    server.tool()(fn)

if __name__ == "__main__":
    server.run("stdio")
