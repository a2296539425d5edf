"""Test helpers: run the service in a background thread on a free loopback port."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from typing import Any, Iterator

__all__ = ["free_port", "serve_in_thread"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serve_in_thread(app: Any, port: int | None = None) -> Iterator[str]:
    """Serve ``app`` with uvicorn in a daemon thread; yields the base URL; stops on exit."""
    import uvicorn

    port = port or free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    t = threading.Thread(target=server.run, daemon=True)
    t.start()
    t0 = time.time()
    while not server.started:
        if time.time() - t0 > 30 or not t.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        t.join(timeout=10)
