"""Session-22 red team: the run ``default`` under ``run_binding = "identity"`` (real uvicorn; SQLite and PostgreSQL).

Hole found (fixed, availability): the first identity to send a check without ``run_id`` (or with the client's default
``"default"``) owned the run ``default``; every other identity then got 403 on every check, step and signal that named
it, so any agent could deny the service to every client relying on the default by sending one check first. Fix (the
class: one name shared by every identity): ``default`` is read as the caller's own run ``default:<SHA-256 prefix of
its identity>`` (:meth:`agentguard.server.binding.RunBinding.scope`), answered as such; an id of that form that is not
the caller's own is reserved (403), so the name, computable from an identity, cannot be taken first by another.
"""

from __future__ import annotations

import uuid

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from svc_roles import AGENT, APPROVER, Cred  # noqa: E402
from test_server_run_binding import MALLORY, _app, check  # noqa: E402

from agentguard.server.binding import own_default  # noqa: E402

EVE = Cred("eve", "agent", "eve-agent-token-0123456789")


@pytest.fixture()
def served(tmp_path, store_url):
    from agentguard.server.testing import serve_in_thread

    app = _app(tmp_path, store_url)
    with serve_in_thread(app) as base:
        yield base, app.state.store


def _signal(base, who, run, score):
    return httpx.post(f"{base}/v1/runs/{run}/signals", headers=who.headers, json={"signals": {"score": score}})


def test_every_identity_gets_its_own_default_run(served):
    base, store = served
    for who in (AGENT, MALLORY):
        r = check(base, who)
        assert r.status_code == 200 and r.json()["run_id"] == own_default(who.identity), r.text
        r = check(base, who, "default")  # named as the client names it: the same run
        assert r.status_code == 200 and r.json()["run_id"] == own_default(who.identity), r.text
    assert _signal(base, MALLORY, "default", 0.0).json()["decision"] == "HALT"  # mallory halts its own run only
    assert check(base, AGENT).json()["decision"] == "ALLOW"
    r = httpx.post(f"{base}/v1/runs/default/steps", headers=AGENT.headers, json={"state": "00"})
    assert r.status_code == 200 and r.json()["run_id"] == own_default(AGENT.identity), r.text
    for who in (AGENT, MALLORY):
        assert {d["principal"] for d in store.decisions(run_id=own_default(who.identity))} == {who.identity}
    assert store.count_decisions("default") == 0


def test_another_identitys_default_run_cannot_be_taken_first(served):
    """The scoped id is computable from an identity: sent by anyone else it is refused, before and after."""
    base, store = served
    theirs = own_default(AGENT.identity)
    for r in (check(base, MALLORY, theirs), _signal(base, MALLORY, theirs, 0.0),
              httpx.post(f"{base}/v1/runs/{theirs}/steps", headers=MALLORY.headers, json={"state": "0"})):
        assert r.status_code == 403 and "run id of your own" in r.json()["error"], r.text
    for made_up in ("default:", "default:x", "default:" + "0" * 32, theirs.upper().replace("DEFAULT", "default")):
        assert check(base, MALLORY, made_up).status_code == 403, made_up
    assert store.count_decisions(theirs) == 0
    r = check(base, AGENT)
    assert r.status_code == 200 and r.json()["decision"] == "ALLOW", r.text
    assert check(base, AGENT, theirs).status_code == 200  # its own scoped id, named explicitly


def test_an_escalation_of_the_default_run_is_approved_under_its_scoped_id(served):
    base, _store = served
    r = check(base, AGENT, name="transfer_funds")
    assert r.json()["decision"] == "ESCALATE", r.text
    body = {"decision_id": r.json()["decision_id"], "run_id": r.json()["run_id"],
            "tool_call": {"name": "transfer_funds", "arguments": {}}, "approved": True}
    a = httpx.post(f"{base}/v1/approvals", headers=APPROVER.headers, json=body)
    assert a.status_code == 200 and a.json()["decision"] == "ALLOW", a.text


def test_a_trace_of_the_default_run_is_the_callers_own(served):
    base, _store = served
    r = httpx.post(f"{base}/v1/traces", headers=MALLORY.headers,
                   json={"traces": [{"run_id": own_default(AGENT.identity), "steps": [{"state": "0"}]}]})
    assert r.status_code == 403, r.text
    r = httpx.post(f"{base}/v1/traces", headers=MALLORY.headers,
                   json={"traces": [{"run_id": "default", "steps": [{"state": "0"}]}]})
    assert r.status_code == 200, r.text
    again = {"traces": [{"run_id": own_default(MALLORY.identity), "steps": [{"state": "1"}]}]}
    assert httpx.post(f"{base}/v1/traces", headers=MALLORY.headers, json=again).status_code == 409  # stored as its own
    r = httpx.post(f"{base}/v1/traces", headers=AGENT.headers, json={"traces": [{"run_id": "default", "steps": []}]})
    assert r.status_code == 200, r.text  # the agent's default is another run


def test_shared_binding_keeps_one_default_run(tmp_path, store_url):
    from agentguard.server.testing import serve_in_thread

    app = _app(tmp_path, store_url, run_binding="shared")
    with serve_in_thread(app) as base:
        assert check(base, AGENT).json()["run_id"] == "default"
        assert check(base, MALLORY).json()["run_id"] == "default"
        assert check(base, MALLORY, own_default(AGENT.identity)).status_code == 200  # not reserved when shared


WHO = {"agent": AGENT, "mallory": MALLORY, "eve": EVE}


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    """One server for the property (its claims hold whatever an earlier example left: 0.9 never halts)."""
    from agentguard.server.app import create_app
    from agentguard.server.settings import ServerSettings
    from agentguard.server.testing import serve_in_thread
    from svc_roles import credentials_file

    tmp = tmp_path_factory.mktemp("s22default")
    (tmp / "tools.toml").write_text('[[guards]]\ntype = "tool-rules"\nallow = ["*"]\n')
    creds = credentials_file(tmp, (AGENT, APPROVER, MALLORY, EVE))
    app = create_app(ServerSettings(state_dir=str(tmp), tool_guards=str(tmp / "tools.toml"), credentials_file=str(creds)))
    with serve_in_thread(app) as base:
        yield base, app.state.store


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.lists(st.tuples(st.sampled_from(sorted(WHO)), st.sampled_from(["check", "step", "signal"]),
                                st.sampled_from(["omitted", "default", "own:agent", "own:mallory", "own:eve"])),
                      min_size=1, max_size=6))
def test_property_the_default_run_is_always_available_and_never_anothers(three, order):
    """Whatever the order, an identity naming ``default`` (or omitting it) is answered 200 on its own scoped run,
    one naming another identity's scoped id is 403, and every stored decision of a scoped run is its identity's."""
    base, store = three
    for who_name, kind, named in order:
        who = WHO[who_name]
        run = {"omitted": None, "default": "default"}[named] if named in ("omitted", "default") else \
            own_default(WHO[named[4:]].identity)
        if kind == "check":
            r = check(base, who, run)
        elif kind == "step":
            r = httpx.post(f"{base}/v1/runs/{run or 'default'}/steps", headers=who.headers, json={"state": "0"})
        else:
            r = _signal(base, who, run or "default", 0.9)
        mine = named in ("omitted", "default") or named[4:] == who_name
        assert r.status_code == (200 if mine else 403), (order, r.text)
        if mine:
            assert r.json()["run_id"] == own_default(who.identity)
    for who in WHO.values():
        assert {d["principal"] for d in store.decisions(run_id=own_default(who.identity))} <= {who.identity}
    assert store.count_decisions("default") == 0


def test_regression_the_owner_rule_still_holds_for_other_ids(served):
    base, _store = served
    run = f"r-{uuid.uuid4().hex[:8]}"
    assert check(base, AGENT, run).status_code == 200
    assert check(base, MALLORY, run).status_code == 403
    assert check(base, MALLORY, "defaults").status_code == 200  # not the reserved form: an ordinary id
