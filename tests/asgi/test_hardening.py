"""agentguard.asgi.Hardening, the one HTTP hardening middleware (service, LiteLLM endpoint, MCP over HTTP),
driven through httpx's ASGI transport: token (bearer or API-key header), public paths, body limits
(declared and streamed), Content-Length validation, body timeout, concurrency (503, queueing), security
headers on every response, the request callback."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from agentguard.asgi import CSP, Hardening


async def echo(scope, receive, send):
    body = b""
    if scope["method"] in ("POST", "PUT", "PATCH"):
        while True:
            msg = await receive()
            body += msg.get("body", b"")
            if not msg.get("more_body"):
                break
    data = json.dumps({"path": scope["path"], "n": len(body)}).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": data})


def call(app, method, path, **kw):
    async def go():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
            return await c.request(method, path, **kw)

    return asyncio.run(go())


def test_token_bearer_or_api_key_in_constant_time_and_public_paths():
    app = Hardening(echo, token="tok", api_key_header="x-api-key", public_paths=["/health"])
    assert call(app, "GET", "/x").status_code == 401
    r = call(app, "GET", "/x", headers={"Authorization": "Bearer nope"})
    assert r.status_code == 401 and r.json() == {"error": "invalid bearer token"}
    assert r.headers["www-authenticate"].startswith("Bearer")
    assert call(app, "GET", "/x", headers={"Authorization": "bearer tok"}).status_code == 401
    assert call(app, "GET", "/x", headers={"Authorization": "Bearer tok"}).status_code == 200
    assert call(app, "GET", "/x", headers={"x-api-key": "tok"}).status_code == 200
    assert call(app, "GET", "/x", headers={"x-api-key": "tok2"}).status_code == 401
    assert call(app, "GET", "/health").status_code == 200
    only_bearer = Hardening(echo, token="tok")
    assert call(only_bearer, "GET", "/x", headers={"x-api-key": "tok"}).status_code == 401


def test_body_limits_declared_streamed_and_malformed():
    app = Hardening(echo, max_body=10)
    assert call(app, "POST", "/x", content=b"x" * 10).json()["n"] == 10
    r = call(app, "POST", "/x", content=b"x" * 11)
    assert r.status_code == 413 and "exceeds the limit of 10" in r.json()["error"]

    async def chunks():
        yield b"x" * 6
        yield b"x" * 6

    assert call(app, "POST", "/x", content=chunks()).status_code == 413  # no Content-Length: counted
    assert call(app, "POST", "/x", content=b"x", headers={"Content-Length": "-1"}).status_code == 400
    assert call(app, "POST", "/x", content=b"x", headers={"Content-Length": "ten"}).status_code == 400


def test_body_timeout_is_408():
    app = Hardening(echo, body_timeout_s=0.05)

    async def stalled():
        async def receive():
            await asyncio.sleep(1)
            return {"type": "http.request", "body": b"", "more_body": False}

        sent = []

        async def send(msg):
            sent.append(msg)

        await app({"type": "http", "method": "POST", "path": "/x", "headers": []}, receive, send)
        return sent

    sent = asyncio.run(stalled())
    assert sent[0]["status"] == 408


def test_concurrency_limit_503_and_queueing():
    async def go(queue_s):
        gate = asyncio.Event()

        async def slow(scope, receive, send):
            if scope["path"] != "/health":
                await gate.wait()
            await echo(scope, receive, send)

        app = Hardening(slow, max_concurrency=1, queue_timeout_s=queue_s)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
            first = asyncio.create_task(c.get("/a"))
            await asyncio.sleep(0.05)
            health = await asyncio.wait_for(c.get("/health"), 5)  # not counted: answers while the slot is taken
            second = asyncio.create_task(c.get("/b"))
            await asyncio.sleep(0.1)
            gate.set()
            return await asyncio.wait_for(first, 5), await asyncio.wait_for(second, 10), health

    r1, r2, health = asyncio.run(go(0.0))
    assert health.status_code == 200
    assert r1.status_code == 200 and r2.status_code == 503 and r2.headers["retry-after"] == "1"
    r1, r2, _ = asyncio.run(go(5.0))  # waits for the slot instead
    assert r1.status_code == 200 and r2.status_code == 200


def test_security_headers_on_app_responses_and_errors_and_request_callback():
    seen = []
    app = Hardening(echo, token="tok", csp_for=lambda p: b"frame-ancestors 'none'" if p == "/docs" else CSP,
                    on_request=lambda path, status, dt: seen.append((path, status)))
    for r in (call(app, "GET", "/x"), call(app, "GET", "/x", headers={"Authorization": "Bearer tok"})):
        assert r.headers["x-frame-options"] == "DENY" and r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["referrer-policy"] == "no-referrer" and "frame-ancestors 'none'" in r.headers[
            "content-security-policy"]
    assert call(app, "GET", "/docs").headers["content-security-policy"] == "frame-ancestors 'none'"
    assert seen == [("/x", 401), ("/x", 200), ("/docs", 401)]


def test_other_scopes_pass_through():
    got = []

    async def app_(scope, receive, send):
        got.append(scope["type"])

    asyncio.run(Hardening(app_, token="t")({"type": "lifespan"}, None, None))
    assert got == ["lifespan"]


@pytest.mark.parametrize("forbidden", ["agentguard.integrations", "agentguard.server", "fastapi", "starlette"])
def test_asgi_imports_only_core(forbidden):
    import subprocess
    import sys

    code = f"import agentguard.asgi, sys; print(any(m == {forbidden!r} or m.startswith({forbidden!r} + '.') " \
           "for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- one credential per request (red team: a repeated Authorization header) ---------------------------
from hypothesis import given, settings as hsettings, strategies as st  # noqa: E402


def raw_status(app, headers, path="/x"):
    """Drive ``app`` with a raw ASGI scope (header names exactly as given: casing kept)."""
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(msg):
        sent.append(msg)

    scope = {"type": "http", "method": "GET", "path": path, "headers": headers}
    asyncio.run(app(scope, receive, send))
    return sent[0]["status"], (json.loads(sent[1]["body"]) if sent[0]["status"] != 200 else None)


_NAME = st.sampled_from([b"authorization", b"Authorization", b"AUTHORIZATION", b"x-api-key", b"X-Api-Key"])
_VALUE = st.sampled_from([b"Bearer tok", b"Bearer nope", b"tok", b"", b"Bearer  tok"])


@hsettings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_NAME, _VALUE), min_size=2, max_size=4), st.booleans())
def test_more_than_one_credential_header_is_refused_in_any_casing_and_order(creds, valid_first):
    # the valid credential is first or last: a reader taking the first and one taking the last must not
    # disagree, so two credentials are refused whatever they are
    valid = (b"authorization", b"Bearer tok")
    headers = [valid, *creds] if valid_first else [*creds, valid]
    app = Hardening(echo, token="tok", api_key_header="x-api-key")
    status, body = raw_status(app, [(b"accept", b"*/*"), *headers])
    assert status == 401 and "more than one credential" in body["error"]


def test_exactly_one_credential_header_in_any_casing_passes():
    app = Hardening(echo, token="tok", api_key_header="x-api-key")
    for name in (b"authorization", b"Authorization", b"AUTHORIZATION"):
        assert raw_status(app, [(name, b"Bearer tok")])[0] == 200
    assert raw_status(app, [(b"X-API-KEY", b"tok")])[0] == 200
    only_bearer = Hardening(echo, token="tok")  # without an API-key header, x-api-key is not a credential
    assert raw_status(only_bearer, [(b"authorization", b"Bearer tok"), (b"x-api-key", b"zzz")])[0] == 200
    r = call(app, "GET", "/x", headers=[("Authorization", "Bearer nope"), ("Authorization", "Bearer tok")])
    assert r.status_code == 401 and "more than one credential" in r.json()["error"]
