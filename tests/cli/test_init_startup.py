"""`agentguard --help` and the MCP proxy command import only what they need (issue 18: the CLI used to
import scipy, 2.4 s for --help; the proxy added seconds to an MCP server's start-up)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("scipy", "numpy", "torch", "pandas", "stormpy", "transformers", "sklearn", "mcp", "langchain",
         "agents", "fastapi", "sqlalchemy")


def loaded_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    return {m.split(".")[0] for m in json.loads(out.strip().splitlines()[-1])}


def test_help_imports_no_heavy_package():
    code = ("import agentguard.cli as c, contextlib, io\n"
            "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
            "    c.app(args=['--help'])")
    assert not loaded_after(code) & set(HEAVY)


def test_mcp_upstream_parsing_needs_no_mcp_sdk():
    """The proxy command parses and starts its upstreams before importing the MCP SDK."""
    got = loaded_after("from agentguard.integrations.mcp.upstream import parse_upstream\n"
                       "parse_upstream('time=python -m mcp_server_time')")
    assert "mcp" not in got and "mcp_types" not in got
