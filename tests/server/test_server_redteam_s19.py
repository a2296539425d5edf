"""The session-19 red team of the guard service over real HTTP (uvicorn on loopback), as an attacker with an
agent's, an approver's or another identity's credential. Every attempt stays here; those already refused
are a regression list (the holes found this session have their own files: run binding, facts, export).

Tried and refused:

- approval races: two approvers answering one escalation at once (approve and refuse), and the same
  approver twice at once: exactly one answer is stored, the other is 409; a keyed answer sent twice at once
  gets the one stored answer; an approval racing a halting signal is never an ALLOW stored after the HALT;
- a percent-encoded run id in the path (``owned%2Drun``) is the same run, bound to the same identity;
- dashboard XSS through stored tool arguments: kept in ``test_server_dashboard_xss.py`` (session 18, re-run);
- an idempotency key reused by another identity (on the owner's run under ``run_binding = "identity"``, on a
  run of its own): never the other's stored answer;
- state changes without the route's role through a trailing slash (``POST /v1/check/`` is a 307 to the
  route, never a decision), a dot segment in a run path, a percent-encoded route name;
- CSRF: credentials are only a bearer header; a cross-site simple request (``text/plain``, a cookie holding a
  valid token, the token in the query) is 401, a CORS preflight gets no ``Access-Control-Allow-*``, and no
  response sets a cookie;
- JSON the validator and the guard could read differently: a key repeated through an escape
  (``"n\\u0061me"``), a lone surrogate in a key, an integer beyond Python's 4300-digit limit, a number that
  overflows to infinity: 400 before any guard.
"""

from __future__ import annotations

import http.client
import json
import threading

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from svc_roles import ADMIN, AGENT, APPROVER, APPROVER2, READER, Cred, credentials_file  # noqa: E402

MALLORY = Cred("mallory", "agent", "mallory-agent-token-0123")
TRANSFER = {"name": "transfer_funds", "arguments": {"amount": 5}}


@pytest.fixture(scope="module")
def svc(tmp_path_factory):
    from agentguard.server.app import create_app
    from agentguard.server.settings import ServerSettings
    from agentguard.server.testing import serve_in_thread

    tmp = tmp_path_factory.mktemp("rt19")
    (tmp / "tools.toml").write_text('[[guards]]\ntype = "tool-rules"\nallow = ["read_*", "transfer_*"]\n'
                                    'escalate = ["transfer_*"]\n')
    app = create_app(ServerSettings(state_dir=str(tmp), tool_guards=str(tmp / "tools.toml"), run_binding="identity",
                                    credentials_file=str(credentials_file(tmp, (AGENT, APPROVER, APPROVER2, READER,
                                                                                ADMIN, MALLORY)))))
    with serve_in_thread(app) as base:
        yield base, app.state.store


def raw(base: str, method: str, path: str, headers: dict | None = None, body: bytes | None = None):
    host, port = base.split("//")[1].split(":")
    c = http.client.HTTPConnection(host, int(port), timeout=10)
    c.putrequest(method, path, skip_accept_encoding=True)
    for k, v in (headers or {}).items():
        c.putheader(k, v)
    if body is not None:
        c.putheader("Content-Length", str(len(body)))
    c.endheaders(body)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data, {k.lower(): v for k, v in r.getheaders()}


def escalate(base, run):
    r = httpx.post(f"{base}/v1/check", headers=AGENT.headers, json={"run_id": run, "tool_call": TRANSFER})
    assert r.json()["decision"] == "ESCALATE", r.text
    return r.json()["decision_id"]


def answer(base, who, did, run, approved, key=None):
    h = {**who.headers, **({"Idempotency-Key": key} if key else {})}
    return httpx.post(f"{base}/v1/approvals", headers=h, json={"decision_id": did, "run_id": run,
                                                               "tool_call": TRANSFER, "approved": approved})


def at_once(*calls):
    out: list = [None] * len(calls)
    barrier = threading.Barrier(len(calls))

    def go(i, f):
        barrier.wait()
        out[i] = f()

    ts = [threading.Thread(target=go, args=(i, f)) for i, f in enumerate(calls)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    return out


def test_two_approvers_racing_on_one_escalation_store_one_answer(svc):
    base, store = svc
    for k in range(4):
        run = f"race-ap-{k}"
        did = escalate(base, run)
        a, b = at_once(lambda: answer(base, APPROVER, did, run, True), lambda: answer(base, APPROVER2, did, run, False))
        assert sorted([a.status_code, b.status_code]) == [200, 409], (a.text, b.text)
        assert store.count_decisions(run, kind="approval") == 1
        won = a if a.status_code == 200 else b
        assert won.json()["decision"] == ("ALLOW" if won is a else "REJECT")


def test_one_keyed_answer_sent_twice_at_once_is_one_answer(svc):
    base, store = svc
    did = escalate(base, "race-key")
    a, b = at_once(lambda: answer(base, APPROVER, did, "race-key", True, "k1"),
                   lambda: answer(base, APPROVER, did, "race-key", True, "k1"))
    assert {a.status_code, b.status_code} <= {200, 409}, (a.text, b.text)
    assert 200 in (a.status_code, b.status_code)
    assert store.count_decisions("race-key", kind="approval") == 1
    again = answer(base, APPROVER, did, "race-key", True, "k1")  # settled: the stored answer
    assert again.status_code == 200 and again.json()["decision"] == "ALLOW"


def test_an_idempotency_key_is_never_another_identitys_answer(svc):
    base, store = svc
    body = {"run_id": "idem-owner", "tool_call": {"name": "read_file", "arguments": {}}}
    first = httpx.post(f"{base}/v1/check", headers={**AGENT.headers, "Idempotency-Key": "shared-k"}, json=body)
    assert first.status_code == 200
    stolen = httpx.post(f"{base}/v1/check", headers={**MALLORY.headers, "Idempotency-Key": "shared-k"}, json=body)
    assert stolen.status_code == 403 and first.json()["decision_id"] not in stolen.text
    own = httpx.post(f"{base}/v1/check", headers={**MALLORY.headers, "Idempotency-Key": "shared-k"},
                     json={**body, "run_id": "idem-mallory"})
    assert own.status_code == 200 and own.json()["decision_id"] != first.json()["decision_id"]
    assert "idempotent-replayed" not in {k.lower() for k in own.headers}


@pytest.mark.parametrize("who,path", [(ADMIN, "/v1/check/"), (ADMIN, "/v1/runs/r/steps/"), (ADMIN, "/v1/approvals/"),
                                      (AGENT, "/v1/runs/r/./steps"), (AGENT, "/v1/runs/r/steps/"),
                                      (READER, "/v1/approval%73"), (ADMIN, "/v1/approval%73")])
def test_regression_no_decision_through_a_path_spelling(svc, who, path):
    base, store = svc
    before = store.count()
    body = json.dumps({"run_id": "r", "tool_call": {"name": "read_file"}, "decision_id": "x", "approved": True,
                       "state": "s"}).encode()
    status, _data, _h = raw(base, "POST", path, {**who.headers, "Content-Type": "application/json"}, body)
    assert status in (307, 403, 404), (path, status)
    assert store.count() == before


def test_regression_csrf_has_nothing_to_ride_on(svc):
    base, store = svc
    before = store.count()
    body = json.dumps({"run_id": "csrf", "tool_call": {"name": "read_file"}}).encode()
    for headers in ({"Content-Type": "text/plain", "Origin": "https://evil.example"},
                    {"Content-Type": "application/x-www-form-urlencoded", "Cookie": f"token={AGENT.token}"},
                    {"Cookie": f"Authorization=Bearer {AGENT.token}"}):
        assert raw(base, "POST", "/v1/check", headers, body)[0] == 401
    assert raw(base, "POST", f"/v1/check?token={AGENT.token}&access_token={AGENT.token}", {}, body)[0] == 401
    status, _d, h = raw(base, "OPTIONS", "/v1/approvals", {"Origin": "https://evil.example",
                                                           "Access-Control-Request-Method": "POST",
                                                           "Access-Control-Request-Headers": "authorization"})
    assert not any(k.startswith("access-control-allow") for k in h), h
    for path in ("/dashboard", "/", "/health", "/v1/runs"):
        assert "set-cookie" not in raw(base, "GET", path, READER.headers)[2]
    assert store.count() == before


@pytest.mark.parametrize("body", [
    b'{"tool_call": {"name": "read_file", "n\\u0061me": "transfer_funds"}}',
    b'{"run_id": "a", "r\\u0075n_id": "b", "tool_call": {"name": "read_file"}}',
    b'{"tool_call": {"name": "read_file", "arguments": {"\\udc00": 1}}}',
    b'{"tool_call": {"name": "read_file", "arguments": {"n": ' + b"9" * 5000 + b"}}}",
    b'{"tool_call": {"name": "read_file", "arguments": {"n": 1e999}}}',
])
def test_regression_json_read_two_ways_is_refused(svc, body):
    base, store = svc
    before = store.count()
    r = httpx.post(f"{base}/v1/check", headers={**AGENT.headers, "Content-Type": "application/json"}, content=body)
    assert r.status_code == 400, r.text
    assert store.count() == before


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prefix=st.sampled_from(["", "/", "/.", "/v1/..", "/static/..", "/health/.."]),
       route=st.sampled_from(["/v1/check", "/v1/approvals", "/v1/runs/r/steps", "/v1/runs/r/signals"]),
       suffix=st.sampled_from(["", "/", "/.", ";x", "%00", "?a=/health", "/../check"]),
       who=st.sampled_from([READER, ADMIN, APPROVER, None]), upper=st.booleans())
def test_property_no_spelling_decides_for_a_credential_without_the_role(svc, prefix, route, suffix, who, upper):
    """A credential without the route's role (or none) never gets a decision stored, however the path is spelt."""
    base, store = svc
    if who is APPROVER and route == "/v1/approvals":
        return  # its own route
    path = prefix + (route.upper() if upper else route) + suffix
    before = store.count()
    headers = {"Content-Type": "application/json", **(who.headers if who else {})}
    body = json.dumps({"run_id": "r", "tool_call": {"name": "read_file"}, "signals": {"score": 0.9}}).encode()
    status, _d, _h = raw(base, "POST", path, headers, body)
    assert status != 200 and store.count() == before, (path, status)


def test_an_approval_racing_a_halt_never_runs_after_it(svc):
    """An approval and a halting signal of one run sent at once: whichever the run's lock takes first, an ALLOW is
    never stored after the run's HALT (the approval of a halted run is HALT)."""
    base, store = svc
    for k in range(4):
        run = f"race-halt-{k}"
        did = escalate(base, run)
        ap, sig = at_once(lambda: answer(base, APPROVER, did, run, True),
                          lambda: httpx.post(f"{base}/v1/runs/{run}/signals", headers=AGENT.headers,
                                             json={"signals": {"score": 0.0}}))
        assert sig.status_code == 200 and sig.json()["decision"] == "HALT", sig.text
        assert ap.status_code == 200, ap.text
        rows = store.run_inputs(run)
        halt_at = next(r["idx"] for r in rows if r["kind"] == "signal")
        approval = next(r for r in rows if r["kind"] == "approval")
        assert approval["idx"] < halt_at or ap.json()["decision"] != "ALLOW", (rows, ap.text)


def test_regression_a_percent_encoded_run_id_is_the_same_run(svc):
    base, _store = svc
    assert httpx.post(f"{base}/v1/check", headers=AGENT.headers, json={
        "run_id": "owned-run", "tool_call": {"name": "read_file"}}).status_code == 200
    for path in ("/v1/runs/owned%2Drun/signals", "/v1/runs/%6Fwned-run/signals"):
        status, _d, _h = raw(base, "POST", path, {**MALLORY.headers, "Content-Type": "application/json"},
                             b'{"signals": {"score": 0.0}}')
        assert status == 403, path
