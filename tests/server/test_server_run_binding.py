"""A run belongs to the identity that started it (``run_binding = "identity"``, session 19), tried as an
attacker holding another agent credential against the real service (uvicorn on loopback), SQLite and
PostgreSQL, and across two replicas of one store.

The hole: any agent credential could post checks, steps and signals to any run, the shared ``default``
run included: feed another identity's run, latch a HALT on it with one low signal, or fill its trace.
(``shared`` stays the default for now: see :mod:`agentguard.server.binding` for why.)
"""

from __future__ import annotations

import threading
import uuid

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from svc_roles import AGENT, APPROVER, READER, Cred, credentials_file  # noqa: E402

MALLORY = Cred("mallory", "agent", "mallory-agent-token-0123")
GUARDS = '[[guards]]\ntype = "tool-rules"\nallow = ["*"]\nescalate = ["transfer_*"]\n'
SIGNALS = '[[guards]]\ntype = "threshold-monitor"\nsignal = "score"\nthreshold = 0.5\n'


def _app(tmp_path, store_url, run_binding="identity", **kw):
    from agentguard.server.app import create_app
    from agentguard.server.settings import ServerSettings

    (tmp_path / "tools.toml").write_text(GUARDS)
    (tmp_path / "signals.toml").write_text(SIGNALS)
    creds = credentials_file(tmp_path, (AGENT, APPROVER, READER, MALLORY))
    return create_app(ServerSettings(db_url=store_url, state_dir=str(tmp_path), tool_guards=str(tmp_path / "tools.toml"),
                                     signal_guards=str(tmp_path / "signals.toml"), credentials_file=str(creds),
                                     run_binding=run_binding, **kw))


@pytest.fixture()
def service(tmp_path, store_url):
    from agentguard.server.testing import serve_in_thread

    app = _app(tmp_path, store_url)
    with serve_in_thread(app) as base:
        yield base, app.state.store


def check(base, who, run=None, name="read_file"):
    body = {"tool_call": {"name": name, "arguments": {}}}
    if run is not None:
        body["run_id"] = run
    return httpx.post(f"{base}/v1/check", headers=who.headers, json=body)


def test_another_identity_cannot_feed_halt_or_step_a_run(service):
    base, store = service
    assert check(base, AGENT, "alice-run").status_code == 200
    before = store.count_decisions("alice-run")
    attacks = [
        ("POST", "/v1/check", {"run_id": "alice-run", "tool_call": {"name": "read_file"}}),
        ("POST", "/v1/runs/alice-run/steps", {"state": "00"}),
        ("POST", "/v1/runs/alice-run/signals", {"signals": {"score": 0.01}}),  # would latch a HALT
    ]
    texts = set()
    for method, path, body in attacks:
        r = httpx.request(method, f"{base}{path}", headers=MALLORY.headers, json=body)
        assert r.status_code == 403, (path, r.text)
        texts.add(r.json()["error"])
    assert len(texts) == 1 and "agent-1" not in texts.pop()  # one text; the owner is never named
    assert store.count_decisions("alice-run") == before  # nothing decided or stored for the attacker
    r = check(base, AGENT, "alice-run")
    assert r.status_code == 200 and r.json()["decision"] == "ALLOW", r.text  # not halted by the attacker
    # the owner still feeds its own run through every endpoint
    assert httpx.post(f"{base}/v1/runs/alice-run/signals", headers=AGENT.headers,
                      json={"signals": {"score": 0.9}}).status_code == 200


def test_the_default_run_is_not_shared(service):
    """Each identity's ``default`` is its own run (session 22; before, the second identity got 403 for it)."""
    from agentguard.server.binding import own_default

    base, store = service
    r = check(base, AGENT)  # no run id: the agent's own default run
    assert r.status_code == 200 and r.json()["run_id"] == own_default(AGENT.identity), r.text
    r = check(base, MALLORY)
    assert r.status_code == 200 and r.json()["run_id"] == own_default(MALLORY.identity), r.text
    assert httpx.post(f"{base}/v1/runs/default/signals", headers=MALLORY.headers,
                      json={"signals": {"score": 0.0}}).json()["decision"] == "HALT"  # its own run only
    assert check(base, AGENT).json()["decision"] == "ALLOW"
    assert {d["principal"] for d in store.decisions(run_id=own_default(AGENT.identity))} == {AGENT.identity}
    assert store.count_decisions("default") == 0


def test_the_refusal_says_nothing_of_the_other_run(service):
    """Halted, escalated, plain or expired-looking: the attacker gets the same 403 text (only the id differs)."""
    base, _store = service
    assert check(base, AGENT, "plain").status_code == 200
    assert httpx.post(f"{base}/v1/runs/halted/signals", headers=AGENT.headers,
                      json={"signals": {"score": 0.0}}).json()["decision"] == "HALT"
    assert check(base, AGENT, "escalated", "transfer_funds").json()["decision"] == "ESCALATE"
    said = {check(base, MALLORY, run).text.replace(run, "RUN") for run in ("plain", "halted", "escalated")}
    assert len(said) == 1, said


def test_approvals_are_not_bound_and_readers_still_read(service):
    base, _store = service
    r = check(base, AGENT, "pay", "transfer_funds")
    did = r.json()["decision_id"]
    a = httpx.post(f"{base}/v1/approvals", headers=APPROVER.headers, json={
        "decision_id": did, "run_id": "pay", "tool_call": {"name": "transfer_funds", "arguments": {}},
        "approved": True})
    assert a.status_code == 200 and a.json()["decision"] == "ALLOW", a.text
    assert httpx.get(f"{base}/v1/runs/pay", headers=READER.headers).status_code == 200


def test_two_identities_starting_one_run_at_once_one_wins(service):
    """The store decides: of concurrent first requests by two identities, every stored decision of the run is
    one identity's, and the other identity got only 403s."""
    base, store = service
    for k in range(3):
        run = f"race-{k}"
        got: dict[str, list[int]] = {AGENT.identity: [], MALLORY.identity: []}

        def go(who):
            for _ in range(4):
                got[who.identity].append(check(base, who, run).status_code)

        ts = [threading.Thread(target=go, args=(w,)) for w in (AGENT, MALLORY)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        owners = {d["principal"] for d in store.decisions(run_id=run)}
        assert len(owners) == 1, owners
        (owner,) = owners
        loser = MALLORY.identity if owner == AGENT.identity else AGENT.identity
        assert set(got[owner]) == {200} and set(got[loser]) == {403}, got


def test_two_replicas_of_one_store_enforce_the_same_owner(tmp_path, store_url):
    """Replica A holds the run in memory; the attacker asks replica B, which never saw it."""
    from agentguard.server.testing import serve_in_thread

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a, b = _app(tmp_path / "a", store_url), _app(tmp_path / "b", store_url)  # one store (SQLite file or PostgreSQL)
    with serve_in_thread(a) as base_a, serve_in_thread(b) as base_b:
        assert check(base_a, AGENT, "repl").status_code == 200
        assert check(base_b, MALLORY, "repl").status_code == 403
        assert check(base_b, AGENT, "repl").status_code == 200
        assert httpx.post(f"{base_a}/v1/runs/repl/signals", headers=MALLORY.headers,
                          json={"signals": {"score": 0.0}}).status_code == 403


def test_shared_binding_keeps_multi_identity_runs(tmp_path, store_url):
    from agentguard.server.testing import serve_in_thread

    app = _app(tmp_path, store_url, run_binding="shared")
    with serve_in_thread(app) as base:
        assert check(base, AGENT, "team").status_code == 200
        assert check(base, MALLORY, "team").status_code == 200
        assert {d["principal"] for d in app.state.store.decisions(run_id="team")} == {AGENT.identity,
                                                                                     MALLORY.identity}


def test_an_unknown_binding_is_refused_at_start():
    from agentguard.core.errors import InputError
    from agentguard.server.settings import ServerSettings

    assert ServerSettings().run_binding == "identity"  # the default: a run belongs to its creator
    with pytest.raises(InputError, match="run_binding"):
        ServerSettings(run_binding="owner")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.lists(st.tuples(st.sampled_from(["agent", "mallory"]), st.sampled_from(["check", "step", "signal"])),
                      min_size=1, max_size=6),
       run=st.from_regex(r"[A-Za-z0-9_.:-]{1,20}", fullmatch=True))
def test_property_every_stored_decision_of_a_run_is_its_first_identitys(service, order, run):
    base, store = service
    run = f"p-{uuid.uuid4().hex[:8]}-{run}"  # a fresh run per example
    first = None
    for who_name, kind in order:
        who = AGENT if who_name == "agent" else MALLORY
        if kind == "check":
            r = check(base, who, run)
        elif kind == "step":
            r = httpx.post(f"{base}/v1/runs/{run}/steps", headers=who.headers, json={"state": "00"})
        else:
            r = httpx.post(f"{base}/v1/runs/{run}/signals", headers=who.headers, json={"signals": {"score": 0.9}})
        if first is None and r.status_code == 200:
            first = who.identity
        assert r.status_code == (200 if who.identity == (first or who.identity) else 403), (order, r.text)
    assert {d["principal"] for d in store.decisions(run_id=run)} <= {first}


def test_a_run_started_elsewhere_between_the_check_and_the_read_is_refused(tmp_path):
    """Replica B asks the rule while the run is still new (its owner read returns nothing), then replica A's
    identity starts the run before B reads the run's state: B must refuse, not decide the run's next input."""
    from fastapi.testclient import TestClient

    url = f"sqlite:///{tmp_path / 'audit.sqlite'}"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a, b = _app(tmp_path / "a", url), _app(tmp_path / "b", url)
    with TestClient(a) as ca, TestClient(b) as cb:
        binding = b.state.service.binding
        real = binding.owner
        calls = []

        def stale_then_real(run_id):
            calls.append(run_id)
            if len(calls) == 1:  # B's first look: nothing stored yet; now A's identity starts the run
                r = ca.post("/v1/check", headers=AGENT.headers, json={"run_id": "raced", "tool_call": {"name": "r"}})
                assert r.status_code == 200
                return None
            return real(run_id)

        binding.owner = stale_then_real
        r = cb.post("/v1/check", headers=MALLORY.headers, json={"run_id": "raced", "tool_call": {"name": "r"}})
        assert r.status_code == 403, r.text
        assert {d["principal"] for d in a.state.store.decisions(run_id="raced")} == {AGENT.identity}
