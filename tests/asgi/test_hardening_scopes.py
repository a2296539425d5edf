"""Only HTTP requests pass :class:`agentguard.asgi.Hardening` (session 18 red team): a WebSocket handshake
went to the wrapped app unchecked (``scope["type"] != "http"`` was passed on), so a WebSocket route behind the
gate answered without a token. Now the handshake is refused (1008 before accept; the server answers 403)
whatever its path or headers, lifespan events still pass, and any other scope type is dropped."""

from __future__ import annotations

import contextlib

import pytest

pytest.importorskip("starlette")
from starlette.applications import Starlette  # noqa: E402
from starlette.responses import PlainTextResponse  # noqa: E402
from starlette.routing import Route, WebSocketRoute  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402
from starlette.websockets import WebSocketDisconnect  # noqa: E402

from agentguard.asgi import Hardening  # noqa: E402

TOKEN = "tok-0123456789"


async def _ws(websocket):
    await websocket.accept()
    await websocket.send_text("secret")
    await websocket.close()


def _app(started: list[str]):
    @contextlib.asynccontextmanager
    async def lifespan(app):
        started.append("up")
        yield

    inner = Starlette(routes=[WebSocketRoute("/ws", _ws), Route("/x", lambda r: PlainTextResponse("x"))],
                      lifespan=lifespan)
    return Hardening(inner, token=TOKEN, public_paths=["/ws"])


@pytest.mark.parametrize("headers", [{}, {"Authorization": f"Bearer {TOKEN}"}, {"Authorization": "Bearer nope"}],
                         ids=["no-token", "token", "bad-token"])
def test_a_websocket_handshake_never_reaches_the_app(headers):
    started: list[str] = []
    with TestClient(_app(started)) as c:
        assert started == ["up"]  # lifespan passes
        assert c.get("/x").status_code == 401 and c.get("/x", headers={"Authorization": f"Bearer {TOKEN}"}).text == "x"
        with pytest.raises(WebSocketDisconnect) as exc:
            with c.websocket_connect("/ws", headers=headers) as w:
                w.receive_text()
        assert exc.value.code == 1008


def test_an_unknown_scope_type_is_dropped():
    import asyncio

    called: list[str] = []

    async def app(scope, receive, send):
        called.append(scope["type"])

    asyncio.run(Hardening(app, token=TOKEN)({"type": "something-new"}, None, None))  # type: ignore[arg-type]
    assert called == []
