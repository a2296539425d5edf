"""server/deciding.py ``self_approval``: an identity that asked anything of a run cannot answer its escalations, asked
under the run's lock (session 26 red team: asked before it, an identity holding the agent and approver roles fed the
run between the check and its answer, under ``run_binding = "shared"``, and approved); and an escalation answered
twice at once, by two service processes on one store (SQLite, PostgreSQL), is answered exactly once."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")

from svc_roles import AGENT, APPROVER, APPROVER2, Cred, credentials_file  # noqa: E402

from agentguard.server.app import create_app  # noqa: E402
from agentguard.server.settings import ServerSettings  # noqa: E402

CAROL_AGENT = Cred("carol", "agent", "carol-agent-token-012345")
CAROL_APPROVER = Cred("carol", "approver", "carol-approver-token-0123")
CALL = {"name": "transfer_funds", "arguments": {"amount": 5}}


def _app(tmp_path, store_url: str):
    (tmp_path / "tools.toml").write_text('[[guards]]\ntype = "tool-rules"\nallow = ["*"]\nescalate = ["transfer_*"]\n')
    creds = credentials_file(tmp_path, (AGENT, APPROVER, APPROVER2, CAROL_AGENT, CAROL_APPROVER))
    return create_app(ServerSettings(db_url=store_url, state_dir=str(tmp_path),
                                     run_binding="shared", tool_guards=str(tmp_path / "tools.toml"),
                                     credentials_file=str(creds)))


def _client(app) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://svc")


async def _escalate(c: httpx.AsyncClient, run: str) -> str:
    r = await c.post("/v1/check", headers=AGENT.headers, json={"run_id": run, "tool_call": CALL})
    assert r.status_code == 200 and r.json()["decision"] == "ESCALATE", r.text
    return str(r.json()["decision_id"])


def _answer(c: httpx.AsyncClient, who: Cred, did: str, run: str):
    return c.post("/v1/approvals", headers=who.headers,
                  json={"decision_id": did, "run_id": run, "tool_call": CALL, "approved": True})


def test_an_identity_that_feeds_the_run_while_its_answer_waits_cannot_approve(tmp_path, store_url):
    """carol's check of the run is queued on the run's lock before carol's approval (FIFO): the check is decided
    first, so the answer comes from an identity that asked something of the run. Before, the route had asked
    before the lock (carol had asked nothing yet) and the approval answered ALLOW."""
    app = _app(tmp_path, store_url)
    svc = app.state.service
    real_hold = svc.locks.hold
    queued: list[asyncio.Event] = []

    def hold(run_id):
        h = real_hold(run_id)
        if queued:
            queued.pop(0).set()  # the request is about to wait for the lock (no await before it queues)
        return h

    async def run() -> tuple[int, str, int]:
        async with _client(app) as c:
            did = await _escalate(c, "r")
            svc.locks.hold = hold
            fed, answering = asyncio.Event(), asyncio.Event()
            async with real_hold("r"):  # the run is busy: both requests queue, carol's check first
                queued.append(fed)
                check = asyncio.create_task(c.post("/v1/check", headers=CAROL_AGENT.headers,
                                                   json={"run_id": "r", "tool_call": {"name": "read"}}))
                await fed.wait()
                queued.append(answering)
                answer = asyncio.create_task(_answer(c, CAROL_APPROVER, did, "r"))
                await answering.wait()
            fed_r, answer_r = await check, await answer
            return fed_r.status_code, answer_r.text, answer_r.status_code

    fed, text, status = asyncio.run(run())
    assert fed == 200
    assert status == 403 and "self-approval" in text, text  # before: 200, ALLOW
    assert svc.store.count_decisions("r", kind="approval") == 0


def test_two_processes_answering_one_escalation_at_once_answer_it_once(tmp_path, store_url):
    """Two service processes (one store, each its own run locks): two approvers answer the same escalation at once.
    The store's unique approval id (``(run_id, idx)`` too) lets exactly one answer through; the other is 409."""
    a, b = _app(tmp_path, store_url), _app(tmp_path, store_url)

    async def run() -> list[int]:
        async with _client(a) as ca, _client(b) as cb:
            did = await _escalate(ca, "r2")
            rs = await asyncio.gather(_answer(ca, APPROVER, did, "r2"), _answer(cb, APPROVER2, did, "r2"))
            return sorted(r.status_code for r in rs)

    assert asyncio.run(run()) == [200, 409]
    assert a.state.service.store.count_decisions("r2", kind="approval") == 1


def test_a_feed_by_another_process_between_the_check_and_the_answer_is_caught(tmp_path, store_url, monkeypatch):
    """Two processes on one store: carol's check of the run is stored by process B right after process A found that
    carol asked nothing of the run, before A stores carol's answer. The answer's input index is taken, so A's answer
    conflicts, is asked again on the rebuilt run, and is refused: no approval is stored."""
    import agentguard.server.service as service

    a, b = _app(tmp_path, store_url), _app(tmp_path, store_url)
    real = service.self_approval
    fed: list[int] = []

    async def run() -> httpx.Response:
        async with _client(a) as ca, _client(b) as cb:
            did = await _escalate(ca, "r3")

            async def racing(store, run_id, approver, escalated):
                got = await real(store, run_id, approver, escalated)
                if not fed:  # once: B stores carol's check now
                    r = await cb.post("/v1/check", headers=CAROL_AGENT.headers,
                                      json={"run_id": "r3", "tool_call": {"name": "read"}})
                    fed.append(r.status_code)
                return got

            monkeypatch.setattr(service, "self_approval", racing)
            return await _answer(ca, CAROL_APPROVER, did, "r3")

    r = asyncio.run(run())
    assert fed == [200]
    assert r.status_code == 403 and "self-approval" in r.text, r.text
    assert a.state.service.store.count_decisions("r3", kind="approval") == 0
