"""RunMemory never treats a run it let go as new, even once its tombstone is pushed out of the exact bound
(session 26: ThresholdMonitor(max_runs=1) forgot run A's latched alarm after 11 other runs and ALLOWed A)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.calibration import ThresholdMonitor
from agentguard.core.guard import run_guard
from agentguard.core.runs import RunEvicted, RunMemory, _Forgotten
from agentguard.core.types import Context


def test_a_latched_alarm_survives_the_tombstone_bound() -> None:
    m = ThresholdMonitor(0.5, max_runs=1)
    assert m.check(Context(run_id="A"), 0.1).decision.name == "HALT"
    for i in range(200):  # past the capacity (1), the exact tombstones (10) and the filter's 1.5% regime (70)
        try:
            m.check(Context(run_id=f"x{i}"), 0.9)
        except RunEvicted:  # a new id the filter mistakes for a forgotten one: refused (fail closed)
            pass
    with pytest.raises(RunEvicted):
        m.check(Context(run_id="A"), 0.9)
    assert run_guard(m, Context(run_id="A"), 0.9).decision.name == "HALT"


def test_overflowed_tombstones_are_rebuilt_or_refused_and_end_run_restarts_them() -> None:
    rebuilt: list[str] = []
    m: RunMemory[int] = RunMemory(lambda: 0, 1, tombstones=2)
    m.set("a", 5)
    for i in range(20):
        m.set(f"o{i}", 1)
    assert "a" not in m._gone and m.evicted("a")  # only the filter remembers it now
    with pytest.raises(RunEvicted, match="tombstone overflowed"):
        m.get("a")
    m.end_run("a")  # forgotten on purpose: may start over
    assert not m.evicted("a") and m.get("a") == 0
    r: RunMemory[int] = RunMemory(lambda: 0, 1, tombstones=2, rebuild=lambda rid: rebuilt.append(rid) or 7)
    r.set("a", 5)
    for i in range(20):
        r.set(f"o{i}", 1)
    assert r.get("a") == 7 and rebuilt == ["a"]
    c = r.__getstate__()["_forgotten"]
    assert c is not r._forgotten and c.arr == r._forgotten.arr  # copies carry their own filter


@settings(max_examples=150, deadline=None)
@given(ops=st.lists(st.tuples(st.sampled_from(["get", "set", "end"]), st.integers(0, 40)), max_size=300),
       cap=st.integers(1, 4), tombs=st.integers(0, 5))
def test_a_run_let_go_is_never_started_as_new(ops, cap, tombs) -> None:
    """Against an exact model that remembers every id forever: an id evicted (and not ended since) is never
    handed a new state; a get that creates one is for an id never seen, or ended (or a filter false positive,
    which refuses instead: allowed by the guarantee, fail closed)."""
    m: RunMemory[int] = RunMemory(lambda: 0, cap, tombstones=tombs)
    held: dict[int, int] = {}
    let_go: set[int] = set()
    for op, rid in ops:
        if op == "end":
            m.end_run(rid)
            let_go.discard(rid)
            held.pop(rid, None)
        elif op == "set":
            m.set(rid, rid + 1)
            let_go.discard(rid)
            held[rid] = rid + 1
        else:
            try:
                got = m.get(rid)
            except RunEvicted:
                continue
            if rid in let_go:
                pytest.fail(f"run {rid} was let go and started over as new")
            held.setdefault(rid, got)
            assert got == held[rid]
        for gone in set(held) - set(m):
            let_go.add(gone)
            held.pop(gone)


def test_the_filter_has_no_false_negative_and_the_stated_false_positive_rate() -> None:
    t = 500
    f = _Forgotten(64 * t)
    added = [f"run-{i}" for i in range(7 * t)]
    for a in added:
        f.add(a)
    assert all(a in f for a in added)
    fresh = [f"new-{i}" for i in range(20_000)]
    rate = sum(x in f for x in fresh) / len(fresh)
    assert rate < 0.015 + 0.005  # (1 - e^{-35/64})^5 = 0.0133, plus Monte-Carlo slack (sd ~0.0008)
