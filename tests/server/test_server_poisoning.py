"""One answer's failure never fails another's (issue 28), tried as an attacker against the real service:
two replicas (two uvicorn servers, each with its own audit store and writer) on one database, SQLite and
PostgreSQL.

The attack: answer each escalation many times at once through both replicas, so that duplicate answers
reach the audit writers together (a duplicate row raised an IntegrityError that failed the writer's
whole group commit: 77-174 of 400-800 innocent concurrent ``/v1/check`` calls got 503, and a real first
answer in a poisoned batch got 409 but was never recorded), while 400 innocent checks run alongside.

Must hold: every innocent check is answered 200 and is in the store; each escalation has exactly one
answer in the store; every answer acknowledged 200 is in the store, and every other is 409.
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from svc_roles import AGENT, APPROVER, credentials_file  # noqa: E402

ESCALATIONS = 24
ANSWERS_EACH = 8  # 4 through each replica
INNOCENT = 400


@pytest.fixture()
def replicas(tmp_path, store_url):
    from agentguard.server.app import create_app
    from agentguard.server.settings import ServerSettings
    from agentguard.server.testing import serve_in_thread

    (tmp_path / "tools.toml").write_text('[[guards]]\ntype = "tool-rules"\nallow = ["*"]\nescalate = ["transfer_*"]\n')
    s = ServerSettings(db_url=store_url, state_dir=str(tmp_path), tool_guards=str(tmp_path / "tools.toml"),
                       credentials_file=str(credentials_file(tmp_path)))
    a, b = create_app(s), create_app(s)
    with contextlib.ExitStack() as stack:
        bases = [stack.enter_context(serve_in_thread(app)) for app in (a, b)]
        yield bases, a.state.store


async def _attack(bases):
    # idle connections expire on the client first (1 s, uvicorn closes them after 5 s): a request sent on a connection
    # the server is closing at that instant reads EOF (httpx.ReadError), the keep-alive race, not a decision
    limits = httpx.Limits(max_connections=64, keepalive_expiry=1.0)
    clients = [httpx.AsyncClient(base_url=u, headers=AGENT.headers, timeout=60, limits=limits) for u in bases]
    approvers = [httpx.AsyncClient(base_url=u, headers=APPROVER.headers, timeout=60, limits=limits) for u in bases]
    try:
        escalated = []
        for i in range(ESCALATIONS):
            call = {"name": "transfer_funds", "arguments": {"amount": i}, "call_id": f"c{i}"}
            r = await clients[i % 2].post("/v1/check", json={"run_id": f"esc-{i}", "tool_call": call})
            assert r.json()["decision"] == "ESCALATE", r.text
            escalated.append((f"esc-{i}", r.json()["decision_id"], call))

        async def answer(k: int, run: str, did: str, call: dict) -> tuple[str, int, dict]:
            r = await approvers[k % 2].post("/v1/approvals", json={"decision_id": did, "run_id": run, "tool_call": call,
                                                                   "approved": k % 3 != 0})
            return did, r.status_code, r.json()

        async def innocent(j: int) -> tuple[int, dict]:
            r = await clients[j % 2].post("/v1/check", json={"run_id": f"inn-{j % 50}",
                                                             "tool_call": {"name": "read_file", "arguments": {"n": j}}})
            return r.status_code, r.json()

        tasks = [answer(k, *e) for e in escalated for k in range(ANSWERS_EACH)]
        tasks += [innocent(j) for j in range(INNOCENT)]
        return escalated, await asyncio.gather(*tasks)
    finally:
        for c in clients + approvers:
            await c.aclose()


def test_duplicate_answers_never_fail_innocent_requests_and_every_ack_is_stored(replicas):
    bases, store = replicas
    escalated, results = asyncio.run(_attack(bases))
    answers = results[:ESCALATIONS * ANSWERS_EACH]
    innocents = results[ESCALATIONS * ANSWERS_EACH:]
    bad = [(s, b) for s, b in innocents if s != 200]
    assert not bad, f"{len(bad)} innocent checks failed, e.g. {bad[:3]}"
    ids = store.decision_ids()
    assert all(b["decision_id"] in ids for _s, b in innocents)
    assert {s for _d, s, _b in answers} <= {200, 409}, {s for _d, s, _b in answers}
    for _run, did, _call in escalated:
        acked = [b for d, s, b in answers if d == did and s == 200]
        assert len(acked) == 1, (did, [(s, b) for d, s, b in answers if d == did])
        assert acked[0]["decision_id"] in ids  # the acknowledged answer is in the store
    approvals = [r for r in store.decisions(kind="approval", limit=1000)]
    assert len(approvals) == ESCALATIONS
    assert {r["guard"] for r in approvals} == {f"human:{APPROVER.identity}"}
    # two replicas wrote concurrently, with per-item retries: still one unbroken chain, nothing unchained
    from agentguard.server.chain import verify

    rep = verify(store.engine)
    assert rep.ok and rep.chained == store.count() and rep.unchained == 0, rep.problems[:5]
