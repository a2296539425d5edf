"""A small upstream MCP server (mcp 2.x ``MCPServer``) with side effects the tests can observe.

    python examples/integrations/mcp_upstream_server.py WORKDIR

Tools: ``write_note(name, text)`` writes WORKDIR/name; ``delete_note(name)`` deletes it;
``transfer_funds(amount, to)`` appends to WORKDIR/ledger.txt; ``list_notes()`` lists WORKDIR;
``count_slowly(n)`` reports progress n times; ``announce(text)`` sends a logging message and the
tools / prompts / resources ``list_changed`` notifications (so the proxy's relay of notifications can be shown).
A prompt ``summarize_notes(style)``, a resource ``notes://index`` and a template ``notes://note/{name}``
(so the proxy's prompt and resource pass-through can be shown). Served over stdio.
"""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import Context, MCPServer

WORKDIR = sys.argv[1] if len(sys.argv) > 1 else os.getcwd()
server = MCPServer("notes")


def _path(name: str) -> str:
    if "/" in name or name.startswith("."):
        raise ValueError(f"bad note name {name!r}")
    return os.path.join(WORKDIR, name)


@server.tool()
def write_note(name: str, text: str) -> str:
    """Write a note."""
    with open(_path(name), "w", encoding="utf-8") as fh:
        fh.write(text)
    return f"wrote {len(text)} characters to {name}"


@server.tool()
def delete_note(name: str) -> str:
    """Delete a note."""
    os.remove(_path(name))
    return f"deleted {name}"


@server.tool()
def transfer_funds(amount: int, to: str) -> str:
    """Record a transfer in WORKDIR/ledger.txt."""
    with open(os.path.join(WORKDIR, "ledger.txt"), "a", encoding="utf-8") as fh:
        fh.write(f"{amount} {to}\n")
    return f"transferred {amount} to {to}"


@server.tool()
def list_notes() -> str:
    """List the notes."""
    return ", ".join(sorted(os.listdir(WORKDIR))) or "(none)"


@server.tool()
async def count_slowly(n: int, ctx: Context) -> str:
    """Count to n, reporting progress at each number."""
    for i in range(1, n + 1):
        await ctx.report_progress(i, n, f"at {i}")
    return f"counted to {n}"


@server.tool()
async def announce(text: str, ctx: Context) -> str:
    """Send ``text`` as a logging message (handshake-era clients), then the list_changed notifications."""
    await ctx.info(text, logger_name="notes")
    if ctx.protocol_version == "2026-07-28":  # to the client's subscriptions/listen stream
        await ctx.notify_tools_changed()
        await ctx.notify_prompts_changed()
        await ctx.notify_resources_changed()
    else:  # handshake-era session: plain notifications
        await ctx.session.send_tool_list_changed()
        await ctx.session.send_prompt_list_changed()
        await ctx.session.send_resource_list_changed()
    return f"announced {text}"


@server.prompt()
def summarize_notes(style: str = "short") -> str:
    """Ask the model to summarise the notes."""
    return f"Summarise the notes in a {style} paragraph."


@server.resource("notes://index", mime_type="text/plain")
def notes_index() -> str:
    """The list of notes."""
    return ", ".join(sorted(os.listdir(WORKDIR))) or "(none)"


@server.resource("notes://note/{name}", mime_type="text/plain")
def read_note(name: str) -> str:
    """One note's text."""
    with open(_path(name), encoding="utf-8") as fh:
        return fh.read()


if __name__ == "__main__":
    server.run("stdio")
