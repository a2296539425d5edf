"""The run versions of a SQLite audit file (server/writer.py ``RunSlots``): every writer bumps a shared
counter per run after committing its input, so a worker that holds a run and finds the counter unchanged
decides without reading the run's tail from the store. Two services on one file stand for two workers:
what one decides (a latched HALT) is seen by the other, the counter spares the read only when nothing
was stored since, and a writer that does not bump (killed between commit and bump, another version)
cannot make a stale state decide (``(run_id, idx)`` is unique: the decision is taken again on the
rebuilt run)."""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("fastapi")
pytest.importorskip("httpx")
pytest.importorskip("cryptography")

from fastapi.testclient import TestClient  # noqa: E402

from agentguard.core.audit import AuditRecord  # noqa: E402
from agentguard.core.guard import BaseGuard  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402
from agentguard.server.app import create_app  # noqa: E402
from agentguard.server.audit import AuditStore  # noqa: E402
from agentguard.server.chain import verify  # noqa: E402
from agentguard.server.guards import ServiceGuards, default_guards  # noqa: E402
from agentguard.server.settings import ServerSettings  # noqa: E402

TOKEN = "run-versions-token-12"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _inp(store: AuditStore, run: str, idx: int) -> int | None:
    rec = AuditRecord(time=time.time(), run_id=run, decision="ALLOW", reason="r", guard="g", kind="check",
                      input_digest=f"{idx:064x}")
    return store.record(rec, inp={"idx": idx, "kind": "check", "payload": {"input": {}, "state": {}}})


def test_stores_on_one_file_share_the_run_versions(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'a.sqlite'}"
    a, b = AuditStore(url), AuditStore(url)
    try:
        assert a.run_version("r1") == b.run_version("r1") == 0
        v = _inp(a, "r1", 0)
        assert v == 2 and a.run_version("r1") == b.run_version("r1") == 2  # a slot's word moves on by 2 per write
        assert _inp(b, "r1", 1) == 4 and a.run_version("r1") == 4
        assert a.run_version("r2") in (0, 4)  # another run: its own slot (or r1's, sharing it)
        assert a.record(AuditRecord(time=time.time(), run_id="r1", decision="ALLOW", reason="", guard="g")) is None
        assert a.run_version("r1") == 4  # a decision without an input row is no input of the run
        version, view = b.run_slot("r1")
        assert version == 4 and view is not None and (view.n, view.marks, view.trivial) == (2, (1, 2, 1), True)
    finally:
        a.close(), b.close()
    monkeypatch.setenv("AGENTGUARD_SQLITE_FLOCK", "0")  # no write lock (diagnostics): no versions either
    c = AuditStore(f"sqlite:///{tmp_path / 'c.sqlite'}")
    try:
        assert c.run_version("r1") is None and _inp(c, "r1", 0) is None
    finally:
        c.close()


def _apps(tmp_path):
    settings = [ServerSettings(token=TOKEN, state_dir=str(tmp_path / n), db_url=f"sqlite:///{tmp_path / 'shared.sqlite'}",
                               audit_key_file=str(tmp_path / "k.pem")) for n in ("a", "b")]
    tool = ToolRuleGuard(allow=["read_file", "shutdown"], halt=["shutdown"])
    return [create_app(s, ServiceGuards(tool=tool, step=default_guards(s).step, signal=default_guards(s).signal))
            for s in settings]


def _check(c, run, tool):
    r = c.post("/v1/check", headers=AUTH, json={"run_id": run, "tool_call": {"name": tool, "arguments": {}}})
    assert r.status_code == 200, r.text
    return r.json()["decision"]


def _count_tail_reads(app, monkeypatch):
    store = app.state.store
    n = [0]
    real = store.run_tail

    def counted(*a, **k):
        n[0] += 1
        return real(*a, **k)

    monkeypatch.setattr(store, "run_tail", counted)
    return n


def test_a_halt_latched_by_one_worker_is_seen_by_the_other(tmp_path, monkeypatch):
    app_a, app_b = _apps(tmp_path)
    reads = _count_tail_reads(app_a, monkeypatch)
    with TestClient(app_a) as a, TestClient(app_b) as b:
        assert _check(a, "r", "read_file") == "ALLOW"
        assert _check(a, "r", "read_file") == "ALLOW"
        assert _check(a, "r", "read_file") == "ALLOW"
        assert reads[0] == 0  # held and unchanged in the store: decided without reading it
        assert _check(b, "r", "read_file") == "ALLOW"
        assert _check(b, "r", "shutdown") == "HALT"
        assert _check(a, "r", "read_file") == "HALT"  # the other worker's inputs were read: the latch holds
        assert reads[0] == 1
        assert _check(a, "r", "read_file") == "HALT" and reads[0] == 1
        store = app_a.state.store
        assert [r["idx"] for r in store.run_inputs("r")] == list(range(7))
    s = AuditStore(f"sqlite:///{tmp_path / 'shared.sqlite'}")
    try:
        assert verify(s.engine).ok
    finally:
        s.close()


def test_a_writer_that_does_not_bump_cannot_make_a_stale_decision(tmp_path, monkeypatch):
    app_a, app_b = _apps(tmp_path)
    with TestClient(app_a) as a, TestClient(app_b) as b:
        assert _check(a, "r", "read_file") == "ALLOW"
        app_b.state.store._writer.slots = None  # b stands for a writer that commits but never bumps
        assert _check(b, "r", "shutdown") == "HALT"
        assert app_a.state.store.run_version("r") == 2  # unchanged: a's state looks current, and is not
        # a decides on its stale state, its input takes index 1 (b's) and is refused; decided again on the
        # run rebuilt from the store, the latched HALT holds
        assert _check(a, "r", "read_file") == "HALT"
        rows = app_a.state.store.run_inputs("r")
        assert [r["idx"] for r in rows] == [0, 1, 2]
        assert [r["payload"]["decision"] for r in rows] == ["ALLOW", "HALT", "HALT"]
        assert app_a.state.service.rebuilds >= 2  # first sight, then after the refused write


def test_near_its_expiry_the_store_decides(tmp_path, monkeypatch):
    app_a, _ = _apps(tmp_path)
    reads = _count_tail_reads(app_a, monkeypatch)
    svc = app_a.state.service
    with TestClient(app_a) as a:
        r = a.post("/v1/runs/e/signals", headers=AUTH, json={"signals": {"score": 0.1}})
        assert r.status_code == 200 and reads[0] == 0
        later = time.time() + svc.settings.run_ttl_s + 60
        monkeypatch.setattr(svc, "now", lambda: later)  # the service's clock, past the run's expiry
        r = a.post("/v1/runs/e/signals", headers=AUTH, json={"signals": {"score": 0.1}})
        assert r.status_code == 410 and reads[0] == 1  # read from the store, which says expired


# -- catching up from the slot alone (RunSlots.view, deciding.slot_covers) ---------------------------------

def test_a_slot_is_one_runs_consistent_view_or_none(tmp_path):
    from agentguard.server.runslots import RunSlots

    s = RunSlots(str(tmp_path / "x.runstate"))
    try:
        assert s.view("r") == (0, None)  # never written: no view
        v = s.write("r", 0, "check", 10.0, True)
        assert s.view("r") == (v, (1, 10.0, (1, 1, 1), True))  # first sight: every kind marked (nothing known before)
        v = s.write("r", 1, "check", 11.0, True)
        v = s.write("r", 2, "signal", 12.0, False)
        assert s.view("r")[1] == (3, 12.0, (1, 2, 3), False)
        v = s.write("r", 5, "check", 13.0, True)  # not contiguous (a writer that wrote no slot): marks restart
        assert s.view("r")[1] == (6, 13.0, (6, 6, 6), True)
        o, k = RunSlots.key("r")
        s._mm[o:o + 8] = (v + 1).to_bytes(8, "little")  # a writer inside (odd word): no view
        assert s.view("r") == (v + 1, None)
        assert s.write("r", 6, "check", 14.0, True) == v + 4  # the next write starts even again
        other = next(f"r{i}" for i in range(1 << 20) if RunSlots.key(f"r{i}")[0] == o)
        assert s.view(other) == (v + 4, None)  # another run sharing the slot: not its view, the same version
        s.write(other, 0, "check", 15.0, True)
        assert s.view("r") == (v + 6, None) and s.view(other)[1] is not None
    finally:
        s.close()


def _step(c, run):
    r = c.post(f"/v1/runs/{run}/steps", headers=AUTH, json={"state": {"x": 1}, "action": "noop"})
    assert r.status_code == 200, r.text
    return r.json()["decision"]


def test_checks_alternating_between_workers_need_no_read_and_a_step_or_a_halt_does(tmp_path, monkeypatch):
    app_a, app_b = _apps(tmp_path)
    reads_a, reads_b = _count_tail_reads(app_a, monkeypatch), _count_tail_reads(app_b, monkeypatch)
    with TestClient(app_a) as a, TestClient(app_b) as b:
        for c in (a, b):
            assert _check(c, "r", "read_file") == "ALLOW"  # first sight: rebuilt (not a tail read)
        for _ in range(5):
            assert _check(a, "r", "read_file") == "ALLOW" and _check(b, "r", "read_file") == "ALLOW"
            assert _check(a, "r", "nope") == "REJECT"
        assert reads_a[0] == reads_b[0] == 0  # memoryless check guards, nothing latched: the slot says all
        st = app_a.state.service.runs.peek("r")
        assert st.stored == len(app_a.state.store.run_inputs("r")) == 17
        assert _step(b, "r") and _check(a, "r", "read_file") == "ALLOW"
        assert reads_a[0] == 1  # a step was stored by the other: its trace must grow, the store is read
        assert len(app_a.state.service.runs.peek("r").trace) == 1
        assert _check(b, "r", "shutdown") == "HALT"
        assert _check(a, "r", "read_file") == "HALT" and reads_a[0] == 2  # the latch is not in the slot: read


_OPS = st.lists(st.tuples(st.integers(0, 1), st.sampled_from(["read_file", "nope", "shutdown", "step", "signal-hi",
                                                                 "signal-lo"])), min_size=1, max_size=14)


def _op(c, run, op):
    if op == "step":
        r = c.post(f"/v1/runs/{run}/steps", headers=AUTH, json={"state": {"x": 1}, "action": "noop"})
    elif op.startswith("signal"):
        r = c.post(f"/v1/runs/{run}/signals", headers=AUTH, json={"signals": {"score": 0.9 if op == "signal-hi" else 0.1}})
    else:
        r = c.post("/v1/check", headers=AUTH, json={"run_id": run, "tool_call": {"name": op, "arguments": {}}})
    assert r.status_code == 200, r.text
    return r.json()["decision"]


class _TraceParity(BaseGuard):
    """A step guard whose answer depends on the run's trace (what a worker must have caught up on)."""

    name = "trace-parity"

    def check(self, context, proposal):
        from agentguard.core.types import Decision, Verdict

        return Verdict(Decision.ALLOW if len(context.trace) % 2 == 0 else Decision.REJECT, "parity", self.name)


class _SignalCount(BaseGuard):
    """A signal guard with per-run memory (``end_run``): every third signal of a run is refused."""

    name = "signal-count"

    def __init__(self):
        self.seen = {}

    def end_run(self, run_id):
        self.seen.pop(run_id, None)

    def check(self, context, proposal):
        from agentguard.core.types import Decision, Verdict

        n = self.seen[context.run_id] = self.seen.get(context.run_id, 0) + 1
        return Verdict(Decision.REJECT if n % 3 == 0 else Decision.ALLOW, "count", self.name)


def _history_apps(tmp_path):
    settings_ = [ServerSettings(token=TOKEN, state_dir=str(tmp_path / n), db_url=f"sqlite:///{tmp_path / 'shared.sqlite'}",
                                audit_key_file=str(tmp_path / "k.pem")) for n in ("a", "b")]
    return [create_app(s, ServiceGuards(tool=ToolRuleGuard(allow=["read_file", "shutdown"], halt=["shutdown"]),
                                        step=_TraceParity(), signal=_SignalCount())) for s in settings_]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(runs=st.lists(_OPS, min_size=1, max_size=3))
def test_property_two_workers_on_one_file_decide_as_one(tmp_path_factory, runs):
    """Any interleaving of checks, steps and signals through two workers of one SQLite file (each catching
    up from the run slots, or from the store where the slot does not say enough) is decided as one worker
    decides the same inputs in the same order; the step and signal guards answer from the run's history."""
    app_a, app_b = _history_apps(tmp_path_factory.mktemp("two"))
    ref = _history_apps(tmp_path_factory.mktemp("ref"))[0]
    with TestClient(app_a) as a, TestClient(app_b) as b, TestClient(ref) as r:
        for i, ops in enumerate(runs):
            for side, op in ops:
                assert _op((a, b)[side], f"p{i}", op) == _op(r, f"p{i}", op), (i, side, op)
