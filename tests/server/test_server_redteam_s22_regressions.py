"""Session-22 red team: inputs tried against the real uvicorn server (the production protocol class of
:func:`agentguard.server.runner.uvicorn_config`) and the ASGI app that were already handled, kept as a regression list.

HTTP framing and headers as the server's parser reads them: a framing that two readers could read two ways (a signed,
hex or listed Content-Length, two Content-Lengths, two Transfer-Encodings, ``chunked, identity``, chunks ended by a
bare LF), a NUL in a header or the path, a space before a header's colon, raw UTF-8 in the path: 400 before anything
is decided. What is read one way only is decided as such (a header name in capitals, ``CHUNKED``, a chunk extension,
HTTP/1.0 without Host, an absolute URI, ``Expect: 100-continue``, two pipelined requests each decided once).

JSON as the service reads it: a NUL in any string or key of a check, step, signal or trace is stored and decided on
SQLite and PostgreSQL alike (no store error, /health stays ok); an integer of 5,000 digits is 400 (Python's limit on
integer text); numbers of any magnitude in arguments are read by the guards, never a 500.
"""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

pytest.importorskip("fastapi")
uvicorn = pytest.importorskip("uvicorn")

from svc_roles import AGENT, READER, credentials_file  # noqa: E402

TOOLS = '[[guards]]\ntype = "tool-rules"\nallow = ["read*"]\ndeny = ["rm*"]\n'


@pytest.fixture(scope="module")
def port(tmp_path_factory):
    from agentguard.server.app import create_app
    from agentguard.server.runner import uvicorn_config
    from agentguard.server.settings import ServerSettings
    from agentguard.server.testing import free_port

    tmp = tmp_path_factory.mktemp("s22reg")
    (tmp / "tools.toml").write_text(TOOLS)
    p = free_port()
    s = ServerSettings(state_dir=str(tmp), tool_guards=str(tmp / "tools.toml"), port=p, header_timeout_s=3,
                       credentials_file=str(credentials_file(tmp, (AGENT, READER))))
    cfg = uvicorn_config(s, create_app(s))
    cfg.lifespan = "on"
    srv = uvicorn.Server(cfg)
    t = threading.Thread(target=srv.run, daemon=True)
    t.start()
    t0 = time.time()
    while not srv.started and time.time() - t0 < 30:
        time.sleep(0.05)
    yield p
    srv.should_exit = True
    t.join(timeout=10)


def _raw(port: int, data: bytes) -> bytes:
    c = socket.create_connection(("127.0.0.1", port))
    c.settimeout(3)
    c.sendall(data)
    out = b""
    try:
        while chunk := c.recv(65536):
            out += chunk
    except socket.timeout:
        pass
    c.close()
    return out


A = f"Authorization: Bearer {AGENT.token}\r\n".encode()
B = json.dumps({"run_id": "h1", "tool_call": {"name": "rm_all"}}).encode()
R = json.dumps({"run_id": "h2", "tool_call": {"name": "read_x"}}).encode()
HEAD = b"POST /v1/check HTTP/1.1\r\nHost: t\r\n"
CLOSE = b"Connection: close\r\n\r\n"


def _cl(v: bytes) -> bytes:
    return HEAD + A + b"Content-Length: " + v + b"\r\n" + CLOSE + B


def _chunked(te: bytes, sep: bytes = b"\r\n", ext: bytes = b"") -> bytes:
    return HEAD + A + te + CLOSE + b"%x" % len(B) + ext + sep + B + sep + b"0" + sep + sep


REFUSED = {
    "cl-plus": _cl(b"+%d" % len(B)),
    "cl-hex": _cl(b"0x%x" % len(B)),
    "cl-list": _cl(b"%d, %d" % (len(B), len(B))),
    "cl-twice-same": HEAD + A + b"Content-Length: %d\r\nContent-Length: %d\r\n" % (len(B), len(B)) + CLOSE + B,
    "te-chunked-identity": _chunked(b"Transfer-Encoding: chunked, identity\r\n"),
    "te-twice": _chunked(b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"),
    "chunk-bare-lf": _chunked(b"Transfer-Encoding: chunked\r\n", sep=b"\n"),
    "nul-in-authorization": HEAD + b"Authorization: Bearer " + AGENT.token.encode() + b"\x00\r\nContent-Length: %d\r\n"
    % len(B) + CLOSE + B,
    "space-before-colon": HEAD + b"Authorization : Bearer " + AGENT.token.encode() + b"\r\nContent-Length: %d\r\n"
    % len(B) + CLOSE + B,
    "nul-in-path": b"POST /v1/runs/a\x00b/steps HTTP/1.1\r\nHost: t\r\n" + A + b"Content-Length: 2\r\n" + CLOSE + b"{}",
    "utf8-in-path": "POST /v1/runs/é/steps HTTP/1.1\r\nHost: t\r\n".encode() + A + b"Content-Length: 2\r\n" + CLOSE + b"{}",
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_regression_ambiguous_or_malformed_framing_is_400_before_any_decision(port, name):
    out = _raw(port, REFUSED[name])
    assert out.startswith(b"HTTP/1.1 400"), out[:200]
    assert b'"decision"' not in out


DECIDED = {  # name: (request, decisions expected in order)
    "header-name-in-capitals": (HEAD + b"AUTHORIZATION: bearer " + AGENT.token.encode() + b"\r\nContent-Length: %d\r\n"
                                % len(B) + CLOSE + B, [b"REJECT"]),
    "te-in-capitals": (_chunked(b"Transfer-Encoding: CHUNKED\r\n"), [b"REJECT"]),
    "chunk-extension": (_chunked(b"Transfer-Encoding: chunked\r\n", ext=b";ext=1"), [b"REJECT"]),
    "http10-no-host": (b"POST /v1/check HTTP/1.0\r\n" + A + b"Content-Length: %d\r\n\r\n" % len(B) + B, [b"REJECT"]),
    "absolute-uri": (b"POST http://evil/v1/check HTTP/1.1\r\nHost: t\r\n" + A + b"Content-Length: %d\r\n" % len(B)
                     + CLOSE + B, [b"REJECT"]),
    "expect-100": (HEAD + A + b"Expect: 100-continue\r\nContent-Length: %d\r\n" % len(B) + CLOSE + B, [b"REJECT"]),
    "pipelined": (HEAD + A + b"Content-Length: %d\r\n\r\n" % len(B) + B + HEAD + A + b"Content-Length: %d\r\n" % len(R)
                  + CLOSE + R, [b"REJECT", b"ALLOW"]),
}


@pytest.mark.parametrize("name", sorted(DECIDED))
def test_regression_what_is_read_one_way_is_decided_once_as_read(port, name):
    data, want = DECIDED[name]
    out = _raw(port, data)
    answers = out.split(b'{"decision_id":')[1:]  # one per decided request; its first "decision" is the answer's
    got = [a.split(b'"decision":', 1)[1].split(b",")[0].strip(b'"') for a in answers]
    assert got == want, out[-300:]


def test_regression_nul_and_big_numbers_are_stored_and_decided(tmp_path, store_url):
    from fastapi.testclient import TestClient

    from agentguard.server.app import create_app
    from agentguard.server.settings import ServerSettings

    (tmp_path / "tools.toml").write_text('[[guards]]\ntype = "tool-rules"\nallow = ["*"]\n')
    app = create_app(ServerSettings(state_dir=str(tmp_path), db_url=store_url, tool_guards=str(tmp_path / "tools.toml")))
    with TestClient(app, raise_server_exceptions=False) as c:
        for i, body in enumerate([
            {"tool_call": {"name": "x\u0000", "call_id": "\u0000", "arguments": {"\u0000": "a\u0000b"}},
             "metadata": {"k\u0000": "\u0000"}},
            {"tool_call": {"name": "x", "arguments": {"n": 10**40, "m": -0.0, "t": 5e-324, "h": 1e308}}},
        ]):
            r = c.post("/v1/check", json={"run_id": f"n{i}", **body})
            assert r.status_code == 200 and r.json()["decision"] == "ALLOW", r.text
        for step in ({"state": "a\u0000", "observation": {"\u0000": "\u0000"}, "output": "\u0000"}, {"time": 1e308}):
            assert c.post("/v1/runs/s1/steps", json=step).status_code == 200
        r = c.post("/v1/traces", json={"traces": [{"run_id": "t1", "labels": {"\u0000": "\u0000"},
                                                   "steps": [{"state": "\u0000"}]}]})
        assert r.status_code == 200, r.text
        raw = b'{"run_id":"big","tool_call":{"name":"x","arguments":{"n":' + b"9" * 5000 + b"}}}"
        assert c.post("/v1/check", content=raw).status_code == 400
        assert c.get("/health").json()["status"] == "ok"
