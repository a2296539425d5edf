"""A run budget in the service holds across processes: a restarted service (or another worker) rebuilds the run's
spending by replaying its stored checks into the guard, so restarting never refills the budget (session 20)."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")

BUDGET = """[[guards]]
type = "run-budget"
name = "spend"
[[guards.budgets]]
name = "transfers"
tools = ["transfer_*"]
argument = "amount"
max_total = 1000
"""
TOKEN = "budget-token-0123456789"


def _app(tmp_path):
    from agentguard.server.app import create_app
    from agentguard.server.settings import ServerSettings

    (tmp_path / "budget.toml").write_text(BUDGET)
    return create_app(ServerSettings(state_dir=str(tmp_path / "state"), token=TOKEN,
                                     tool_guards=str(tmp_path / "budget.toml")))


def _decisions(app, amounts, run="pay"):
    async def go():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
            out = []
            for a in amounts:
                r = await c.post("/v1/check", headers={"Authorization": f"Bearer {TOKEN}"}, json={
                    "run_id": run, "tool_call": {"name": "transfer_funds", "arguments": {"amount": a}}})
                assert r.status_code == 200, r.text
                out.append(r.json()["decision"])
            return out
    return asyncio.run(go())


def test_a_restart_does_not_refill_the_budget(tmp_path):
    first = _app(tmp_path)
    assert _decisions(first, [400, 400, 400]) == ["ALLOW", "ALLOW", "REJECT"]
    first.state.store.close()
    again = _app(tmp_path)  # a new process: the run is rebuilt from the store
    try:
        assert _decisions(again, [200, 1]) == ["ALLOW", "REJECT"]
        assert _decisions(again, [1000], run="fresh") == ["ALLOW"]
    finally:
        again.state.store.close()


def test_two_workers_on_one_store_share_the_runs_spending(tmp_path):
    """Two services on one audit store (two workers or replicas), a run's transfers alternating between them: each
    catches up with what the other stored (the budget guard keeps per-run memory, so the other's inputs are
    replayed into it), and the run's total holds across both."""
    a, b = _app(tmp_path), _app(tmp_path)
    try:
        got = [_decisions(app, [300])[0] for app in (a, b, a, b)]
        assert got == ["ALLOW", "ALLOW", "ALLOW", "REJECT"], got
        assert _decisions(b, [100]) == ["ALLOW"] and _decisions(a, [1]) == ["REJECT"]
    finally:
        a.state.store.close()
        b.state.store.close()
