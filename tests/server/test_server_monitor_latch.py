"""The monitor's latched HALT survives other runs streaming past every bounded memory: the threshold
monitor's own (capacity lowered here from 10,000) and the service's run memory (lowered from 100,000).
An evicted run comes back HALTED (replayed from the audit store), a run that was fine comes back with
its memory replayed (not HALT for having been evicted, not a new run)."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

from agentguard.calibration import ThresholdMonitor  # noqa: E402
from agentguard.server.app import create_app  # noqa: E402
from agentguard.server.guards import ServiceGuards, default_guards  # noqa: E402
from agentguard.server.settings import ServerSettings  # noqa: E402

TOKEN = "monitor-latch-token-1"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
OTHERS = 40  # past the monitor's capacity (5), within its tombstones (10 x capacity)
MORE = 300  # past its tombstones too


def _signal(c, run, score):
    r = c.post(f"/v1/runs/{run}/signals", headers=AUTH, json={"signals": {"score": score}})
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.parametrize("service_runs", [100_000, 5])
def test_a_halted_run_stays_halted_after_other_runs_stream_past(tmp_path, service_runs):
    settings = ServerSettings(token=TOKEN, state_dir=str(tmp_path / "s"), max_runs=service_runs)
    monitor = ThresholdMonitor(0.5, max_runs=5)
    g = default_guards(settings)
    app = create_app(settings, ServiceGuards(tool=g.tool, step=g.step, signal=monitor))
    with TestClient(app) as c:
        assert _signal(c, "victim", 0.9)["decision"] == "ALLOW"
        assert _signal(c, "victim", 0.2)["decision"] == "HALT"
        assert _signal(c, "steady", 0.9)["decision"] == "ALLOW"
        for i in range(OTHERS):
            assert _signal(c, f"other-{i}", 0.9)["decision"] == "ALLOW"
        assert monitor._runs.evicted("victim") or "victim" not in monitor._runs  # the monitor let it go
        if service_runs < OTHERS:
            assert app.state.runs.evicted("victim")  # so did the service
        for score in (0.99, 0.95):
            b = _signal(c, "victim", score)
            assert b["decision"] == "HALT" and b["stop"] is True
        b = _signal(c, "steady", 0.9)
        # rebuilt by replay: the monitor's second step of this run, not a first step of a new run
        assert b["decision"] == "ALLOW" and b["numbers"]["step"] == 2.0
        assert _signal(c, "steady", 0.1)["decision"] == "HALT"
        for i in range(MORE):
            _signal(c, f"more-{i}", 0.9)
        for run in ("victim", "steady"):
            assert _signal(c, run, 0.99)["decision"] == "HALT"
    # a fresh process on the same store: the halted runs are still halted
    fresh = create_app(settings, ServiceGuards(tool=g.tool, step=g.step, signal=ThresholdMonitor(0.5, max_runs=5)),
                       store=None)
    with TestClient(fresh) as c:
        for run in ("victim", "steady"):
            assert _signal(c, run, 0.99)["decision"] == "HALT"
        assert _signal(c, "other-7", 0.9)["numbers"]["step"] == 2.0


def test_a_monitor_that_cannot_be_rebuilt_fails_closed(tmp_path):
    """When the stored inputs cannot bring the guard back (here: the store lost them), the guard's
    RunEvicted is the fail-closed HALT, never ALLOW."""
    settings = ServerSettings(token=TOKEN, state_dir=str(tmp_path / "s"))
    monitor = ThresholdMonitor(0.5, max_runs=2)
    g = default_guards(settings)
    app = create_app(settings, ServiceGuards(tool=g.tool, step=g.step, signal=monitor))
    with TestClient(app) as c:
        assert _signal(c, "victim", 0.9)["decision"] == "ALLOW"
        for i in range(5):
            _signal(c, f"o{i}", 0.9)
        svc = app.state.service
        svc.replay_guard = lambda kind, guard, run_id: None  # replay brings nothing back
        b = _signal(c, "victim", 0.9)
        assert b["decision"] == "HALT" and "RunEvicted" in b["reason"]
