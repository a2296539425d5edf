"""The service's decisions go through the core Pipeline: a configured strategy's per-run state and the
latched HALT are rebuilt from the audit store in another process; an approval of a halted run is HALT;
a failed audit write leaves nothing behind in memory."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

from agentguard.core import GuardStack  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402
from agentguard.server.app import create_app  # noqa: E402
from agentguard.server.guards import ServiceGuards, StepToolGuard, default_guards  # noqa: E402
from agentguard.server.settings import ServerSettings  # noqa: E402

from svc_roles import APPROVER, credentials_file  # noqa: E402

TOKEN = "pipeline-token-12345"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _app(tmp_path, strategy=None, store=None):
    stack = GuardStack([ToolRuleGuard(allow=["*"], deny=["delete_*"], halt=["format_*"],
                                      escalate=["transfer_*"], name="rules")])
    s = ServerSettings(token=TOKEN, state_dir=str(tmp_path / "s"), strategy=strategy,
                       credentials_file=str(credentials_file(tmp_path)))
    g = default_guards(s)
    return create_app(s, ServiceGuards(tool=stack, step=StepToolGuard(stack), signal=g.signal), store=store)


def _check(c, run, name, **args):
    r = c.post("/v1/check", headers=AUTH, json={"run_id": run, "tool_call": {"name": name, "arguments": args}})
    assert r.status_code == 200, r.text
    return r.json()


def test_strategy_state_and_latch_move_to_another_process(tmp_path):
    a = _app(tmp_path, "TEH")
    with TestClient(a) as ca:
        assert _check(ca, "r", "delete_note", id=1)["decision"] == "REJECT"
        assert _check(ca, "r", "read_note")["decision"] == "ALLOW"
        b = _app(tmp_path, "TEH", store=a.state.store)
        with TestClient(b) as cb:  # never saw run r: rebuilt from the store, the halted tool included
            assert _check(cb, "r", "delete_note", id=2)["decision"] == "REJECT"
            assert "halted earlier" in _check(cb, "r", "delete_note", id=3)["message"]
            assert _check(cb, "r", "format_disk")["decision"] == "HALT"
        # a's state is stale (b decided 3 inputs): rebuilt, so the HALT latched in b holds here
        b2 = _check(ca, "r", "read_note")
        assert b2["decision"] == "HALT" and b2["stop"] is True


def test_an_escalation_of_a_run_halted_meanwhile_cannot_be_approved(tmp_path):
    with TestClient(_app(tmp_path)) as c:
        esc = _check(c, "h", "transfer_funds", amount=5)
        assert esc["decision"] == "ESCALATE" and [v["guard"] for v in esc["verdicts"]] == ["rules"]
        assert _check(c, "h", "format_disk")["decision"] == "HALT"
        r = c.post("/v1/approvals", headers=APPROVER.headers, json={
            "decision_id": esc["decision_id"], "run_id": "h", "approved": True,
            "tool_call": {"name": "transfer_funds", "arguments": {"amount": 5}}})
        assert r.status_code == 200 and r.json()["decision"] == "HALT" and not r.json()["allowed"]


def test_a_failed_audit_write_leaves_no_state(tmp_path):
    app = _app(tmp_path)
    with TestClient(app) as c:
        assert _check(c, "f", "read_note")["decision"] == "ALLOW"
        svc = app.state.service
        real = svc.store.arecord

        async def broken(*a, **k):
            raise OSError("disk full")

        svc.store.arecord = broken
        r = c.post("/v1/check", headers=AUTH, json={"run_id": "f", "tool_call": {"name": "format_disk"}})
        assert r.status_code == 503 and "decision" not in r.json()
        assert app.state.runs.peek("f") is None  # the HALT that was never stored is not remembered
        svc.store.arecord = real
        assert _check(c, "f", "read_note")["decision"] == "ALLOW"
        assert [d["decision"] for d in app.state.store.decisions(run_id="f")] == ["ALLOW", "ALLOW"]


def test_tool_checks_of_an_idle_run_are_rebuilt_not_refused(tmp_path):
    """Steps and signals of an expired run are 410; /v1/check (whose run defaults to "default") is decided
    on the run rebuilt from the store: never new, its latched HALT kept."""
    now = [1000.0]
    s = ServerSettings(token=TOKEN, state_dir=str(tmp_path / "s"), run_ttl_s=10)
    app = create_app(s)
    app.state.runs.clock = lambda: now[0]
    with TestClient(app) as c:
        body = {"tool_call": {"name": "rent_car"}, "metadata": {"user_info": {"age": 30, "domestic": True,
                                                                            "dr_license": True, "vip": False}}}
        first = c.post("/v1/check", headers=AUTH, json=body).json()["decision"]
        now[0] += 11
        c.post("/v1/check", headers=AUTH, json={"run_id": "other", **body})  # the sweep lets "default" go
        from agentguard.server.binding import own_default

        assert app.state.runs.gone_why(own_default("token")) is not None  # the legacy token's own "default"
        r = c.post("/v1/check", headers=AUTH, json=body)
        assert r.status_code == 200 and r.json()["decision"] == first


def test_a_stale_escalation_cannot_be_answered(tmp_path):
    # red team: an ESCALATE stayed approvable forever (approve reads the run without expiry); an answer
    # after approval_ttl_s is 410 and stores nothing, so the agent must ask again in the current context
    app = _app(tmp_path)
    with TestClient(app) as c:
        esc = _check(c, "s", "transfer_funds", amount=5)
        answer = {"decision_id": esc["decision_id"], "run_id": "s", "approved": True,
                  "tool_call": {"name": "transfer_funds", "arguments": {"amount": 5}}}
        assert c.post("/v1/approvals", headers=APPROVER.headers,
                      json={**answer, "run_id": "other"}).status_code == 409  # another run's escalation
        n = app.state.store.count()
        runs = app.state.runs
        real = runs.clock
        runs.clock = lambda: real() + app.state.settings.approval_ttl_s + 1
        r = c.post("/v1/approvals", headers=APPROVER.headers, json=answer)
        assert r.status_code == 410 and "expired" in r.json()["error"] and "decision" not in r.json()
        assert app.state.store.count() == n  # nothing decided, nothing stored
        runs.clock = real
        ok = c.post("/v1/approvals", headers=APPROVER.headers, json=answer)
        assert ok.status_code == 200 and ok.json()["allowed"] is True
