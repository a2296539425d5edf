"""The limited httptools protocol sends an answer's head and body in one write (protocol._OneWrite)."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest

from agentguard.server.protocol import _OneWrite


class _Transport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False
        self.extra = "sock"

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str) -> str:
        return f"{name}:{self.extra}"


class _Loop:
    def __init__(self) -> None:
        self.soon: list[Any] = []

    def call_soon(self, fn: Any) -> None:
        self.soon.append(fn)

    def run_soon(self) -> None:
        todo, self.soon = self.soon, []
        for fn in todo:
            fn()


def test_head_and_body_leave_in_one_write_and_the_flush_finds_nothing():
    t, loop = _Transport(), _Loop()
    w = _OneWrite(t, loop)
    w.write(b"HTTP/1.1 200 OK\r\n\r\n")
    assert t.writes == []
    w.write(b"body")
    assert t.writes == [b"HTTP/1.1 200 OK\r\n\r\nbody"]
    loop.run_soon()
    w.write(b"more")  # later writes of the cycle go straight through, in order
    assert t.writes == [b"HTTP/1.1 200 OK\r\n\r\nbody", b"more"]


def test_a_held_head_leaves_by_the_end_of_the_loop_pass_without_a_body():
    t, loop = _Transport(), _Loop()
    w = _OneWrite(t, loop)
    w.write(b"head")
    loop.run_soon()
    assert t.writes == [b"head"]
    w.write(b"body")
    assert t.writes == [b"head", b"body"]


def test_close_sends_what_is_held_first_and_a_closed_transport_gets_nothing():
    t, loop = _Transport(), _Loop()
    w = _OneWrite(t, loop)
    w.write(b"head")
    w.close()
    assert t.writes == [b"head"] and t.closed and w.is_closing()
    t2 = _Transport()
    w2 = _OneWrite(t2, loop)
    w2.write(b"head")
    t2.closed = True  # the client went away before the flush
    loop.run_soon()
    assert t2.writes == []


def test_empty_writes_and_other_attributes_pass_through():
    t, loop = _Transport(), _Loop()
    w = _OneWrite(t, loop)
    w.write(b"")
    assert loop.soon == [] and t.writes == [b""]
    w.write(b"head")
    w.write(b"")  # an empty body still carries the head out at once
    assert t.writes == [b"", b"head"]
    assert w.get_extra_info("peername") == "peername:sock"


def test_limited_httptools_answers_keep_alive_requests_whole_in_one_segment_or_split(tmp_path):
    """In-process uvicorn with the limited httptools class: two keep-alive requests on one connection get
    whole answers, whether the application sends the body at once or after awaiting (the held head is flushed
    then, before the body)."""
    pytest.importorskip("httptools")
    import threading
    import time

    import uvicorn

    from agentguard.server.protocol import HttpToolsLimited, Limits
    from agentguard.server.testing import free_port

    async def app(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await receive()
        body = b"split" if scope["path"] == "/split" else b"at-once"
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", str(len(body)).encode())]})
        if scope["path"] == "/split":
            for _ in range(3):
                await asyncio.sleep(0)
        await send({"type": "http.response.body", "body": body})

    port = free_port()
    cfg = uvicorn.Config(app, port=port, lifespan="off", log_level="warning", http=HttpToolsLimited)
    cfg.agentguard_limits = Limits()  # type: ignore[attr-defined]
    server = uvicorn.Server(cfg)
    th = threading.Thread(target=server.run, daemon=True)
    th.start()
    t0 = time.time()
    while not server.started and time.time() - t0 < 30:
        time.sleep(0.02)
    try:
        c = socket.create_connection(("127.0.0.1", port))
        c.settimeout(5)
        for path, body in (("/", b"at-once"), ("/split", b"split"), ("/", b"at-once")):
            c.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            got = b""
            while not got.endswith(body):
                chunk = c.recv(4096)
                assert chunk, got
                got += chunk
            assert got.startswith(b"HTTP/1.1 200 OK\r\n") and got.count(b"HTTP/1.1") == 1
            assert got.endswith(b"\r\ncontent-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        c.close()
    finally:
        server.should_exit = True
        th.join(10)
