"""Duplicate JSON keys never reach the MCP proxy's guards (issue 13): over stdio a refused request is
answered with an error carrying its id and the upstream tool does not run; over HTTP a refused body
gets 400 before the SDK sees it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from agentguard.integrations.mcp.strict import StrictLines, refusal_for, strict_http_app  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
UPSTREAM = REPO / "examples" / "integrations" / "mcp_upstream_server.py"
DUP_CALL = ('{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "write_note", '
            '"arguments": {"name": "evil.txt", "text": "x", "name": "dup.txt"}}}')


def _rpc(proc: subprocess.Popen, message: dict | str) -> None:
    text = message if isinstance(message, str) else json.dumps(message)
    proc.stdin.write(text + "\n")
    proc.stdin.flush()


def _answer(proc: subprocess.Popen, want_id: int) -> dict:
    while True:
        line = proc.stdout.readline()
        assert line, "the proxy closed its output"
        msg = json.loads(line)
        if msg.get("id") == want_id:
            return msg


def test_stdio_proxy_refuses_duplicate_keys_and_keeps_serving(tmp_path):
    cfg = tmp_path / "agentguard.toml"
    cfg.write_text('[[guards]]\ntype = "tool-rules"\nallow = ["write_note", "list_notes"]\n')
    notes = tmp_path / "notes"
    notes.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentguard", "mcp-proxy", "--guards", str(cfg),
         "--upstream", f"notes={sys.executable} {UPSTREAM} {notes}"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=REPO,
        env={**os.environ})
    try:
        _rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        assert "result" in _answer(proc, 1)
        _rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _rpc(proc, DUP_CALL)
        refused = _answer(proc, 7)
        assert "error" in refused and "result" not in refused, refused
        _rpc(proc, {"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                    "params": {"name": "write_note", "arguments": {"name": "ok.txt", "text": "fine"}}})
        done = _answer(proc, 8)
        assert "result" in done and not done["result"].get("isError"), done
    finally:
        proc.stdin.close()
        proc.terminate()
        proc.wait(timeout=20)
    assert sorted(p.name for p in notes.iterdir()) == ["ok.txt"]  # the duplicate-key call never ran


def test_strict_lines_pass_good_lines_and_replace_refused_requests():
    async def source():
        for line in ['{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n', DUP_CALL + "\n", "\n",
                     '{"jsonrpc": "2.0", "method": "x", "params": {"a": 1, "a": 2}}\n']:
            yield line

    async def collect():
        return [line async for line in StrictLines(source())]

    out = asyncio.run(collect())
    assert out[0].startswith('{"jsonrpc": "2.0", "id": 1')
    replaced = json.loads(out[1])
    assert replaced["id"] == 7 and replaced["method"] == "agentguard/refused"
    assert "duplicate key 'name'" in replaced["params"]["reason"]
    assert out[2] == "\n" and len(out) == 3  # the refused notification is dropped


def test_strict_http_app_answers_400_before_the_app_runs():
    seen = []

    async def app(scope, receive, send):
        seen.append(await receive())
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    async def call(body: bytes):
        sent = []
        events = [{"type": "http.request", "body": body[:5], "more_body": True},
                  {"type": "http.request", "body": body[5:], "more_body": False}]

        async def receive():
            return events.pop(0)

        async def send(event):
            sent.append(event)

        await strict_http_app(app)({"type": "http", "method": "POST"}, receive, send)
        return sent

    refused = asyncio.run(call(DUP_CALL.encode()))
    assert refused[0]["status"] == 400 and not seen
    assert json.loads(refused[1]["body"])["id"] == 7
    ok = asyncio.run(call(b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'))
    assert ok[0]["status"] == 200 and seen[0]["body"].startswith(b'{"jsonrpc"')
    assert refusal_for(b"not json", "x") is None


def test_http_front_door_is_the_shared_hardening():
    """MCP over HTTP gets the same hardening as the service and the LiteLLM endpoint: the bearer token when
    one is set, the body limit (a body over it never reaches the strict reader or the SDK), headers."""
    from starlette.testclient import TestClient

    from agentguard.integrations.mcp.strict import hardened_http_app

    seen = []

    async def app(scope, receive, send):
        seen.append(await receive())
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    ping = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
    c = TestClient(hardened_http_app(app, token="s3cret", max_body=1024))
    assert c.post("/mcp", content=ping).status_code == 401
    assert c.post("/mcp", content=ping, headers={"Authorization": "Bearer wrong"}).status_code == 401
    ok = c.post("/mcp", content=ping, headers={"Authorization": "Bearer s3cret"})
    assert ok.status_code == 200 and ok.headers.get("x-content-type-options") == "nosniff"
    big = c.post("/mcp", content=b'{"a": "' + b"x" * 4096 + b'"}', headers={"Authorization": "Bearer s3cret"})
    assert big.status_code == 413 and len(seen) == 1
    dup = c.post("/mcp", content=DUP_CALL.encode(), headers={"Authorization": "Bearer s3cret"})
    assert dup.status_code == 400 and len(seen) == 1


def test_strict_lines_refuse_numbers_that_overflow():
    # the SDK (pydantic) reads 1e999 as inf and writes it to the upstream as null: refused at the door
    async def source():
        yield '{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "pay", "arguments": {"amount": 1e999}}}\n'
        yield '{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "pay", "arguments": {"amount": 1e9}}}\n'

    async def collect():
        return [line async for line in StrictLines(source())]

    refused, ok = asyncio.run(collect())
    assert json.loads(refused)["method"] == "agentguard/refused" and ("not finite" in json.loads(refused)["params"]["reason"] or "out of range" in json.loads(refused)["params"]["reason"])
    assert json.loads(ok)["params"]["arguments"] == {"amount": 1e9}
