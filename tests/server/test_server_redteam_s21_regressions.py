"""Session-21 red team of the guard service: what was tried and already refused (real HTTP, uvicorn), kept as a
regression list.

- webhook SSRF through a redirect: the configured receiver answers 302/307 to another loopback server; the
  escalation is never sent there (httpx ``follow_redirects=False``), the delivery counts as failed;
- an ``Idempotency-Key`` replayed for another run (the body's ``run_id``, the path's run), with another body,
  by another identity (run_binding ``shared``, so nothing else refuses it): 422 or a fresh decision, never the
  stored answer of another request; the same request again is the stored answer (``Idempotent-Replayed``);
- an approval of another call (arguments, name, call id changed), of another run, twice, by the agent that
  asked (identity holding both roles): refused, never ALLOW; an ``approver`` field naming someone else is
  ignored (the answer is recorded as the credential's identity);
- values an agent chooses (negative zero, subnormals, the largest double, integers past 2**53, NUL, U+2028,
  quotes, non-BMP text in signal names, tool names, arguments, step states): `audit verify` still finds the
  untouched store intact (SQLite and PostgreSQL), so no agent input makes a false alarm that would hide a real one;
- run ids that collide after a normalisation (case, a trailing space or newline, full-width digits, an
  encoded slash): another run or 400/404, never the same run under another spelling.
"""

from __future__ import annotations

import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from svc_roles import AGENT, APPROVER, Cred, credentials_file  # noqa: E402

OTHER = Cred("agent-2", "agent", "agent2-token-0123456789")
BOTH = Cred("both", "agent", "both-token-0123456789abc")
TRANSFER = {"name": "transfer_funds", "arguments": {"amount": 5}}


class Hook:
    """A loopback receiver answering every POST with ``status`` (and ``Location: to`` for a redirect)."""

    def __init__(self, status: int, to: str = "") -> None:
        self.hits: list[bytes] = []
        outer = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                outer.hits.append(self.rfile.read(int(self.headers.get("content-length") or 0)))
                self.send_response(status)
                if to:
                    self.send_header("Location", to)
                self.end_headers()

            do_GET = do_POST  # noqa: N815

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def svc(tmp_path_factory):
    from agentguard.server.app import create_app
    from agentguard.server.credentials import hash_token
    from agentguard.server.settings import ServerSettings
    from agentguard.server.testing import serve_in_thread

    tmp = tmp_path_factory.mktemp("rt21")
    inner = Hook(200)
    outer = Hook(307, inner.url)
    (tmp / "tools.toml").write_text('[[guards]]\ntype = "tool-rules"\nallow = ["read_*", "transfer_*"]\n'
                                    'escalate = ["transfer_*"]\n')
    creds = credentials_file(tmp, (AGENT, APPROVER, OTHER))
    creds.write_text(creds.read_text() + '[[credentials]]\nidentity = "both"\nroles = ["agent", "approver"]\n'
                     f'token_sha256 = "{hash_token(BOTH.token)}"\n')
    app = create_app(ServerSettings(state_dir=str(tmp), tool_guards=str(tmp / "tools.toml"), run_binding="shared",
                                    webhook_url=outer.url, webhook_secret="s" * 24, webhook_retries=2,
                                    webhook_backoff_s=0.05, credentials_file=str(creds)))
    with serve_in_thread(app) as base:
        yield base, app.state.store, outer, inner


def check(base, who, run, call=TRANSFER, key=None):
    h = {**who.headers, **({"Idempotency-Key": key} if key else {})}
    return httpx.post(f"{base}/v1/check", headers=h, json={"run_id": run, "tool_call": call})


def test_regression_a_webhook_redirect_is_not_followed(svc):
    base, _store, outer, inner = svc
    assert check(base, AGENT, "hook").json()["decision"] == "ESCALATE"
    t0 = time.time()
    while len(outer.hits) < 2 and time.time() - t0 < 10:
        time.sleep(0.05)
    time.sleep(0.3)
    assert len(outer.hits) == 2 and inner.hits == []  # tried twice (a 307 is not a delivery), never redirected


def test_regression_an_idempotency_key_answers_only_its_own_request(svc):
    base, _store, _o, _i = svc
    first = check(base, AGENT, "idem-a", key="k-1")
    assert first.status_code == 200
    again = check(base, AGENT, "idem-a", key="k-1")
    assert again.headers.get("idempotent-replayed") == "true" and again.json() == first.json()
    assert check(base, AGENT, "idem-b", key="k-1").status_code == 422  # another run
    assert check(base, AGENT, "idem-a", call={"name": "read_x"}, key="k-1").status_code == 422  # another body
    other = check(base, OTHER, "idem-a", key="k-1")  # another identity: its own request, decided
    assert other.status_code == 200 and "idempotent-replayed" not in other.headers
    assert other.json()["decision_id"] != first.json()["decision_id"]
    h = {**AGENT.headers, "Idempotency-Key": "k-2"}
    assert httpx.post(f"{base}/v1/runs/s-a/steps", headers=h, json={"state": "x"}).status_code == 200
    assert httpx.post(f"{base}/v1/runs/s-b/steps", headers=h, json={"state": "x"}).status_code == 422  # another path


def _answer(base, who, did, run, call=TRANSFER, approved=True, **extra):
    return httpx.post(f"{base}/v1/approvals", headers=who.headers,
                      json={"decision_id": did, "run_id": run, "tool_call": call, "approved": approved, **extra})


@pytest.mark.parametrize("change", ["arguments", "name", "call_id", "run"])
def test_regression_an_approval_is_of_exactly_the_escalated_call(svc, change):
    base, _store, _o, _i = svc
    run = f"ap-{change}"
    did = check(base, AGENT, run).json()["decision_id"]
    call, where = dict(TRANSFER), run
    if change == "arguments":
        call["arguments"] = {"amount": 5_000_000}
    elif change == "name":
        call["name"] = "transfer_all"
    elif change == "call_id":
        call["call_id"] = "c9"
    elif change == "run":
        where = "ap-elsewhere"
    r = _answer(base, APPROVER, did, where, call)
    assert r.status_code in (404, 409), r.text
    assert "ALLOW" not in r.text


def test_regression_the_approver_is_the_credential_not_the_body(svc):
    base, store, _o, _i = svc
    did = check(base, AGENT, "ap-field").json()["decision_id"]
    r = _answer(base, BOTH, did, "ap-field", approver=APPROVER.identity)
    assert r.json()["guard"] == "human:both", r.text
    assert store.decision(r.json()["decision_id"])["guard"] == "human:both"


def test_regression_the_requester_and_a_second_answer_are_refused(svc):
    base, _store, _o, _i = svc
    did = check(base, BOTH, "self").json()["decision_id"]
    assert _answer(base, BOTH, did, "self").status_code == 403  # it asked in this run
    assert _answer(base, APPROVER, did, "self").json()["decision"] == "ALLOW"
    assert _answer(base, APPROVER, did, "self").status_code == 409
    assert _answer(base, APPROVER, did, "self", approved=False).status_code == 409


SPELLINGS = ["Norm-1", "NORM-1", "norm-1 ", "norm-1%0A", "norm-1%20", "ｎorm-1", "norm%2F1", "norm-１", "norm-1%00"]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spelling=st.sampled_from(SPELLINGS))
def test_property_a_run_id_spelled_otherwise_is_another_run_or_refused(svc, spelling):
    base, store, _o, _i = svc
    h = AGENT.headers
    halted = httpx.post(f"{base}/v1/runs/norm-1/signals", headers=h, json={"signals": {"score": 0.0}})
    assert halted.json()["decision"] == "HALT"  # below the monitor's threshold: norm-1 is halted (latched)
    r = httpx.post(f"{base}/v1/runs/{spelling}/signals", headers=h, json={"signals": {"score": 0.99}})
    if r.status_code == 200:
        assert r.json()["run_id"] != "norm-1" and r.json()["decision"] == "ALLOW"
    else:
        assert r.status_code in (400, 404, 422), r.text


ODD_NUMBERS = [-0.0, 5e-324, 1.7976931348623157e308, 2**53 + 1, 0.1, 1e-7, 123456789012345678901234567890, -1e-310]
ODD_NAMES = ["read_\u0000", "read_\u2028x", 'read_"\\', "read_" + "é" * 100, "read_\U0001F600"]


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(numbers=st.lists(st.sampled_from(ODD_NUMBERS) | st.floats(allow_nan=False, allow_infinity=False), min_size=1,
                        max_size=4),
       names=st.lists(st.sampled_from(ODD_NAMES) | st.text(min_size=1, max_size=12).filter(
           lambda t: not any(0xD800 <= ord(c) <= 0xDFFF for c in t)), min_size=1, max_size=3))
def test_property_what_an_agent_sends_never_breaks_the_audit_chain(tmp_path_factory, store_url, numbers, names):
    """Signal values and names, tool names and arguments an agent chooses (negative zero, subnormals, the largest
    double, integers beyond 2**53, NUL, U+2028, quotes, non-BMP text) are stored so that ``audit verify`` finds the
    untouched store intact on SQLite and PostgreSQL: an agent can neither break the chain (a false alarm that would
    hide a real one) nor store what the chain does not cover."""
    from agentguard.server.app import create_app
    from agentguard.server.chain import verify
    from agentguard.server.settings import ServerSettings
    from agentguard.server.testing import reset_postgres, serve_in_thread

    if store_url.startswith("postgresql"):
        reset_postgres(store_url)
    tmp = tmp_path_factory.mktemp("chain21")
    (tmp / "tools.toml").write_text('[[guards]]\ntype = "tool-rules"\nallow = ["read_*"]\n')
    db = store_url if store_url.startswith("postgresql") else f"sqlite:///{tmp / 'audit.sqlite'}"
    app = create_app(ServerSettings(state_dir=str(tmp), db_url=db, tool_guards=str(tmp / "tools.toml"),
                                    checkpoint_every=3, credentials_file=str(credentials_file(tmp, (AGENT,)))))
    with serve_in_thread(app) as base:
        for i, v in enumerate(numbers):
            r = httpx.post(f"{base}/v1/runs/v{i}/signals", headers=AGENT.headers,
                           json={"signals": {"score": v, names[0]: v}})
            assert r.status_code == 200, r.text
        for n in names:
            r = httpx.post(f"{base}/v1/check", headers=AGENT.headers,
                           json={"run_id": "names", "tool_call": {"name": n, "arguments": {n: numbers[0], "i": 2**64}}})
            assert r.status_code == 200, r.text
        r = httpx.post(f"{base}/v1/runs/s/steps", headers=AGENT.headers,
                       json={"state": {"a": numbers[0], names[0]: [1e308, 5e-324]}, "output": names[-1]})
        assert r.status_code == 200, r.text
        rep = verify(app.state.store.engine, checkpoint_every=3)
    assert rep.ok, rep.problems
