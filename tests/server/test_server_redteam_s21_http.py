"""Session-21 red team of the guard service over real HTTP: uvicorn with the service's own limited protocols
(``HttpToolsLimited`` and ``H11Limited``, as ``agentguard serve`` runs them), an attacker with the agent's
credential or none.

Hole found (fixed; availability, fail closed): the header-size limit (:mod:`agentguard.server.protocol`) counted
every byte that arrived before the parser reported the end of the headers, the body bytes of the same read
included. A request whose headers and more than ``max_header_bytes`` (16 KiB) of body arrived in one read (any
POST over 16 KiB sent in one segment, most trace uploads) was closed without an answer; found when a burst of
100 KB checks against ``agentguard serve`` lost 2 of every 3 answers (RemoteProtocolError). Now the headers are
counted up to the blank line that ends them (found across reads); a request whose headers are longer than the
limit is still closed, however its bytes are split.

Tried and refused (a regression list): a UTF-8 BOM, UTF-16 (with and without ``charset=utf-16``), latin-1 and
overlong UTF-8 bytes, a gzip body (with and without ``Content-Encoding: gzip``: never decompressed), NUL or a
second document after the JSON, a no-break space as whitespace, a tool name repeated as a key, spelled with other
case, full-width letters, a zero-width space, a space or a newline (never the allowed tool), another method on
``/v1/check`` (HEAD/GET need the reader role; OPTIONS, PUT, PATCH, DELETE, TRACE, PROPFIND: 405), path spellings
of ``/v1/check`` (``/v1/check/``, ``//v1/check``, ``/v1//check``, ``/V1/check``, ``/v1/check%2f``, ``/v1/check;``),
``/static/`` traversal spellings without a credential, a body sent one byte per chunk (decided as the whole).
"""

from __future__ import annotations

import gzip
import socket
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from svc_roles import AGENT, credentials_file  # noqa: E402

MAX_HEADER = 16_384


@pytest.fixture(scope="module", params=["HttpToolsLimited", "H11Limited"])
def served(request, tmp_path_factory):
    import uvicorn

    from agentguard.server import protocol
    from agentguard.server.app import create_app
    from agentguard.server.runner import uvicorn_config
    from agentguard.server.settings import ServerSettings
    from agentguard.server.testing import free_port

    if getattr(protocol, request.param) is None:
        pytest.skip(f"{request.param} needs httptools")
    tmp = tmp_path_factory.mktemp("s21http")
    (tmp / "tools.toml").write_text('[[guards]]\ntype = "tool-rules"\nallow = ["read_file"]\ndeny = ["rm_*"]\n')
    port = free_port()
    s = ServerSettings(state_dir=str(tmp), port=port, tool_guards=str(tmp / "tools.toml"),
                       max_header_bytes=MAX_HEADER, credentials_file=str(credentials_file(tmp, (AGENT,))))
    app = create_app(s)
    cfg = uvicorn_config(s, app=app)
    cfg.http = getattr(protocol, request.param)
    server = uvicorn.Server(cfg)
    th = threading.Thread(target=server.run, daemon=True)
    th.start()
    t0 = time.time()
    while not server.started and time.time() - t0 < 30:
        time.sleep(0.02)
    try:
        yield port, app.state.store
    finally:
        server.should_exit = True
        th.join(timeout=10)


def send(port: int, pieces: list[bytes], timeout: float = 5.0) -> bytes:
    """Send ``pieces`` on a fresh connection (each its own write, Nagle off); everything read until close."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for p in pieces:
            try:
                s.sendall(p)
            except (BrokenPipeError, ConnectionResetError):  # closed by the server (headers over the limit)
                break
            if len(pieces) > 1:
                time.sleep(0.002)
        out = b""
        try:
            while chunk := s.recv(65536):
                out += chunk
        except (socket.timeout, ConnectionResetError):
            pass
    return out


def request(body: bytes, path: str = "/v1/check", method: str = "POST", extra: bytes = b"",
            auth: bool = True) -> bytes:
    head = (f"{method} {path} HTTP/1.1\r\nHost: t\r\n".encode()
            + (f"Authorization: Bearer {AGENT.token}\r\n".encode() if auth else b"") + extra
            + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode())
    return head + body


def check_body(name: str = "read_file", pad: int = 0) -> bytes:
    return (b'{"run_id":"a","tool_call":{"name":"' + name.encode() + b'","arguments":{"pad":"' + b"x" * pad + b'"}}}')


def status(out: bytes) -> int | None:
    return int(out.split(b" ", 2)[1]) if out.startswith(b"HTTP/1.1 ") else None


@pytest.mark.parametrize("pad", [17_000, 40_000, 200_000])
def test_a_large_body_in_the_same_read_as_the_headers_is_answered(served, pad):
    port, _store = served
    out = send(port, [request(check_body(pad=pad))])
    assert status(out) == 200 and b'"decision":"ALLOW"' in out, out[:200]


def test_headers_longer_than_the_limit_are_still_closed_whatever_follows(served):
    port, store = served
    before = store.count()
    long = b"X-Pad: " + b"a" * (MAX_HEADER + 10) + b"\r\n"
    for pieces in ([request(check_body(), extra=long)],  # one read: headers, terminator and body
                   [request(check_body(), extra=long)[:9000], request(check_body(), extra=long)[9000:]]):
        assert status(send(port, pieces)) in (None, 400, 431)
    assert store.count() == before  # nothing decided


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pad=st.integers(0, 60_000), header_pad=st.integers(0, 8_000), cuts=st.lists(st.floats(0, 1), max_size=4))
def test_property_a_request_within_the_header_limit_is_answered_however_it_is_split(served, pad, header_pad, cuts):
    port, _store = served
    data = request(check_body(pad=pad), extra=b"X-Pad: " + b"b" * header_pad + b"\r\n")
    points = sorted({int(c * len(data)) for c in cuts} - {0, len(data)})
    pieces = [data[a:b] for a, b in zip([0, *points], [*points, len(data)])]
    out = send(port, pieces)
    assert status(out) == 200 and b'"decision":"ALLOW"' in out, (pad, header_pad, points, out[:200])


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(over=st.integers(1, 4_000), pad=st.integers(0, 30_000), cuts=st.lists(st.floats(0, 1), max_size=3))
def test_property_headers_over_the_limit_are_never_decided_however_they_are_split(served, over, pad, cuts):
    port, store = served
    before = store.count()
    data = request(check_body(pad=pad), extra=b"X-Pad: " + b"c" * (MAX_HEADER + over) + b"\r\n")
    points = sorted({int(c * len(data)) for c in cuts} - {0, len(data)})
    pieces = [data[a:b] for a, b in zip([0, *points], [*points, len(data)])]
    assert status(send(port, pieces)) in (None, 400, 431)
    assert store.count() == before


DENY = check_body("rm_all")
REFUSED_BODIES = [
    ("bom", b"\xef\xbb\xbf" + DENY, b""),
    ("utf16", DENY.decode().encode("utf-16"), b""),
    ("utf16-charset", DENY.decode().encode("utf-16-le"), b"Content-Type: application/json; charset=utf-16\r\n"),
    ("gzip", gzip.compress(DENY), b""),
    ("gzip-encoded", gzip.compress(check_body()), b"Content-Encoding: gzip\r\n"),
    ("latin1", b'{"run_id":"a","tool_call":{"name":"read_\xe9","arguments":{}}}', b""),
    ("overlong", b'{"run_id":"a","tool_call":{"name":"read_file\xc0\xaf","arguments":{}}}', b""),
    ("nul-after", check_body() + b"\x00", b""),
    ("second-document", check_body() + DENY, b""),
    ("nbsp", b'{\xc2\xa0"run_id":"a","tool_call":{"name":"read_file","arguments":{}}}', b""),
    ("repeated-name", b'{"run_id":"a","tool_call":{"name":"rm_all","name":"read_file","arguments":{}}}', b""),
]


@pytest.mark.parametrize("name,body,extra", REFUSED_BODIES, ids=[r[0] for r in REFUSED_BODIES])
def test_regression_bodies_read_two_ways_are_refused(served, name, body, extra):
    port, _store = served
    out = send(port, [request(body, extra=extra)])
    assert status(out) == 400 and b'"decision"' not in out, out[:200]


@pytest.mark.parametrize("name", ["READ_FILE", "read_ｆile", "read_file\u200b", "read_file ", " read_file",
                                  "read_file\\nrm_all", "read_file\\u0000", "rm_all"])
def test_regression_no_other_spelling_of_a_tool_name_is_allowed(served, name):
    port, _store = served
    out = send(port, [request(check_body(name))])
    assert status(out) == 200 and b'"decision":"REJECT"' in out, out[:200]


@pytest.mark.parametrize("method,path,want", [
    ("HEAD", "/v1/check", 403), ("GET", "/v1/check", 403), ("OPTIONS", "/v1/check", 405),
    ("PUT", "/v1/check", 405), ("PATCH", "/v1/check", 405), ("DELETE", "/v1/check", 405),
    ("PROPFIND", "/v1/check", 405), ("POST", "/v1/check/", 403), ("POST", "//v1/check", 403),
    ("POST", "/v1//check", 403), ("POST", "/V1/check", 403), ("POST", "/v1/check%2f", 403),
    ("POST", "/v1/check;", 403),
])
def test_regression_no_decision_through_another_method_or_path(served, method, path, want):
    port, store = served
    before = store.count()
    out = send(port, [request(DENY, path=path, method=method)])
    assert status(out) == want, out[:200]
    assert store.count() == before


@pytest.mark.parametrize("path", ["/static/../v1/decisions", "/static/%2e%2e/v1/decisions",
                                  "/static/..%2f..%2fapp.py", "/metrics", "/v1/runs", "/v1/model"])
def test_regression_nothing_without_a_credential(served, path):
    port, _store = served
    out = send(port, [request(b"", path=path, method="GET", auth=False)])
    assert status(out) in (401, 404), out[:200]


def test_regression_a_body_one_byte_per_chunk_is_decided_as_the_whole(served):
    port, _store = served
    body = DENY
    head = (f"POST /v1/check HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {AGENT.token}\r\n"
            "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n").encode()
    chunks = b"".join(b"1\r\n" + body[i:i + 1] + b"\r\n" for i in range(len(body))) + b"0\r\n\r\n"
    out = send(port, [head, chunks[: len(chunks) // 2], chunks[len(chunks) // 2:]])
    assert status(out) == 200 and b'"decision":"REJECT"' in out, out[:200]


class _Counter:
    """The header count of :class:`agentguard.server.protocol._Guarded` alone, fed reads by hand."""

    def __init__(self, limit: int) -> None:
        from agentguard.server.protocol import Limits

        self._ag_limits = Limits(max_header_bytes=limit)
        self._ag_timer: object | None = object()
        self._ag_bytes, self._ag_tail, self._ag_done, self.closed = 0, b"", False, False

    def _ag_stop(self) -> None:
        self._ag_timer = None

    def _ag_close(self) -> None:
        self.closed = True


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(st.text("abcXYZ:- \r", min_size=0, max_size=40).map(lambda t: t.replace("\r", "")), max_size=8),
       body=st.binary(max_size=300) | st.sampled_from([b"\r\n\r\n", b"\n\r\n\r\n\r", b"x" * 400]),
       limit=st.integers(16, 400), cuts=st.lists(st.integers(0, 1000), max_size=6))
def test_property_the_header_count_is_the_headers_length_however_the_reads_are_cut(lines, body, limit, cuts):
    from agentguard.server.protocol import _Guarded

    head = ("GET / HTTP/1.1\r\n" + "".join(f"X-{ln}\r\n" for ln in lines) + "\r\n").encode()
    data = head + body
    points = sorted({c % (len(data) + 1) for c in cuts})
    c = _Counter(limit)
    for a, b in zip([0, *points], [*points, len(data)]):
        if a < b and c._ag_timer is not None and not c.closed:
            _Guarded._ag_data(c, data[a:b])  # type: ignore[arg-type]
    assert c.closed == (len(head) > limit), (len(head), limit, points)
