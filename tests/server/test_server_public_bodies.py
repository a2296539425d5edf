"""Anonymous clients cannot hold the service's concurrency slots (session 18 red team, real uvicorn).

The attack (no credential): the public paths (``/dashboard``, ``/``, ``/docs``, ``/static/*``) skip
authentication, and the gate read a POST body there like any other, within ``body_timeout_s`` and holding one of
``max_concurrency`` slots meanwhile. Eight slow anonymous uploads to ``/dashboard`` (``max_concurrency = 8``; a
few hundred against the default 512) made every agent's ``/v1/check`` answer 503 until they timed out. Now a
body method on a public path is 405 before a byte is read, so an anonymous request never waits on its client.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from agentguard.asgi import Hardening  # noqa: E402
from agentguard.server.gate import PUBLIC_PATHS  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from svc_roles import AGENT, credentials_file  # noqa: E402


def test_slow_anonymous_uploads_do_not_starve_the_agents(tmp_path):
    import uvicorn

    from agentguard.server.app import create_app
    from agentguard.server.runner import uvicorn_config
    from agentguard.server.settings import ServerSettings
    from agentguard.server.testing import free_port

    port = free_port()
    s = ServerSettings(state_dir=str(tmp_path), port=port, credentials_file=str(credentials_file(tmp_path, (AGENT,))),
                       max_concurrency=8, body_timeout_s=5)
    server = uvicorn.Server(uvicorn_config(s, app=create_app(s)))
    th = threading.Thread(target=server.run, daemon=True)
    th.start()
    t0 = time.time()
    while not server.started and time.time() - t0 < 30:
        time.sleep(0.02)
    socks = []
    try:
        for path in ["/dashboard", "/static/x", "/", "/docs", "/openapi.json", "/favicon.ico"] * 2:
            sk = socket.create_connection(("127.0.0.1", port), timeout=5)
            sk.sendall(f"POST {path} HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n".encode() + b"x")
            socks.append(sk)
        time.sleep(0.3)
        r = httpx.post(f"http://127.0.0.1:{port}/v1/check", headers=AGENT.headers, timeout=10,
                       json={"tool_call": {"name": "read_file"}})
        assert r.status_code == 200 and "decision" in r.json(), r.text
        assert all(sk.recv(200).startswith(b"HTTP/1.1 405") for sk in socks)
    finally:
        for sk in socks:
            sk.close()
        server.should_exit = True
        th.join(timeout=10)


@settings(max_examples=60, deadline=None)
@given(path=st.sampled_from(sorted(PUBLIC_PATHS)) | st.text(max_size=12).map(lambda t: "/static/" + t),
       method=st.sampled_from(["POST", "PUT", "PATCH"]))
def test_property_a_public_path_never_reads_a_body(path, method):
    from agentguard.server.gate import PUBLIC_PREFIXES

    asked: list[str] = []
    sent: list[dict] = []

    async def app(scope, receive, send):  # pragma: no cover - must not be reached
        asked.append(scope["path"])

    async def receive():  # pragma: no cover - must not be read
        asked.append("receive")
        await asyncio.sleep(3600)

    async def send(msg):
        sent.append(msg)

    gate = Hardening(app, token="tok-0123456789", public_paths=PUBLIC_PATHS, public_prefixes=PUBLIC_PREFIXES)
    scope = {"type": "http", "method": method, "path": path, "headers": [(b"content-length", b"10")]}
    asyncio.run(asyncio.wait_for(gate(scope, receive, send), 5))
    assert asked == [] and sent[0]["status"] == 405
