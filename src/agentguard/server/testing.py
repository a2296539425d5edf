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


def postgres_test_url(repo: str | None = None) -> tuple[str | None, str | None]:
    """``(url, None)`` for the test PostgreSQL server, or ``(None, why not)``.

    The URL comes from ``AGENTGUARD_TEST_PG_URL`` or the ``.cache/pg_url`` file written by
    ``scripts/setup_postgres.sh``; it is checked with a real connection.
    """
    import os
    from pathlib import Path

    url = os.environ.get("AGENTGUARD_TEST_PG_URL")
    f = Path(repo or Path(__file__).resolve().parents[3]) / ".cache" / "pg_url"
    if not url and f.exists():
        url = f.read_text().strip()
    if not url:
        return None, "no PostgreSQL URL (.cache/pg_url is written by scripts/setup_postgres.sh)"
    import sqlalchemy as sa

    try:
        eng = sa.create_engine(url, connect_args={"connect_timeout": 5})
        with eng.connect() as c:
            c.execute(sa.text("select 1"))
        eng.dispose()
    except Exception as exc:
        return None, (f"PostgreSQL at {sa.engine.make_url(url).render_as_string(hide_password=True)} "
                      f"unreachable: {type(exc).__name__}")
    return url, None


def reset_postgres(url: str) -> None:
    """Drop the audit tables (and Alembic's version table) so a test starts from an empty database."""
    import sqlalchemy as sa

    from .schema import metadata

    eng = sa.create_engine(url)
    with eng.begin() as c:
        for t in [*reversed(metadata.sorted_tables), "alembic_version"]:  # every table of the schema
            c.execute(sa.text(f"DROP TABLE IF EXISTS {getattr(t, 'name', t)}"))
    eng.dispose()
