"""The session-18 red team of the guard service over real HTTP (uvicorn, each protocol the service runs:
``HttpToolsLimited`` and ``H11Limited``), as an attacker with the agent's credential or none.

One hole, fixed (:func:`agentguard.server.guards.valid_run_id`): a run id in the path was checked with
``re.match`` and ``...$``, and Python's ``$`` also matches before a final newline, so
``POST /v1/runs/r1%0A/signals`` was decided for the run ``"r1\\n"`` that every body (``run_id`` in pydantic,
whose ``$`` is the end of the text) refuses. Two readers of one run id now use one grammar, matched whole.

The rest was already refused and stays here as a regression list: request smuggling (Content-Length with
Transfer-Encoding, two Content-Lengths, an unknown Transfer-Encoding; an obsolete folded header changes no
credential), the token in
the query string, two Authorization headers, another scheme, a tab after ``Bearer``, path spellings of
``/v1/approvals`` (trailing slash, ``//``, ``/./``, case, ``;``, ``%00``, dot segments, absolute form, an
encoded ``/`` in a run id) and of a public prefix (``/static/../v1/decisions``), a method-override header,
a CORS preflight and HEAD without a token.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import example, given, settings, strategies as st

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from agentguard.server.guards import valid_run_id  # noqa: E402
from agentguard.server.models import CheckRequest  # noqa: E402
from agentguard.server.settings import ServerSettings  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from svc_roles import AGENT, APPROVER, READER, credentials_file  # noqa: E402

BODY = b'{"run_id":"a","tool_call":{"name":"read_file","arguments":{"path":"notes.txt"}}}'


@pytest.fixture(scope="module", params=["HttpToolsLimited", "H11Limited"])
def base(request, tmp_path_factory):
    import uvicorn

    from agentguard.server import protocol
    from agentguard.server.app import create_app
    from agentguard.server.runner import uvicorn_config
    from agentguard.server.testing import free_port

    if getattr(protocol, request.param) is None:
        pytest.skip(f"{request.param} needs httptools")
    tmp = tmp_path_factory.mktemp("svc")
    (tmp / "tools.toml").write_text('[[guards]]\ntype = "tool-rules"\nallow = ["read_file", "transfer_*"]\n'
                                    'escalate = ["transfer_*"]\n')
    port = free_port()
    s = ServerSettings(state_dir=str(tmp), port=port, tool_guards=str(tmp / "tools.toml"),
                       credentials_file=str(credentials_file(tmp, (AGENT, APPROVER, READER))))
    cfg = uvicorn_config(s, app=create_app(s))
    cfg.http = getattr(protocol, request.param)
    server = uvicorn.Server(cfg)
    th = threading.Thread(target=server.run, daemon=True)
    th.start()
    t0 = time.time()
    while not server.started and time.time() - t0 < 30:
        time.sleep(0.02)
    try:
        yield port
    finally:
        server.should_exit = True
        th.join(timeout=10)


def raw(port: int, data: bytes, timeout: float = 5.0) -> tuple[int, bytes]:
    """Send ``data`` on a fresh connection; (status of the first response, everything read until close or
    ``timeout`` seconds of silence)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        out = b""
        try:
            while chunk := s.recv(65536):
                out += chunk
        except socket.timeout:
            pass
    return int(out.split(b" ", 2)[1]), out


def req(port: int, method: str, path: str, headers: bytes = b"", body: bytes = b"") -> tuple[int, bytes]:
    return raw(port, f"{method} {path} HTTP/1.1\r\nHost: t\r\n".encode() + headers
               + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)


AUTH = f"Authorization: Bearer {AGENT.token}\r\n".encode()


def test_a_run_id_with_a_final_newline_is_refused_in_the_path(base):
    for rid in ("r1%0A", "r1%0a", "r1%0D%0A", "r1%00", "%0Ar1"):
        code, out = req(base, "POST", f"/v1/runs/{rid}/signals", AUTH, b'{"signals":{"score":0.9}}')
        assert code == 400 and b"invalid run id" in out, (rid, out[-200:])
        code, out = req(base, "POST", f"/v1/runs/{rid}/steps", AUTH, b'{"state":1}')
        assert code == 400, (rid, out[-200:])
    code, _ = req(base, "POST", "/v1/runs/r1/signals", AUTH, b'{"signals":{"score":0.9}}')
    assert code == 200


_RUN_CHARS = st.sampled_from("aZ09_.:-")
_ODD = st.sampled_from(["", "\n", "\r\n", "\r", "\x00", " ", "\t", "/", "\u00e9", "\u212a", "\u2028", "\n\n"])


@settings(max_examples=300, deadline=None)
@given(st.builds(lambda pre, core, post: pre + core + post, _ODD, st.text(alphabet=_RUN_CHARS, max_size=130), _ODD)
       | st.text(max_size=140))
@example("r1\n")
def test_property_the_path_and_the_body_read_a_run_id_alike(run_id):
    from pydantic import ValidationError

    try:
        CheckRequest.model_validate({"run_id": run_id, "tool_call": {"name": "x"}})
        body_ok = True
    except ValidationError:
        body_ok = False
    assert valid_run_id(run_id) == body_ok, ascii(run_id)


SMUGGLING = [
    b"POST /v1/check HTTP/1.1\r\nHost: t\r\n" + AUTH + b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"0\r\n\r\nGET /v1/decisions HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    b"POST /v1/check HTTP/1.1\r\nHost: t\r\n" + AUTH + b"Content-Length: 3\r\nContent-Length: "
    + str(len(BODY)).encode() + b"\r\nConnection: close\r\n\r\n" + BODY,
    b"POST /v1/check HTTP/1.1\r\nHost: t\r\n" + AUTH + b"Transfer-Encoding: xchunked\r\nContent-Length: "
    + str(len(BODY)).encode() + b"\r\nConnection: close\r\n\r\n" + BODY,
]


@pytest.mark.parametrize("data", SMUGGLING, ids=["cl-te", "two-cl", "unknown-te"])
def test_smuggling_and_ambiguous_framing_are_refused(base, data):
    code, out = raw(base, data)
    assert code in (400, 401, 501), out[:300]
    assert out.count(b"HTTP/1.1 200") == 0 and b'"decision"' not in out


@pytest.mark.parametrize("method,path,headers,expect", [
    ("POST", f"/v1/check?access_token={AGENT.token}", b"", 401),
    ("POST", "/v1/check", AUTH + f"Authorization: Bearer {APPROVER.token}\r\n".encode(), 401),
    ("POST", "/v1/check", f"Authorization: Basic {AGENT.token}\r\n".encode(), 401),
    ("POST", "/v1/check", f"Authorization: Bearer\t{AGENT.token}\r\n".encode(), 401),
    ("POST", "/v1/check", f"Authorization: Token {AGENT.token}\r\n".encode(), 401),
    ("POST", "/v1/check", f"X-Api-Key: {AGENT.token}\r\n".encode(), 401),
    ("POST", "/v1/approvals", AUTH, 403),
    ("POST", "/v1/approvals/", AUTH, 403),
    ("POST", "//v1/approvals", AUTH, 403),
    ("POST", "/v1/./approvals", AUTH, 403),
    ("POST", "/V1/approvals", AUTH, 403),
    ("POST", "/v1/approvals;x", AUTH, 403),
    ("POST", "/v1/approvals%00", AUTH, 403),
    ("POST", "/v1/runs/a/steps/../../../approvals", AUTH, 403),
    ("POST", "http://t/v1/approvals", AUTH, 403),
    ("POST", "/v1/runs/..%2f..%2fapprovals/steps", AUTH, 404),
    ("POST", "/v1/decisions", AUTH + b"X-HTTP-Method-Override: GET\r\n", 403),
    ("GET", "/v1/decisions", AUTH, 403),
    ("GET", "/static/../v1/decisions", b"", 404),
    ("GET", "/static/%2e%2e/v1/decisions", b"", 404),
    ("GET", "/static/..%2fv1/decisions", b"", 404),
    ("GET", "/dashboard/../v1/decisions", b"", 401),
    ("GET", "/health/../v1/decisions", b"", 401),
    ("HEAD", "/v1/decisions", b"", 401),
    ("OPTIONS", "/v1/check", b"Origin: http://evil.example\r\nAccess-Control-Request-Method: POST\r\n", 401),
])
def test_regression_refused_requests(base, method, path, headers, expect):
    code, out = req(base, method, path, headers, BODY if method == "POST" else b"")
    assert code == expect, out[-300:]
    assert b'"decision"' not in out and b"access-control-allow" not in out.lower()


def test_a_folded_header_changes_no_credential(base):
    """An obsolete line folding (RFC 9112 section 5.2): httptools refuses it (400), h11 joins the lines with a
    space (what the RFC allows). Either way the credential is the one the joined value names: a folded second
    Authorization is one invalid token, and the agent's own token folded still cannot approve."""
    def folded(path: bytes, auth: bytes) -> tuple[int, bytes]:
        return raw(base, b"POST " + path + b" HTTP/1.1\r\nHost: t\r\nAuthorization: " + auth + b"\r\nContent-Length: "
                   + str(len(BODY)).encode() + b"\r\nConnection: close\r\n\r\n" + BODY)

    code, _ = folded(b"/v1/check", b"Bearer " + AGENT.token.encode() + b"\r\n Authorization: Bearer "
                     + APPROVER.token.encode())
    assert code in (400, 401)
    code, _ = folded(b"/v1/approvals", b"Bearer\r\n " + AGENT.token.encode())
    assert code in (400, 403)
    code, out = folded(b"/v1/check", b"Bearer\r\n " + AGENT.token.encode())
    assert code == 400 or (code == 200 and b'"decision":"ALLOW"' in out)  # h11: the agent, as itself


@pytest.mark.parametrize("auth", [b"", f"Authorization: Bearer {READER.token}\r\n".encode()], ids=["401", "403"])
def test_the_unread_body_of_a_refused_request_is_never_read_as_the_next_request(base, auth):
    """The gate answers 401/403 without reading the body; the server must skip it (Content-Length) rather than
    parse it as a second request on the connection (a desync a shared front proxy would turn into smuggling)."""
    inner = f"GET /v1/decisions HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {READER.token}\r\n\r\n".encode()
    _code, out = raw(base, b"POST /v1/check HTTP/1.1\r\nHost: t\r\n" + auth + b"Content-Length: "
                     + str(len(inner)).encode() + b"\r\n\r\n" + inner, timeout=1.5)
    assert out.count(b"HTTP/1.1 ") == 1 and b'"decisions"' not in out, out[:400]
