"""Roles with their own credentials (issue 28), tried as an attacker with the agent's token against the
real service (uvicorn on loopback), SQLite and PostgreSQL.

The attack: with one bearer token, the ``approver`` field of ``POST /v1/approvals`` was whatever the
caller wrote, so the agent approved its own ESCALATE as ``human:cfo@corp``. Now the approver is the
identity of an approver credential, the agent's credential cannot approve, and no identity can answer
an escalation of a run it asked anything of.
"""

from __future__ import annotations

import os
import time

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from svc_roles import ADMIN, AGENT, APPROVER, APPROVER2, READER, Cred, credentials_file, entry  # noqa: E402

LEGACY = "legacy-token-0123456789"
CAROL_AGENT = Cred("carol", "agent", "carol-agent-token-012345")
CAROL_APPROVER = Cred("carol", "approver", "carol-approver-token-0123")


@pytest.fixture()
def service(tmp_path, store_url):
    from agentguard.server.app import create_app
    from agentguard.server.settings import ServerSettings
    from agentguard.server.testing import serve_in_thread

    (tmp_path / "tools.toml").write_text('[[guards]]\ntype = "tool-rules"\nallow = ["*"]\nescalate = ["transfer_*"]\n')
    creds = credentials_file(tmp_path, (AGENT, APPROVER, APPROVER2, READER, ADMIN, CAROL_AGENT, CAROL_APPROVER))
    app = create_app(ServerSettings(token=LEGACY, db_url=store_url, state_dir=str(tmp_path), run_binding="shared",
                                    tool_guards=str(tmp_path / "tools.toml"), credentials_file=str(creds)))
    with serve_in_thread(app) as base:
        yield base, app.state.store, creds


def _escalate(base, who: Cred | str, run: str, amount: int = 5) -> tuple[str, dict]:
    h = who.headers if isinstance(who, Cred) else {"Authorization": f"Bearer {who}"}
    call = {"name": "transfer_funds", "arguments": {"amount": amount}}
    r = httpx.post(f"{base}/v1/check", headers=h, json={"run_id": run, "tool_call": call})
    assert r.status_code == 200 and r.json()["decision"] == "ESCALATE", r.text
    return r.json()["decision_id"], call


def _answer(base, who: Cred | str, did: str, run: str, call: dict, approver: str = "human:cfo@corp"):
    h = who.headers if isinstance(who, Cred) else {"Authorization": f"Bearer {who}"}
    return httpx.post(f"{base}/v1/approvals", headers=h, json={"decision_id": did, "run_id": run, "tool_call": call,
                                                                "approved": True, "approver": approver})


def test_the_agent_cannot_approve_its_own_escalation(service):
    base, store, _ = service
    did, call = _escalate(base, AGENT, "self")
    for who in (AGENT, LEGACY, READER, ADMIN):  # no credential without the approver role can answer
        r = _answer(base, who, did, "self", call)
        assert r.status_code == 403 and "approver role" in r.json()["error"], r.text
    did2, call2 = _escalate(base, LEGACY, "self-legacy")  # the legacy single token: same
    assert _answer(base, LEGACY, did2, "self-legacy", call2).status_code == 403
    assert store.count_decisions("self", kind="approval") == 0
    assert store.count_decisions("self-legacy", kind="approval") == 0
    # the run's decision records which credential asked
    assert store.decision(did)["principal"] == AGENT.identity
    assert store.decision(did2)["principal"] == "token"


def test_an_approver_cannot_answer_a_run_it_started(service):
    base, store, _ = service
    did, call = _escalate(base, CAROL_AGENT, "carol-run")
    r = _answer(base, CAROL_APPROVER, did, "carol-run", call)  # same identity, other credential
    assert r.status_code == 403 and "self-approval" in r.json()["error"], r.text
    # an identity that fed the run earlier (not the escalated call) cannot answer either
    httpx.post(f"{base}/v1/check", headers=AGENT.headers, json={"run_id": "mixed", "tool_call": {"name": "read"}})
    did2, call2 = _escalate(base, CAROL_AGENT, "mixed")
    assert _answer(base, CAROL_APPROVER, did2, "mixed", call2).status_code == 403
    assert store.count_decisions("carol-run", kind="approval") == 0


def test_the_recorded_approver_is_the_credential_not_the_body(service):
    base, store, _ = service
    did, call = _escalate(base, AGENT, "ok")
    r = _answer(base, APPROVER, did, "ok", call, approver="human:cfo@corp")
    assert r.status_code == 200 and r.json()["decision"] == "ALLOW", r.text
    [row] = store.decisions(run_id="ok", kind="approval")
    assert row["guard"] == f"human:{APPROVER.identity}" and row["principal"] == APPROVER.identity
    assert "cfo" not in row["reason"] and APPROVER.identity in row["reason"]
    # the same approver answers a second escalation of that run (its answers do not make it an asker)
    did2, call2 = _escalate(base, AGENT, "ok", amount=6)
    assert _answer(base, APPROVER, did2, "ok", call2).status_code == 200


def test_each_role_reaches_only_its_paths(service):
    base, _store, _ = service
    ok_check = {"run_id": "r", "tool_call": {"name": "read"}}
    cases = [  # (credential, method, path, body, allowed)
        (AGENT, "POST", "/v1/check", ok_check, True), (AGENT, "POST", "/v1/runs/r/steps", {"state": 1}, True),
        (AGENT, "POST", "/v1/runs/r/signals", {"signals": {"s": 0.9}}, True),
        (AGENT, "GET", "/v1/decisions", None, False), (AGENT, "GET", "/metrics", None, False),
        (READER, "GET", "/v1/decisions", None, True), (READER, "GET", "/metrics", None, True),
        (READER, "GET", "/v1/runs", None, True), (READER, "POST", "/v1/check", ok_check, False),
        (READER, "POST", "/v1/runs/r/steps", {"state": 1}, False),
        (APPROVER, "GET", "/v1/decisions", None, True), (APPROVER, "POST", "/v1/check", ok_check, False),
        (ADMIN, "GET", "/v1/decisions", None, True), (ADMIN, "POST", "/v1/check", ok_check, False),
        (ADMIN, "POST", "/v1/whatever-admin", {}, True),  # admin passes the gate (then 404/405)
        (AGENT, "POST", "/v1/whatever-admin", {}, False),
    ]
    for who, method, path, body, allowed in cases:
        r = httpx.request(method, f"{base}{path}", headers=who.headers, json=body)
        assert (r.status_code != 403) == allowed, (who.identity, method, path, r.status_code, r.text)
        if not allowed:
            assert "role" in r.json()["error"]
    assert httpx.get(f"{base}/health").status_code == 200  # public
    assert httpx.get(f"{base}/v1/decisions", headers={"Authorization": "Bearer nope-not-a-token"}).status_code == 401


def test_credentials_rotate_without_restart(service):
    base, _store, creds = service
    new = "alice-rotated-token-987654"
    assert httpx.get(f"{base}/v1/decisions", headers=APPROVER.headers).status_code == 200
    text = creds.read_text()
    creds.write_text(text.replace(entry(APPROVER), entry(APPROVER, new)))
    deadline = time.time() + 10
    while time.time() < deadline:  # re-read within about a second
        if httpx.get(f"{base}/v1/decisions", headers=APPROVER.headers).status_code == 401:
            break
        time.sleep(0.2)
    assert httpx.get(f"{base}/v1/decisions", headers=APPROVER.headers).status_code == 401
    assert httpx.get(f"{base}/v1/decisions", headers={"Authorization": f"Bearer {new}"}).status_code == 200
    good = creds.read_text()
    creds.write_text(good + "\n[[credentials\n")  # a broken file keeps the credentials it still names
    time.sleep(1.3)
    assert httpx.get(f"{base}/v1/decisions", headers={"Authorization": f"Bearer {new}"}).status_code == 200
    creds.write_text("this is [not toml")  # ...and revokes those it no longer names (session 18)
    time.sleep(1.3)
    assert httpx.get(f"{base}/v1/decisions", headers={"Authorization": f"Bearer {new}"}).status_code == 401
    said = httpx.get(f"{base}/health").json()["credentials_error"]  # public: that it failed, not the parser's text
    assert said and "reload" in said and str(creds) not in said and "toml" not in said.lower()


def test_the_credentials_file_stores_no_token(service):
    _base, _store, creds = service
    text = creds.read_text()
    assert AGENT.token not in text and APPROVER.token not in text and "token_sha256" in text


def test_a_broken_edit_still_revokes_the_tokens_it_removed(tmp_path):
    """Session 18 red team: an operator removes a leaked token and the edit leaves the file unparseable; the
    whole old set stayed in force, the leaked token with it. Now a failed reload keeps only the credentials
    whose digest the file still holds; an unreadable (deleted) file keeps none. Roles are not widened."""
    from hypothesis import given, settings
    from hypothesis import strategies as hst

    from agentguard.server.credentials import CredentialStore, hash_token

    def entry_of(identity: str, token: str, role: str) -> str:
        return (f'[[credentials]]\nidentity = "{identity}"\nroles = ["{role}"]\n'
                f'token_sha256 = "{hash_token(token)}"\n')

    toks = {f"id{i}@corp": (f"token-{i}-" + "x" * 24, ["agent", "approver", "reader"][i % 3]) for i in range(4)}
    path = tmp_path / "credentials.toml"

    @settings(max_examples=30, deadline=None)
    @given(keep=hst.lists(hst.booleans(), min_size=4, max_size=4), garbage=hst.sampled_from(
        ["[[credentials\n", "this is [not toml", 'identity = "x"\n[[', "\x00\x01"]))
    def prop(keep: list[bool], garbage: str) -> None:
        path.write_text("".join(entry_of(i, t, r) for i, (t, r) in toks.items()))
        store = CredentialStore(path, check_every_s=0)
        text = "".join(entry_of(i, t, r) for k, (i, (t, r)) in zip(keep, toks.items()) if k) + garbage
        path.write_text(text)
        os.utime(path, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
        for k, (i, (t, r)) in zip(keep, toks.items()):
            p = store.identify(t)
            assert (p is not None) is k, (i, keep, garbage)
            assert p is None or (p.identity == i and p.roles == frozenset({r}))
        assert store.last_error
        path.unlink()
        assert all(store.identify(t) is None for t, _r in toks.values())  # deleted: nothing authenticates

    prop()


def test_an_approval_after_a_guard_reload_is_not_run(tmp_path):
    """Session 18 red team: an ESCALATE asked under one guard file was approved (ALLOW, execute) after the file
    was reloaded with a rule that refuses the call. The approval is decided by the guards that escalated: another
    guard_version in force is 409 (the agent asks again, the new guards decide); a refusal is still recorded."""
    from fastapi.testclient import TestClient

    from agentguard.server.app import create_app
    from agentguard.server.settings import ServerSettings
    from svc_roles import credentials_file

    tools = tmp_path / "tools.toml"
    tools.write_text('[[guards]]\ntype = "tool-rules"\nname = "t"\nescalate = ["transfer_*"]\n')
    app = create_app(ServerSettings(state_dir=str(tmp_path / "d"), tool_guards=str(tools), reload_s=0.01,
                                    credentials_file=str(credentials_file(tmp_path, (AGENT, APPROVER)))))
    call = {"name": "transfer_funds", "arguments": {"amount": 5}}

    def ask(c, run):
        b = c.post("/v1/check", headers=AGENT.headers, json={"run_id": run, "tool_call": call}).json()
        assert b["decision"] == "ESCALATE", b
        return b["decision_id"]

    def answer(c, did, run, approved):
        return c.post("/v1/approvals", headers=APPROVER.headers,
                      json={"decision_id": did, "run_id": run, "tool_call": call, "approved": approved})

    with TestClient(app) as c:
        kept, refused = ask(c, "a"), ask(c, "b")
        tools.write_text('[[guards]]\ntype = "tool-rules"\nname = "t"\ndeny = ["transfer_*"]\n')
        time.sleep(0.05)
        assert c.post("/v1/check", headers=AGENT.headers, json={"run_id": "c", "tool_call": call}).json()["decision"] == "REJECT"
        r = answer(c, kept, "a", True)
        assert r.status_code == 409 and "guards changed" in r.json()["error"], r.text
        assert app.state.store.count_decisions("a", kind="approval") == 0
        r = answer(c, refused, "b", False)  # a refusal runs nothing: still answered
        assert r.status_code == 200 and r.json()["execute"] is False, r.text
        fresh = c.post("/v1/check", headers=AGENT.headers, json={"run_id": "a", "tool_call": call}).json()
        assert fresh["decision"] == "REJECT"  # asked again: the new guards decide
