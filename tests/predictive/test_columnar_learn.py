"""The columnar engine learns the row engine's DTMC from the same Parquet traces (issue 32).

Generated traces cover runs cut across batches and files, one run id in two separate blocks, rows
without a run id, empty-run markers (step -1), steps without a state, invalid JSON, infeasible
states and states that fall back to the row path; either both engines learn the same model (same
states in the same order, counts, initial distribution, traces) or both refuse with InputError
(with several bad rows the message may name a different one: the row engine reports a run's
missing state when the run ends, the columnar engine a batch's bad rows first).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentguard.core.errors import InputError
from agentguard.predictive.columnar_learn import learn_parquet_columnar
from agentguard.predictive.learn import DTMCLearner
from agentguard.spec.predicates import Abstraction, load_spec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SPEC = EXAMPLES / "microwave_spec.yaml"


def _obj(kind: str, **kw: object) -> dict:
    return {"objectType": kind, **kw}


STATE = st.builds(
    lambda opened, on, fork_in, food_in, extra: {"objects": [
        _obj("Microwave", isOpen=opened, isToggled=on, distance=extra),
        _obj("Fork", parentReceptacles=["Microwave"] if fork_in else ["CounterTop"]),
        _obj("Potato", parentReceptacles=["Microwave"] if food_in else None)]},
    st.booleans(), st.booleans(), st.booleans(), st.booleans(), st.one_of(st.floats(0, 3), st.none(), st.text(max_size=3)))
# states the columnar plan leaves to the row path (escapes, duplicate keys, a dict for a list, an int flag)
ODD_OK = st.sampled_from(['{"objects": [], "objects": [1]}', '{"objects":[{"objectType":"Fork",'
                          '"parentReceptacles":["Microwave"]},{"objectType":"Microwave","isToggled":1}]}',
                          '{"objects":[{"objectType":"Micro\\u0077ave","isOpen":true}]}', '{"objects": {"a": 1}}',
                          '{"objects":[{"objectType":"Fork","parentReceptacles":"Microwave"}]}'])
# rows both engines refuse: no state, invalid JSON, a null state, a missing list, an infeasible state
ODD_ERR = st.sampled_from([None, "{bad", "null", '{"things": []}',
                           '{"objects":[{"objectType":"Microwave","isOpen":true,"isToggled":true}]}'])
ROW = st.tuples(st.sampled_from(["r1", "r2", "r3", None]), st.one_of(STATE, STATE, ODD_OK), st.booleans())


def _write(folder: Path, rows: list, cuts: list[int], group: int) -> None:
    """Rows as the store writes them: each block of adjacent rows of one run numbered 0, 1, 2, ...
    (a run id again in a later block is another trace); a marked row that is a block of its own
    is a run without steps (step -1)."""
    ids, steps, states = [], [], []
    for i, (rid, state, marker) in enumerate(rows):
        alone = (i == 0 or rows[i - 1][0] != rid) and (i + 1 == len(rows) or rows[i + 1][0] != rid)
        k = 0 if i == 0 or rows[i - 1][0] != rid else steps[-1] + 1
        ids.append(rid)
        steps.append(-1 if marker and alone else k)
        states.append(json.dumps(state, separators=(",", ":")) if isinstance(state, dict) else state)
    tbl = pa.table({"run_id": pa.array(ids, pa.string()), "step": pa.array(steps, pa.int32()),
                    "state": pa.array(states, pa.string())})
    bounds = sorted({0, len(rows), *[c % (len(rows) + 1) for c in cuts]})
    for i, (a, b) in enumerate(zip(bounds, bounds[1:])):
        pq.write_table(tbl.slice(a, b - a), folder / f"{i:03d}.parquet", row_group_size=group)


def _learn(engine: str, folder: Path, ab: Abstraction, batch: int) -> DTMCLearner | str:
    learner = DTMCLearner(ab, alpha=1)
    try:
        if engine == "rows":
            learner.add_file(str(folder))
        else:
            learn_parquet_columnar(learner, folder, batch_rows=batch)
        return learner
    except InputError as exc:
        return f"InputError: {exc}"


def assert_same(a: DTMCLearner | str, b: DTMCLearner | str) -> None:
    if isinstance(a, str) or isinstance(b, str):
        assert isinstance(a, str) and isinstance(b, str), (a, b)
        return
    assert a.states == b.states
    assert a.n_traces == b.n_traces
    assert np.array_equal(a.initial_counts, b.initial_counts)
    if a.n:
        assert (a.counts != b.counts).nnz == 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(rows=st.lists(ROW, min_size=1, max_size=30), cuts=st.lists(st.integers(0, 40), max_size=3),
       group=st.integers(1, 8), batch=st.sampled_from([1, 2, 5, 1 << 16]),
       bad=st.one_of(st.none(), st.tuples(st.integers(0, 30), ODD_ERR)))
def test_columnar_learns_the_row_engines_model(rows: list, cuts: list[int], group: int, batch: int,
                                               bad: tuple | None) -> None:
    ab = load_spec(SPEC)
    if bad is not None:
        rows = [*rows[: bad[0]], (rows[0][0], bad[1], False), *rows[bad[0]:]]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _write(folder, rows, cuts, group)
        assert_same(_learn("rows", folder, ab, batch), _learn("columnar", folder, ab, batch))


def test_same_model_on_the_example_and_no_fallback() -> None:
    """The example's traces as Parquet: the same DTMC, every step answered column-wise."""
    ab = load_spec(SPEC)
    lines = [json.loads(x) for x in (EXAMPLES / "microwave_traces.jsonl").read_text().splitlines() if x.strip()]
    rows = [(d.get("run_id", str(i)), s["state"], False) for i, d in enumerate(lines) for s in d["steps"]]
    with tempfile.TemporaryDirectory() as tmp:
        _write(Path(tmp), rows, [len(rows) // 3, len(rows) // 2], 500)
        a = DTMCLearner(ab, alpha=1).add_file(tmp)
        b = DTMCLearner(ab, alpha=1).add_file(tmp, engine="columnar")
        assert_same(a, b)
        assert b.last_stats["fallback_rows"] == 0 and b.last_stats["rows"] == len(rows)
        ma, mb = a.model(), b.model()
        assert ma.state_names == mb.state_names and (ma.matrix != mb.matrix).nnz == 0


def test_engine_errors_are_one_line() -> None:
    ab = load_spec(SPEC)
    with pytest.raises(InputError, match="engine must be"):
        DTMCLearner(ab).add_file("x.parquet", engine="gpu")
    with pytest.raises(InputError, match="reads Parquet"):
        DTMCLearner(ab).add_file(str(EXAMPLES / "microwave_traces.jsonl"), engine="columnar")
