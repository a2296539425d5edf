"""Units of the service hardening: strict request JSON, limit settings, the documented [server] table,
the connection cap under the open-file limit, the worker recipe without secrets."""

from __future__ import annotations

import json
import re
import resource
from pathlib import Path

import pytest

from agentguard.core.errors import InputError
from agentguard.server.jsonutil import MAX_DEPTH, RequestJSONError, loads_request
from agentguard.server.settings import ServerSettings, load_settings

DOC = Path(__file__).resolve().parents[2] / "docs" / "server.md"


@pytest.mark.parametrize("raw, fragment", [
    (b'{"a": 1, "a": 2}', "duplicate key 'a'"),
    (b'{"x": {"command": "rm -rf /", "command": "ls"}}', "duplicate key 'command'"),
    (b'[{"k": 1}, {"k": 1, "j": 2, "k": 3}]', "duplicate key 'k'"),
    (b'{"s": NaN}', "NaN"), (b'{"s": -Infinity}', "Infinity"),
    (b"\xff{}", "not UTF-8"),
    (b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1), "nested deeper"),
    (b'{"a": ' * 5000 + b"1" + b"}" * 5000, "nested deeper"),
    (b'{"a": 1', "Expecting"),
])
def test_loads_request_refuses(raw, fragment):
    with pytest.raises(RequestJSONError, match=re.escape(fragment)):
        loads_request(raw)


def test_loads_request_accepts_what_is_fine():
    deep_ok = b"[" * MAX_DEPTH + b"]" * MAX_DEPTH
    assert loads_request(deep_ok) is not None
    brackets_in_strings = json.dumps({"k": "[" * 500, "k2": "{" * 500}).encode()  # not nesting
    assert loads_request(brackets_in_strings)["k"] == "[" * 500
    assert loads_request(b'{"a": {"a": 1}, "b": [{"a": 2}, {"a": 3}]}') == {"a": {"a": 1}, "b": [{"a": 2}, {"a": 3}]}
    assert loads_request(b'{"big": 1e300}')["big"] == 1e300
    with pytest.raises(RequestJSONError, match="out of range"):  # overflows to inf: refused (issue 28)
        loads_request(b'{"big": 1e400}')


@pytest.mark.parametrize("key, value", [("header_timeout_s", 0), ("keep_alive_s", -1), ("body_timeout_s", 1e9),
                                        ("max_connections", 1), ("max_concurrency", 0), ("max_header_bytes", 10),
                                        ("header_timeout_s", "10")])
def test_limit_settings_are_checked(key, value):
    with pytest.raises(InputError, match=key):
        ServerSettings(**{key: value})


def test_documented_server_table_loads(tmp_path):
    """The [server] example in docs/server.md is accepted as written (every documented key exists)."""
    block = next(b for b in re.findall(r"```toml\n(.*?)```", DOC.read_text(), re.S) if "[server]" in b)
    (tmp_path / "token").write_text("a-long-enough-token\n")
    text = block.replace('"/run/secrets/agentguard-token"', '"token"').replace(
        'db_url = "postgresql+psycopg://agentguard:…@db.internal/agentguard"', "")
    cfg = tmp_path / "server.toml"
    cfg.write_text(text)
    s = load_settings(cfg)
    assert (s.keep_alive_s, s.header_timeout_s, s.body_timeout_s, s.max_header_bytes, s.max_connections,
            s.max_concurrency, s.graceful_shutdown_s) == (5, 10, 30, 16384, 4096, 512, 10)
    d = ServerSettings()
    assert (d.keep_alive_s, d.header_timeout_s, d.max_connections, d.max_concurrency) == (5, 10, 4096, 512)


def test_connection_cap_stays_under_the_open_file_limit():
    from agentguard.server.protocol import RESERVED_FDS, Limits

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    cap = Limits(max_connections=10_000_000).connection_cap()
    assert cap <= max(16, soft - RESERVED_FDS) or soft == resource.RLIM_INFINITY
    assert Limits(max_connections=20).connection_cap() <= 20


def test_uvicorn_config_carries_the_limits(tmp_path):
    pytest.importorskip("uvicorn")
    from agentguard.server.protocol import H11Limited, HttpToolsLimited
    from agentguard.server.runner import uvicorn_config

    s = ServerSettings(token="t" * 12, state_dir=str(tmp_path), header_timeout_s=3, keep_alive_s=2,
                       max_connections=77, max_header_bytes=4096)
    cfg = uvicorn_config(s)
    assert cfg.http in (H11Limited, HttpToolsLimited)
    assert cfg.timeout_keep_alive == 2 and cfg.h11_max_incomplete_event_size == 4096
    assert cfg.agentguard_limits.header_timeout_s == 3 and cfg.agentguard_limits.max_connections == 77
    import pickle

    assert pickle.loads(pickle.dumps(cfg.agentguard_limits)) == cfg.agentguard_limits  # travels to workers


def test_worker_settings_come_from_the_recipe_and_secrets_leave_the_environment(tmp_path, monkeypatch):
    from agentguard.server import runner

    (tmp_path / "tok").write_text("file-token-123456\n")
    cfg = tmp_path / "s.toml"
    cfg.write_text(f'[server]\ntoken_file = "tok"\ndb_url = "sqlite:///{tmp_path}/secret-db.sqlite"\n')
    monkeypatch.setenv(runner.RECIPE_ENV, json.dumps({"config": str(cfg), "overrides": {"port": 9999}}))
    monkeypatch.setenv("AGENTGUARD_DB_URL", f"sqlite:///{tmp_path}/env-db.sqlite")
    monkeypatch.delenv(runner.MASTER_ENV, raising=False)
    import os

    s = runner.worker_settings()
    assert s.token == "file-token-123456" and s.port == 9999 and "env-db" in s.db_url
    assert "AGENTGUARD_DB_URL" not in os.environ and "file-token" not in json.dumps(dict(os.environ))


@pytest.mark.parametrize("proto", ["H11Limited", "HttpToolsLimited"])
def test_both_protocols_close_a_silent_connection_and_still_serve(tmp_path, proto):
    """In-process uvicorn with each limited protocol: a connection that sends nothing (or only part of
    its headers) is closed after header_timeout_s; a whole request is answered."""
    pytest.importorskip("uvicorn")
    import socket
    import threading
    import time

    import uvicorn

    from agentguard.server import protocol
    from agentguard.server.app import create_app
    from agentguard.server.runner import uvicorn_config
    from agentguard.server.testing import free_port

    if getattr(protocol, proto) is None:
        pytest.skip(f"{proto} needs httptools")
    port = free_port()
    s = ServerSettings(token="t" * 12, state_dir=str(tmp_path), port=port, header_timeout_s=1, keep_alive_s=1)
    cfg = uvicorn_config(s, app=create_app(s))
    cfg.http = getattr(protocol, proto)
    server = uvicorn.Server(cfg)
    th = threading.Thread(target=server.run, daemon=True)
    th.start()
    t0 = time.time()
    while not server.started and time.time() - t0 < 30:
        time.sleep(0.02)
    try:
        silent = socket.create_connection(("127.0.0.1", port))
        partial = socket.create_connection(("127.0.0.1", port))
        partial.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        whole = socket.create_connection(("127.0.0.1", port))
        whole.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        whole.settimeout(5)
        assert whole.recv(100).startswith(b"HTTP/1.1 200")
        t0 = time.monotonic()
        for c in (silent, partial):
            c.settimeout(5)
            try:
                assert c.recv(100) == b""
            except ConnectionResetError:
                pass
        assert time.monotonic() - t0 < 2.5
        for c in (silent, partial, whole):
            c.close()
    finally:
        server.should_exit = True
        th.join(10)
