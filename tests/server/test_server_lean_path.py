"""The gate's lean ``POST /v1/check`` path (server/gate.py ``Gate.fast``: the body goes straight to the
endpoint's handler, skipping FastAPI's routing) answers exactly as the routed FastAPI endpoint: the same
status, body (but the fresh decision id), headers and audit rows, for valid, malformed, invalid,
unauthenticated, forbidden, oversized and idempotently retried requests (a hypothesis property over request
sequences). Both paths call the one handler (``routes/decisions.py`` ``check_raw``); this checks that
nothing around it differs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

from agentguard.server.app import create_app  # noqa: E402
from agentguard.server.settings import ServerSettings  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from svc_roles import AGENT, APPROVER, credentials_file  # noqa: E402

HEADERS = ("content-type", "content-length", "idempotent-replayed", "www-authenticate", "retry-after",
           "connection", "x-frame-options", "x-content-type-options", "referrer-policy",
           "cross-origin-opener-policy", "content-security-policy")
MAX_BODY = 1500


def _apps(tmp):
    tools = tmp / "tools.toml"
    tools.write_text('[[guards]]\ntype = "tool-rules"\nallow = ["read_file", "transfer_funds"]\n'
                     'escalate = ["transfer_funds"]\n')
    creds = credentials_file(tmp, (AGENT, APPROVER))
    out = []
    for lean in (True, False):
        app = create_app(ServerSettings(state_dir=str(tmp / f"s-{lean}"), tool_guards=str(tools),
                                        credentials_file=str(creds), max_body_bytes=MAX_BODY))
        if not lean:
            app.fast = {}  # type: ignore[attr-defined] - every request through FastAPI's routing
        out.append(app)
    return out


def _seen(resp):
    body = resp.content
    try:
        data = json.loads(body)
        if isinstance(data, dict) and "decision_id" in data:
            data["decision_id"] = "<id>"
        body = data
    except ValueError:
        pass
    return resp.status_code, body, {h: resp.headers.get(h) for h in HEADERS}


def _rows(app):
    cols = ("run_id", "kind", "decision", "reason", "guard", "input_digest", "numbers", "principal")
    return [{c: d.get(c) for c in cols} for d in reversed(app.state.store.decisions(limit=10_000))]


JSONV = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=12),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                 max_size=3), max_leaves=6)
VALID = st.builds(lambda run, name, args, md: {"run_id": run, "tool_call": {"name": name, "arguments": args},
                                               "metadata": md},
                  st.sampled_from(["r1", "r2", "bad run id!"]),
                  st.sampled_from(["read_file", "transfer_funds", "rm", "exec"]),
                  st.dictionaries(st.text(max_size=8), JSONV, max_size=3), st.dictionaries(st.text(max_size=5), JSONV,
                                                                                           max_size=2))
REQUEST = st.one_of(
    st.tuples(st.just("valid"), VALID, st.none()),
    st.tuples(st.just("keyed"), VALID, st.sampled_from(["k1", "k2", "bad key \x01", ""])),
    st.tuples(st.just("raw"), st.binary(max_size=80), st.none()),
    st.tuples(st.just("extra"), VALID, st.none()),
    st.tuples(st.just("noauth"), VALID, st.none()),
    st.tuples(st.just("badauth"), VALID, st.none()),
    st.tuples(st.just("approver"), VALID, st.none()),
    st.tuples(st.just("huge"), VALID, st.none()),
)


def _send(client, kind, body, key):
    headers = dict(AGENT.headers)
    if kind == "noauth":
        headers.pop("Authorization")
    elif kind == "badauth":
        headers["Authorization"] = "Bearer not-a-token-000000"
    elif kind == "approver":
        headers = dict(APPROVER.headers)  # a role that may not check calls: 403
    if kind == "keyed" and key is not None:
        headers["Idempotency-Key"] = key
    if kind == "raw":
        content = body
    elif kind == "extra":
        content = json.dumps({**body, "surprise": 1}).encode()
    elif kind == "huge":
        content = json.dumps({**body, "metadata": {"pad": "x" * MAX_BODY}}).encode()
    else:
        content = json.dumps(body).encode()
    return client.post("/v1/check", headers={**headers, "Content-Type": "application/json"}, content=content)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(reqs=st.lists(REQUEST, min_size=1, max_size=10))
def test_lean_and_routed_check_answer_alike(tmp_path_factory, reqs):
    lean, routed = _apps(tmp_path_factory.mktemp("lean"))
    with TestClient(lean) as a, TestClient(routed) as b:
        for kind, body, key in reqs + [r for r in reqs if r[0] == "keyed"]:  # every keyed request retried
            assert _seen(_send(a, kind, body, key)) == _seen(_send(b, kind, body, key)), (kind, body, key)
    assert _rows(lean) == _rows(routed)


def test_the_routed_path_is_really_taken(tmp_path):
    """The comparison above is not vacuous: with ``fast`` emptied the request reaches FastAPI's route."""
    lean, routed = _apps(tmp_path)
    seen = []
    inner = routed.fastapi  # type: ignore[attr-defined]

    async def spy(scope, receive, send):
        seen.append(scope.get("path"))
        await inner(scope, receive, send)

    routed.app = spy  # type: ignore[attr-defined]
    with TestClient(routed) as c:
        assert c.post("/v1/check", headers=AGENT.headers, json={"tool_call": {"name": "read_file"}}).status_code == 200
    assert "/v1/check" in seen
