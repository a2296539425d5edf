"""Idempotency keys on every decision endpoint, expiry read from the store, and runs caught up (not
rebuilt) when another process decided part of them: two applications on one SQLite file stand in for two
workers or replicas (the PostgreSQL replica test is ``test_server_replicas.py``)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

from agentguard.server.app import create_app  # noqa: E402
from agentguard.server.idempotency import IdempotencyError, caller_facts, idem_key, key_from_headers  # noqa: E402
from agentguard.server.settings import ServerSettings  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from svc_roles import AGENT, APPROVER, Cred, credentials_file  # noqa: E402

OTHER = Cred("agent-2", "agent", "agent2-token-0123456789")
TRANSFER = {"name": "transfer_funds", "arguments": {"amount": 5}}


@pytest.fixture()
def settings(tmp_path):
    tools = tmp_path / "tools.toml"
    tools.write_text('[[guards]]\ntype = "tool-rules"\nallow = ["read_file", "transfer_funds"]\n'
                     'escalate = ["transfer_funds"]\n')
    return ServerSettings(state_dir=str(tmp_path / "s"), tool_guards=str(tools), run_ttl_s=5, run_binding="shared",
                          credentials_file=str(credentials_file(tmp_path, (AGENT, OTHER, APPROVER))))


def _h(cred, key=None):
    return {**cred.headers, **({"Idempotency-Key": key} if key else {})}


def test_a_retried_request_is_answered_from_the_store(settings):
    app = create_app(settings)
    with TestClient(app) as c:
        body = {"run_id": "r1", "tool_call": {"name": "read_file", "arguments": {"path": "a"}}}
        first = c.post("/v1/check", headers=_h(AGENT, "k-1"), json=body)
        again = c.post("/v1/check", headers=_h(AGENT, "k-1"), content=b'{"tool_call": {"arguments": {"path": "a"}, '
                       b'"name": "read_file"}, "run_id": "r1"}')  # the same JSON, serialised otherwise
        assert first.status_code == again.status_code == 200
        assert again.json() == first.json() and again.headers["Idempotent-Replayed"] == "true"
        assert "Idempotent-Replayed" not in first.headers
        assert app.state.store.count_decisions("r1") == 1
        # one key, one request: another body or another endpoint is refused, nothing decided
        r = c.post("/v1/check", headers=_h(AGENT, "k-1"), json={**body, "run_id": "r2"})
        assert r.status_code == 422 and "different request" in r.json()["error"]
        r = c.post("/v1/runs/r1/signals", headers=_h(AGENT, "k-1"), json={"signals": {"score": 0.9}})
        assert r.status_code == 422
        # keys belong to a credential: another caller's same key is its own request
        other = c.post("/v1/check", headers=_h(OTHER, "k-1"), json=body)
        assert other.status_code == 200 and other.json()["decision_id"] != first.json()["decision_id"]
        assert app.state.store.count_decisions("r1") == 2


def test_steps_signals_and_approvals_take_keys(settings):
    app = create_app(settings)
    with TestClient(app) as c:
        for path, body in (("/v1/runs/r/steps", {"state": "s0"}), ("/v1/runs/r/signals", {"signals": {"score": .9}})):
            a = c.post(path, headers=_h(AGENT, path), json=body)
            b = c.post(path, headers=_h(AGENT, path), json=body)
            assert a.status_code == 200 and b.json() == a.json()
        assert [r["kind"] for r in app.state.store.run_inputs("r")] == ["step", "signal"]  # each stored once
        esc = c.post("/v1/check", headers=AGENT.headers, json={"run_id": "r", "tool_call": TRANSFER}).json()
        assert esc["decision"] == "ESCALATE"
        answer = {"decision_id": esc["decision_id"], "run_id": "r", "tool_call": TRANSFER, "approved": True}
        a = c.post("/v1/approvals", headers=_h(APPROVER, "ap-1"), json=answer)
        b = c.post("/v1/approvals", headers=_h(APPROVER, "ap-1"), json=answer)
        assert a.json()["decision"] == "ALLOW" and b.status_code == 200 and b.json() == a.json()
        assert c.post("/v1/approvals", headers=APPROVER.headers, json=answer).status_code == 409  # unkeyed: answered


@pytest.mark.parametrize("key", ["", "x" * 201, "caf\u00e9".encode(), "a b"])
def test_a_malformed_key_is_refused(settings, key):
    with TestClient(create_app(settings)) as c:
        r = c.post("/v1/runs/r/steps", headers={**AGENT.headers, "Idempotency-Key": key}, json={"state": 0})
        assert r.status_code == 400 and "Idempotency-Key" in r.json()["error"]
        r = c.post("/v1/check", headers={**AGENT.headers, "Idempotency-Key": key},
                   json={"tool_call": {"name": "read_file"}})
        assert r.status_code == 400


def test_key_parsing():
    assert key_from_headers([(b"idempotency-key", b"abc")]) == "abc"
    assert key_from_headers({"Idempotency-Key": "abc"}) == "abc"
    assert key_from_headers([(b"authorization", b"x")]) is None
    with pytest.raises(IdempotencyError):
        key_from_headers([(b"idempotency-key", b"a"), (b"idempotency-key", b"b")])
    a, b = idem_key("k", "alice", "/v1/check", b'{"a": 1}'), idem_key("k", "alice", "/v1/check", b'{"a":1}')
    assert a == b and idem_key("k", "bob", "/v1/check", b'{"a": 1}') != a  # scoped to the identity
    assert idem_key("k", "alice", "/v1/check", b'{"a": 2}').digest != a.digest
    assert idem_key(None, "alice", "/v1/check", b"{}") is None
    plain = caller_facts({"agent"}, None)  # a keyed decision request covers the caller's credential too
    with_fact = idem_key("k", "alice", "/v1/check", b'{"a":1}', caller_facts({"agent"}, {"licensed": False}))
    assert idem_key("k", "alice", "/v1/check", b'{"a":1}', plain).digest not in (a.digest, with_fact.digest)
    assert idem_key("k", "alice", "/v1/check", b'{"a":1}', caller_facts({"agent", "reader"}, None)) != \
        idem_key("k", "alice", "/v1/check", b'{"a":1}', plain)


def test_a_failed_write_stores_no_key_and_the_retry_is_decided(settings):
    app = create_app(settings)
    store = app.state.store
    with TestClient(app) as c:
        real = store.arecord

        async def broken(*_a, **_k):
            raise OSError("disk full")

        store.arecord = broken
        r = c.post("/v1/runs/f/steps", headers=_h(AGENT, "f-0"), json={"state": 1})
        assert r.status_code == 503
        store.arecord = real
        r = c.post("/v1/runs/f/steps", headers=_h(AGENT, "f-0"), json={"state": 1})
        assert r.status_code == 200 and "Idempotent-Replayed" not in r.headers and r.json()["step"] == 0


def test_concurrent_retries_are_decided_once(settings):
    """The same keyed request sent 8 times at once: one decision, eight identical answers."""
    app = create_app(settings)

    async def burst():
        tr = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=tr, base_url="http://t") as c:
            return await asyncio.gather(*(c.post("/v1/runs/c/signals", headers=_h(AGENT, "same"),
                                                 json={"signals": {"score": 0.9}}) for _ in range(8)))

    with TestClient(app):  # runs the lifespan (the store closes after)
        out = asyncio.run(burst())
        assert {r.status_code for r in out} == {200} and len({r.text for r in out}) == 1
        assert len(app.state.store.run_inputs("c")) == 1


def test_expiry_is_read_from_the_store_and_runs_are_caught_up(settings, tmp_path):
    """Two applications on one SQLite file (two workers): a run fed steps through A and signals through B
    lives while either feeds it and expires for both once idle; A catches the run up (replays only what B
    stored) instead of rebuilding it from its first input."""
    now = [1000.0]
    a, b = create_app(settings), create_app(settings)
    for app in (a, b):
        app.state.runs.clock = lambda: now[0]
    with TestClient(a) as ca, TestClient(b) as cb:
        assert ca.post("/v1/runs/e/steps", headers=AGENT.headers, json={"state": 0}).status_code == 200
        for _ in range(3):
            now[0] += 3
            assert cb.post("/v1/runs/e/signals", headers=AGENT.headers, json={"signals": {"score": .9}}).status_code == 200
        now[0] += 3  # 12 s after A's own last step, 3 s after B's last signal: alive
        r = ca.post("/v1/runs/e/steps", headers=AGENT.headers, json={"state": 1})
        assert r.status_code == 200 and r.json()["step"] == 1  # B's signals in the run, A's steps in order
        svc = a.state.service  # A let the run go from its own memory (idle 12 s there): rebuilt, not refused
        rebuilds, caught = svc.rebuilds, svc.catch_ups
        for k in range(3):
            cb.post("/v1/runs/e/signals", headers=AGENT.headers, json={"signals": {"score": .9}})
            assert ca.post("/v1/runs/e/steps", headers=AGENT.headers, json={"state": 2 + k}).json()["step"] == 2 + k
        assert svc.rebuilds == rebuilds and svc.catch_ups == caught + 3  # caught up each time, never rebuilt
        now[0] += 6
        for c in (ca, cb):
            assert c.post("/v1/runs/e/signals", headers=AGENT.headers, json={"signals": {"score": .9}}).status_code == 410
            assert c.post("/v1/runs/e/steps", headers=AGENT.headers, json={"state": 9}).status_code == 410


def test_checks_alternating_between_two_processes_are_caught_up_in_one_read(settings):
    """/v1/check of one run alternating between two applications on one SQLite file: each catches the run up
    from one read of its tail (no rebuild after its first sight of the run), the run's inputs stay one
    dense sequence, and a process that missed more than the on-loop bound (64 inputs) still answers, in
    order, by the worker-thread path."""
    a, b = create_app(settings), create_app(settings)
    call = {"run_id": "k", "tool_call": {"name": "read_file", "arguments": {"path": "a"}}}
    with TestClient(a) as ca, TestClient(b) as cb:
        for i in range(10):
            r = (ca if i % 2 == 0 else cb).post("/v1/check", headers=AGENT.headers, json=call)
            assert r.status_code == 200 and r.json()["decision"] == "ALLOW"
        sa_, sb = a.state.service, b.state.service
        assert (sa_.rebuilds, sb.rebuilds) == (1, 1) and sa_.catch_ups == sb.catch_ups == 4
        for _ in range(70):  # B alone: A's view falls more than 64 inputs behind
            assert cb.post("/v1/check", headers=AGENT.headers, json=call).status_code == 200
        assert ca.post("/v1/check", headers=AGENT.headers, json=call).status_code == 200
        assert [r["idx"] for r in a.state.store.run_inputs("k")] == list(range(81))
        assert sa_.catch_ups + sa_.rebuilds == 4 + 1 + 1  # the far-behind run: caught up or rebuilt off the loop


def test_a_replayed_allow_does_not_run_a_call_after_the_run_was_halted(tmp_path):
    # red team: an ALLOW whose answer was lost, retried with its key after a later call halted the run, was
    # replayed as ALLOW (the client ran a call after the stop); now 409, and a refusal is still replayed
    tools = tmp_path / "halt.toml"
    tools.write_text('[[guards]]\ntype = "tool-rules"\nallow = ["read_file", "delete_file", "format_disk"]\n'
                     'deny = ["delete_file"]\nhalt = ["format_disk"]\n')
    s = ServerSettings(state_dir=str(tmp_path / "s"), tool_guards=str(tools),
                       credentials_file=str(credentials_file(tmp_path, (AGENT, APPROVER))))
    app = create_app(s)
    with TestClient(app) as c:
        ok = {"run_id": "h", "tool_call": {"name": "read_file", "arguments": {"path": "a"}}}
        no = {"run_id": "h", "tool_call": {"name": "delete_file", "arguments": {"path": "a"}}}
        assert c.post("/v1/check", headers=_h(AGENT, "k-ok"), json=ok).json()["allowed"] is True
        assert c.post("/v1/check", headers=_h(AGENT, "k-ok"), json=ok).json()["allowed"] is True  # not halted: replayed
        assert c.post("/v1/check", headers=_h(AGENT, "k-no"), json=no).json()["decision"] == "REJECT"
        assert c.post("/v1/check", headers=_h(AGENT), json={"run_id": "h", "tool_call": {"name": "format_disk"}}
                      ).json()["decision"] == "HALT"
        n = app.state.store.count_decisions("h")
        r = c.post("/v1/check", headers=_h(AGENT, "k-ok"), json=ok)
        assert r.status_code == 409 and "halted" in r.json()["error"] and "allowed" not in r.json()
        refused = c.post("/v1/check", headers=_h(AGENT, "k-no"), json=no)
        assert refused.status_code == 200 and refused.json()["decision"] == "REJECT"  # a refusal replays as is
        assert refused.headers["Idempotent-Replayed"] == "true"
        assert app.state.store.count_decisions("h") == n  # nothing decided again


# -- property: after a stop nothing runs, whatever is retried or approved -----------------------------
import itertools  # noqa: E402

from hypothesis import HealthCheck, given, settings as hsettings, strategies as st  # noqa: E402

_FRESH = itertools.count()
_OPS = st.lists(st.sampled_from(["read", "delete", "pay", "halt", "retry_first", "retry_last", "approve"]),
                min_size=1, max_size=8)


@pytest.fixture(scope="module")
def halting_app(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("halting")
    tools = tmp / "rules.toml"
    tools.write_text('[[guards]]\ntype = "tool-rules"\nallow = ["read_file", "delete_file", "pay", "format_disk"]\n'
                     'deny = ["delete_file"]\nescalate = ["pay"]\nhalt = ["format_disk"]\n')
    s = ServerSettings(state_dir=str(tmp / "s"), tool_guards=str(tools),
                       credentials_file=str(credentials_file(tmp, (AGENT, APPROVER))))
    app = create_app(s)
    with TestClient(app) as c:
        yield c


@hsettings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_OPS, st.integers(0, 10**9))
def test_property_nothing_runs_after_a_halt_whatever_is_retried_or_approved(halting_app, ops, salt):
    # a fresh run per example (hypothesis repeats salts: a reused run id and keys made the model wrong)
    c, run, ops = halting_app, f"p{salt}-{next(_FRESH)}", ["read", "pay", *ops]  # a call that ran, one that asked
    calls = {"read": ("read_file", {"path": "a"}), "delete": ("delete_file", {"path": "a"}),
             "pay": ("pay", {"amount": 5}), "halt": ("format_disk", {})}
    sent, escalations, halted = [], [], False
    for i, op in enumerate(ops):
        if op.startswith("retry") and sent:
            key, body = sent[0 if op == "retry_first" else -1]
            r = c.post("/v1/check", headers=_h(AGENT, key), json=body)
        elif op == "approve" and escalations:
            did, tc = escalations.pop()
            r = c.post("/v1/approvals", headers=APPROVER.headers,
                       json={"decision_id": did, "run_id": run, "approved": True, "tool_call": tc})
        elif op in calls:
            name, args = calls[op]
            body = {"run_id": run, "tool_call": {"name": name, "arguments": args}}
            sent.append((f"{run}-{i}", body))
            r = c.post("/v1/check", headers=_h(AGENT, f"{run}-{i}"), json=body)
            if r.status_code == 200 and r.json()["decision"] == "ESCALATE":
                escalations.append((r.json()["decision_id"], body["tool_call"]))
        else:
            continue
        runs = r.status_code == 200 and r.json().get("execute") is True
        assert not (halted and runs), (ops, i, r.text)
        if op == "delete":
            assert not runs  # a refused call never runs, first time or retried
        halted = halted or op == "halt"
