"""A group-commit batch refused for a uniqueness conflict (server/writer.py ``_commit``): only the requests
whose rows conflict fail (another worker or replica stored that run's input first, or an earlier request of
the same batch holds the key); on SQLite the others are committed together in ONE more transaction (before,
every item of the batch was written in its own transaction, each with its fsync, and the writer's
connection was dropped after each conflict). The chain stays whole and verifies."""

from __future__ import annotations

import time

import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentguard.core.audit import AuditRecord
from agentguard.server.audit import AuditStore
from agentguard.server.chain import verify


def _rec(run: str, tag: str) -> AuditRecord:
    return AuditRecord(time=time.time(), run_id=run, decision="ALLOW", reason=tag, guard="g", numbers={},
                       kind="check", input_digest="0" * 64)


def _item(run: str, idx: int, tag: str, scope: str | None = None) -> tuple[list, object]:
    inp = {"idx": idx, "kind": "check", "payload": {"tag": tag}}
    idem = None if scope is None else {"scope": scope, "request_digest": "d", "ts": 0.0, "run_id": run,
                                       "decision_id": "x", "status": 200, "response": "{}"}
    rows = AuditStore._rows(_rec(run, tag), None, inp, idem)
    if idem is not None:
        idem["decision_id"] = rows[0][1]["decision_id"]
    return rows, (lambda _err: None)


def _counting(store: AuditStore) -> list[int]:
    w = store._writer
    calls: list[int] = []
    real = w._write

    def write(batch):  # one call = one transaction (with its retries)
        calls.append(len(batch))
        return real(batch)

    w._write = write  # type: ignore[method-assign]
    return calls


def _store(tmp_path, name="a") -> AuditStore:
    return AuditStore(f"sqlite:///{tmp_path / f'{name}.sqlite'}", chain=True)


def _tags(store: AuditStore) -> set[str]:
    return {d["reason"] for d in store.decisions(limit=10_000)}


def test_a_conflicting_item_fails_alone_and_the_rest_commit_in_one_transaction(tmp_path):
    s = _store(tmp_path)
    s.record(_rec("taken", "first"), inp={"idx": 0, "kind": "check", "payload": {"tag": "first"}})
    s.record(_rec("keyed", "k0"), inp={"idx": 0, "kind": "check", "payload": {}},
             idem={"scope": "S", "request_digest": "d", "ts": 0.0, "run_id": "keyed", "decision_id": "y",
                   "status": 200, "response": "{}"})
    batch = [_item("a", 0, "a0"), _item("taken", 0, "clash"), _item("b", 0, "b0"), _item("c", 0, "c0", scope="S"),
             _item("d", 0, "d0")]
    calls = _counting(s)
    conn_before = s._writer._dbapi
    errors = s._writer._commit(batch)
    assert [type(e).__name__ if e is not None else None for e in errors] == [
        None, "IntegrityError", None, "IntegrityError", None]
    assert all(isinstance(e, sa.exc.IntegrityError) for e in errors if e is not None)  # the service retries these
    assert calls == [5, 3], calls  # the refused batch, then the three others together: not five more transactions
    assert s._writer._dbapi is conn_before  # a taken key does not cost the writer its connection
    assert _tags(s) == {"first", "k0", "a0", "b0", "d0"}
    assert [r["payload"] for r in s.run_inputs("taken")] == [{"tag": "first"}]
    s.close()
    v = AuditStore(s.url, chain=True)
    rep = verify(v.engine)
    v.close()
    assert rep.ok and rep.chained == 5, rep.problems[:5]


def test_the_same_key_twice_in_one_batch_fails_the_later_item(tmp_path):
    s = _store(tmp_path)
    calls = _counting(s)
    errors = s._writer._commit([_item("r", 0, "one"), _item("r", 0, "two"), _item("q", 0, "q")])
    assert [e is None for e in errors] == [True, False, True] and calls == [3, 2]
    assert _tags(s) == {"one", "q"}
    s.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stored=st.sets(st.tuples(st.sampled_from("rst"), st.integers(0, 2)), max_size=4),
       batch=st.lists(st.tuples(st.sampled_from("rst"), st.integers(0, 2)), min_size=1, max_size=8))
def test_exactly_the_conflicting_items_fail(tmp_path_factory, stored, batch):
    """Property: whatever keys are stored and however a batch repeats them, the items that fail are exactly
    those whose ``(run_id, idx)`` was stored before or held by an earlier item of the batch (what writing
    the items one by one gives), every other item is stored, and the chain verifies."""
    tmp = tmp_path_factory.mktemp("conflicts")
    s = _store(tmp)
    for run, idx in sorted(stored):
        s.record(_rec(run, f"pre-{run}{idx}"), inp={"idx": idx, "kind": "check", "payload": {}})
    items = [_item(run, idx, f"b{i}") for i, (run, idx) in enumerate(batch)]
    errors = s._writer._commit(items)
    seen = set(stored)
    expect = []
    for key in batch:
        expect.append(key in seen)
        seen.add(key)
    assert [e is not None for e in errors] == expect
    assert _tags(s) == {f"pre-{r}{i}" for r, i in stored} | {f"b{i}" for i, bad in enumerate(expect) if not bad}
    s.close()
    v = AuditStore(s.url, chain=True)
    rep = verify(v.engine)
    v.close()
    assert rep.ok and rep.chained == len(stored) + expect.count(False), rep.problems[:5]


def test_an_unreadable_store_falls_back_to_one_transaction_per_item(tmp_path, monkeypatch):
    s = _store(tmp_path)
    s.record(_rec("taken", "first"), inp={"idx": 0, "kind": "check", "payload": {}})
    monkeypatch.setattr(s._writer, "_taken", lambda batch: None)
    calls = _counting(s)
    errors = s._writer._commit([_item("a", 0, "a0"), _item("taken", 0, "clash"), _item("b", 0, "b0")])
    assert [e is None for e in errors] == [True, False, True] and calls == [3, 1, 1, 1]
    s.close()
