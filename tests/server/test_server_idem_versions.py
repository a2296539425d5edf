"""A stored answer that runs a call is not replayed under other guards (session 19).

The hole: an ``Idempotency-Key`` answer was replayed for ever, whatever guards were in force. An agent kept
the key of a call the old guard files allowed; after a hot reload that refuses that tool, sending the same
request with the same key got the old ALLOW back (``Idempotent-Replayed: true``) instead of a decision by the
guards in force. Approvals already had this rule (approving under other guards is 409); now a replayed
answer that runs a call is 409 when the guard version changed since it was decided: ask again with a new
key. A refusal is still replayed (it runs nothing).
"""

from __future__ import annotations

import time

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

TOKEN = "idemver-token-123456789"
ALLOW_ALL = '[[guards]]\ntype = "tool-rules"\nname = "r"\nallow = ["*"]\n'
DENY_DELETE = '[[guards]]\ntype = "tool-rules"\nname = "r"\nallow = ["*"]\ndeny = ["delete_*"]\n'


def _h(key):
    return {"Authorization": f"Bearer {TOKEN}", "Idempotency-Key": key}


@pytest.fixture()
def env(tmp_path):
    from agentguard.server.app import create_app
    from agentguard.server.settings import ServerSettings

    rules = tmp_path / "tools.toml"
    rules.write_text(ALLOW_ALL)
    app = create_app(ServerSettings(token=TOKEN, state_dir=str(tmp_path / "s"), tool_guards=str(rules), reload_s=0.01))
    with TestClient(app) as c:
        yield c, rules, app


def _reload(c, rules, text, app):
    before = app.state.guard_source.version
    rules.write_text(text)
    deadline = time.time() + 5
    while app.state.guard_source.version == before and time.time() < deadline:
        time.sleep(0.05)
        c.get("/health")
    assert app.state.guard_source.version != before


def test_an_old_allow_is_not_replayed_after_the_guards_changed(env):
    c, rules, app = env
    body = {"run_id": "r1", "tool_call": {"name": "delete_db", "arguments": {}}}
    first = c.post("/v1/check", headers=_h("k-del"), json=body)
    assert first.json()["decision"] == "ALLOW"
    assert c.post("/v1/check", headers=_h("k-del"), json=body).headers.get("Idempotent-Replayed") == "true"
    _reload(c, rules, DENY_DELETE, app)
    r = c.post("/v1/check", headers=_h("k-del"), json=body)
    assert r.status_code == 409 and "guards changed" in r.json()["error"], r.text
    fresh = c.post("/v1/check", headers=_h("k-del-2"), json=body)  # asked again: the guards in force decide
    assert fresh.status_code == 200 and fresh.json()["decision"] == "REJECT"


def test_a_refusal_is_still_replayed_and_unchanged_guards_replay(env):
    c, rules, app = env
    rules.write_text(DENY_DELETE)
    _reload(c, rules, DENY_DELETE + "# v2\n", app)
    body = {"run_id": "r2", "tool_call": {"name": "delete_db", "arguments": {}}}
    refused = c.post("/v1/check", headers=_h("k-ref"), json=body)
    ok = c.post("/v1/check", headers=_h("k-ok"), json={**body, "tool_call": {"name": "read", "arguments": {}}})
    _reload(c, rules, ALLOW_ALL, app)
    again = c.post("/v1/check", headers=_h("k-ref"), json=body)
    assert again.status_code == 200 and again.json() == refused.json()  # runs nothing: replayed
    assert c.post("/v1/check", headers=_h("k-ok"), json={**body, "tool_call": {"name": "read", "arguments": {}}}
                  ).status_code == 409  # an ALLOW under other guards: not replayed
    assert ok.json()["decision"] == "ALLOW"


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tool=st.sampled_from(["delete_db", "delete-db", "Delete_DB", "read_file"]),
       path=st.sampled_from(["/v1/check", "/v1/runs/rs/steps"]))
def test_property_no_replayed_answer_runs_a_call_under_other_guards(env, tool, path):
    c, rules, app = env
    rules.write_text(ALLOW_ALL)
    _reload(c, rules, ALLOW_ALL + f"# {tool}{path}\n", app)
    key = f"p-{tool}-{path}-{time.time_ns()}"
    body = ({"run_id": f"rp{time.time_ns()}", "tool_call": {"name": tool, "arguments": {}}} if path == "/v1/check"
            else {"action": {"name": tool, "arguments": {}}})
    first = c.post(path, headers=_h(key), json=body)
    assert first.status_code == 200
    _reload(c, rules, DENY_DELETE + f"# {time.time_ns()}\n", app)
    r = c.post(path, headers=_h(key), json=body)
    assert r.status_code == 409 or r.json().get("execute") is False, r.text
