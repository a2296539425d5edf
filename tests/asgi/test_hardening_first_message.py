"""agentguard.asgi.Hardening ``read_body``: a body whose first message is ready is taken without arming the timeout;
a first ``receive()`` that has to wait is resumed where it stopped (the message it then returns is the body), still
under ``body_timeout_s`` (408), and so is any awaitable ``receive`` that is not a coroutine."""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

from agentguard.asgi import Hardening


async def echo(scope: Any, receive: Any, send: Any) -> None:
    msg = await receive()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": msg.get("body", b"")})


def _serve(app: Hardening, receive: Any) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def send(msg: dict[str, Any]) -> None:
        sent.append(msg)

    async def go() -> None:
        await app({"type": "http", "method": "POST", "path": "/x", "headers": []}, receive, send)

    asyncio.run(go())
    return sent


def test_a_first_message_that_waits_is_resumed_where_it_stopped() -> None:
    steps: list[str] = []

    async def receive() -> dict[str, Any]:
        steps.append("asked")
        await asyncio.sleep(0)  # waits once: the loop runs, then this goes on
        steps.append("resumed")
        return {"type": "http.request", "body": b"late", "more_body": False}

    sent = _serve(Hardening(echo, body_timeout_s=5), receive)
    assert sent[0]["status"] == 200 and sent[1]["body"] == b"late" and steps == ["asked", "resumed"]


def test_a_first_message_in_parts_after_a_wait() -> None:
    parts = [b"ab", b"cd"]

    async def receive() -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"type": "http.request", "body": parts.pop(0), "more_body": bool(parts)}

    assert _serve(Hardening(echo, body_timeout_s=5), receive)[1]["body"] == b"abcd"


def test_a_waiting_first_message_still_times_out_and_is_closed() -> None:
    state = {"closed": False}

    async def receive() -> dict[str, Any]:
        try:
            await asyncio.Event().wait()  # never set
        finally:
            state["closed"] = True
        return {"type": "http.request", "body": b""}

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "coroutine was never awaited"
        sent = _serve(Hardening(echo, body_timeout_s=0.02), receive)
    assert sent[0]["status"] == 408 and state["closed"]


def test_a_receive_that_is_not_a_coroutine() -> None:
    def receive() -> "asyncio.Future[dict[str, Any]]":
        fut = asyncio.get_running_loop().create_future()
        fut.set_result({"type": "http.request", "body": b"f", "more_body": False})
        return fut

    assert _serve(Hardening(echo, body_timeout_s=5), receive)[1]["body"] == b"f"


def test_a_first_message_over_the_limit_or_a_disconnect() -> None:
    async def big() -> dict[str, Any]:
        return {"type": "http.request", "body": b"x" * 11, "more_body": False}

    assert _serve(Hardening(echo, max_body=10), big)[0]["status"] == 413

    async def gone() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    assert _serve(Hardening(echo), gone) == []  # the client left: nothing answered, the app never called
