"""``agentguard mcp-proxy`` (cli.integrations) as a service manager starts it: stdin from ``/dev/null``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

REPO = Path(__file__).resolve().parents[2]


def test_mcp_proxy_with_stdin_from_dev_null_ends_cleanly(tmp_path):
    """Under epoll ``/dev/null`` cannot be polled: asyncio raised PermissionError inside the loop (a traceback
    on stderr) and the relay never saw EOF, so the proxy hung until killed. Now it reads EOF and exits 0."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    argv = [sys.executable, "-m", "agentguard", "mcp-proxy", "--guards", str(REPO / "examples/integrations/agentguard.toml"),
            "--upstream", f"notes={sys.executable} {REPO / 'examples/integrations/mcp_upstream_server.py'} {tmp_path}"]
    with open(os.devnull, "rb") as null:
        r = subprocess.run(argv, stdin=null, capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-2000:]
