"""Issue 14: streamed learning (JSONL, Parquet, DuckDB counts) gives today's model exactly."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from agentguard.core.errors import InputError
from agentguard.core.types import read_traces
from agentguard.predictive.learn import DTMCLearner
from agentguard.spec.expr import Expr
from agentguard.spec.predicates import load_spec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TRACES, SPEC = EXAMPLES / "microwave_traces.jsonl", EXAMPLES / "microwave_spec.yaml"


def _reference(monkeypatch, path=TRACES):
    """The learner as it was before issue 14: whole file as Trace objects, the tree interpreter."""
    ab = load_spec(SPEC)
    with monkeypatch.context() as m:
        m.setattr(Expr, "evaluate", Expr.interpret)
        m.setattr(type(ab), "abstractor", lambda self: self.abstract)
        return DTMCLearner(ab, alpha=1).add(read_traces(str(path))).model()


def _same(a, b):
    assert a.state_names == b.state_names
    assert (a.counts != b.counts).nnz == 0
    assert abs(a.matrix - b.matrix).max() == 0
    assert a.exact == b.exact
    assert a.meta["initial_distribution"] == b.meta["initial_distribution"]
    assert a.meta["traces"] == b.meta["traces"]


def test_streamed_jsonl_learns_todays_model(monkeypatch):
    ref = _reference(monkeypatch)
    for batch in (7, 200_000):  # counting in many small batches or one
        new = DTMCLearner(load_spec(SPEC), alpha=1).add_file(str(TRACES), batch_states=batch).model()
        _same(new, ref)
    assert ref.counts.sum() > 300


def _write_parquet(path, traces):
    from agentguard.server.traces import write_parquet

    write_parquet(path, traces)


def test_parquet_store_learns_the_same_model(monkeypatch, tmp_path):
    pytest.importorskip("pyarrow")
    traces = read_traces(str(TRACES))
    folder = tmp_path / "store"
    _write_parquet(folder / "a.parquet", traces[:15])  # two ingest files, name order = ingest order
    _write_parquet(folder / "b.parquet", traces[15:])
    ref = _reference(monkeypatch)
    from agentguard.predictive import trace_stream

    for rows in (3, 16_384):  # runs cut across record batches are carried over
        learner = DTMCLearner(load_spec(SPEC), alpha=1)
        runs = trace_stream.iter_parquet_runs(folder, learner.abstraction.abstractor(), batch_rows=rows)
        _same(learner.add_runs(runs, abstracted=True).model(), ref)
    _same(DTMCLearner(load_spec(SPEC), alpha=1).add_file(str(folder)).model(), ref)
    _same(DTMCLearner(load_spec(SPEC), alpha=1).add_file(str(folder / "a.parquet")).add_file(
        str(folder / "b.parquet")).model(), ref)


def test_duckdb_counts_over_abstract_parquet_equal_the_learner(monkeypatch, tmp_path):
    pytest.importorskip("duckdb")
    from agentguard.predictive.trace_stream import abstract_parquet, duckdb_counts

    traces = read_traces(str(TRACES))
    _write_parquet(tmp_path / "raw" / "a.parquet", traces)
    ab = load_spec(SPEC)
    (tmp_path / "abs").mkdir()
    rows = abstract_parquet(tmp_path / "raw", tmp_path / "abs" / "a.parquet", ab.abstractor(), batch_rows=50)
    assert rows == sum(len(t) for t in traces)
    c = duckdb_counts(tmp_path / "abs", terminal=ab.terminal)
    model = DTMCLearner(ab, alpha=1).add_counts(c["src"], c["dst"], c["count"], c["initial"], c["runs"]).model()
    ref = _reference(monkeypatch)
    # same counts and matrix; state order may differ (DuckDB returns groups unordered)
    order = [model.state_names.index(s) for s in ref.state_names]
    assert sorted(model.state_names) == sorted(ref.state_names)
    assert np.array_equal(model.counts.toarray()[np.ix_(order, order)], ref.counts.toarray())
    assert np.allclose(model.matrix.toarray()[np.ix_(order, order)], ref.matrix.toarray(), atol=0, rtol=1e-15)
    assert model.meta["initial_distribution"] == ref.meta["initial_distribution"]


def test_streamed_reader_rejects_bad_input_like_read_traces(tmp_path):
    ab = load_spec(SPEC)
    cases = {
        "empty.jsonl": ("\n\n", "is empty"),
        "badjson.jsonl": ('{"steps": [{"state": {"objects": []}}]}\n{not json\n', "badjson.jsonl:2: not valid JSON"),
        "nosteps.jsonl": ('{"run_id": "r"}\n', "'steps' list"),
        "stepnotobj.jsonl": ('{"run_id": "r", "steps": [3]}\n', "step 0 of trace r is not an object"),
        "nostate.jsonl": ('{"run_id": "r", "steps": [{"action": null}]}\n', "trace r step 0 has no 'state'"),
        "zero.jsonl": ('{"run_id": "r", "steps": []}\n', "trace r has no steps"),
        "badstate.jsonl": ('{"run_id": "r", "steps": [{"state": {"objects": 5}}]}\n', "trace r step 0: predicate"),
    }
    for name, (text, msg) in cases.items():
        p = tmp_path / name
        p.write_text(text)
        with pytest.raises(InputError, match=msg.replace("(", r"\(")):
            DTMCLearner(ab).add_file(str(p))
    with pytest.raises(InputError, match="cannot read"):
        DTMCLearner(ab).add_file(str(tmp_path / "missing.jsonl"))
    (tmp_path / "x.parquet").write_text("not parquet")
    with pytest.raises(InputError, match="not a readable Parquet file"):
        DTMCLearner(ab).add_file(str(tmp_path / "x.parquet"))
    (tmp_path / "emptydir").mkdir()
    with pytest.raises(InputError, match="no \\*.parquet"):
        DTMCLearner(ab).add_file(str(tmp_path / "emptydir"))


def test_streaming_memory_does_not_hold_the_file(tmp_path):
    """The JSONL reader is a generator: it holds one line, so it can start before the file ends."""
    from agentguard.predictive.trace_stream import iter_jsonl_runs

    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps({"run_id": "a", "steps": [{"state": {"objects": []}}]}) + "\n{broken\n")
    it = iter_jsonl_runs(p)
    assert next(it) == ("a", [{"objects": []}])  # the first run arrives before the bad line is read
    with pytest.raises(InputError, match=":2: not valid JSON"):
        next(it)


def test_parquet_read_row_group_by_row_group_learns_the_same_model(monkeypatch, tmp_path):
    """Small row groups (5 rows) and batches (3 rows): runs cut across row groups and files are carried
    over, each batch comes from one row group, and the model is the JSONL learner's exactly."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from agentguard.predictive import trace_stream

    traces = read_traces(str(TRACES))
    _write_parquet(tmp_path / "one.parquet", traces)
    table = pq.read_table(tmp_path / "one.parquet")
    folder = tmp_path / "small-groups"
    folder.mkdir()
    half = table.num_rows // 2 + 1  # a run cut between the two files
    pq.write_table(table.slice(0, half), folder / "a.parquet", row_group_size=5)
    pq.write_table(table.slice(half), folder / "b.parquet", row_group_size=5)
    assert pq.ParquetFile(folder / "a.parquet").metadata.num_row_groups > 10
    sizes = [b.num_rows for b in trace_stream._batches(folder, ["run_id", "step", "state"], 3)]
    assert max(sizes) <= 3 and sum(sizes) == table.num_rows and sizes.count(2) > 0  # 5 = 3 + 2 per group
    ref = DTMCLearner(load_spec(SPEC), alpha=1).add_file(str(TRACES)).model()
    _same(ref, _reference(monkeypatch))
    learner = DTMCLearner(load_spec(SPEC), alpha=1)
    runs = trace_stream.iter_parquet_runs(folder, learner.abstraction.abstractor(), batch_rows=3)
    _same(learner.add_runs(runs, batch_states=11, abstracted=True).model(), ref)
    assert pa.default_memory_pool().bytes_allocated() < 1 << 20  # every batch released


# --- red team: Parquet rows whose step column disagrees with their order -----------------------------
def _rows_file(path, rows):
    """``rows``: (run_id, step, abstract-able state dict) in file order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    ids, steps, states = zip(*rows)
    pq.write_table(pa.table({"run_id": pa.array(ids, pa.string()), "step": pa.array(steps, pa.int64()),
                             "state": pa.array([json.dumps(s) for s in states], pa.string())}), path)


def _canon(learner):
    """Counts and initial counts by state name (engines register states in different orders)."""
    names, c = learner.states, learner.counts.tocoo()
    pairs = {(names[i], names[j]): float(v) for i, j, v in zip(c.row, c.col, c.data) if v}
    return pairs, {names[i]: int(n) for i, n in enumerate(learner.initial_counts) if n}


def _engines(folder, tmp_path):
    """What each engine makes of ``folder``: counts and initial counts, or the InputError text."""
    from agentguard.predictive.columnar_learn import learn_parquet_columnar
    from agentguard.predictive.trace_stream import duckdb_counts

    out = {}
    ab = load_spec(SPEC)
    for engine in ("rows", "columnar"):
        learner = DTMCLearner(ab, alpha=1)
        try:
            if engine == "rows":
                learner.add_file(str(folder))
            else:
                learn_parquet_columnar(learner, folder, batch_rows=2)
            out[engine] = _canon(learner)
        except InputError as exc:
            out[engine] = f"InputError: {exc}"
    try:  # the window engine on the same rows, abstracted in place (it orders by step itself)
        import pyarrow.parquet as pq

        t = pq.read_table(folder)
        abs_rows = [(r, s, ab.abstract(json.loads(x))) for r, s, x in zip(*(t.column(c).to_pylist() for c in ("run_id", "step", "state")))]
        (tmp_path / "abs").mkdir(parents=True, exist_ok=True)
        import pyarrow as pa

        ids, steps, states = zip(*abs_rows)
        pq.write_table(pa.table({"run_id": pa.array(ids, pa.string()), "step": pa.array(steps, pa.int64()),
                                 "state": pa.array(states, pa.string())}), tmp_path / "abs" / "a.parquet")
        c = duckdb_counts(tmp_path / "abs", terminal=ab.terminal)
        learner = DTMCLearner(ab, alpha=1).add_counts(c["src"], c["dst"], c["count"], c["initial"], c["runs"])
        out["duckdb"] = _canon(learner)
    except InputError as exc:
        out["duckdb"] = f"InputError: {exc}"
    return out


def _mw(opened, on=False):
    return {"objects": [{"objectType": "Microwave", "isOpen": opened, "isToggled": on}]}


@pytest.mark.parametrize("case", ["swapped", "duplicated", "gap", "continued"])
def test_rows_out_of_step_order_are_refused_by_every_engine_not_counted_differently(case, tmp_path):
    """Attack: a run's rows out of step order (or a step twice, a step missing, the run continued in a
    later block). Before: the row and columnar engines counted transitions in file order while DuckDB
    (and Spark) counted them in step order: one file, two models. Now: the row engines refuse all four;
    the window engine refuses a duplicate or a gap and reads a swap or a continuation by its step
    numbers, which is the model of the well-ordered file: no engine gives another model."""
    pytest.importorskip("duckdb")
    a, b, c = _mw(False), _mw(True), _mw(False, True)
    good = [("r", 0, a), ("r", 1, b), ("r", 2, c), ("s", 0, b)]
    bad = {"swapped": [("r", 0, a), ("r", 2, c), ("r", 1, b), ("s", 0, b)],
           "duplicated": [("r", 0, a), ("r", 1, b), ("r", 1, b), ("r", 2, c), ("s", 0, b)],
           "gap": [("r", 0, a), ("r", 2, c), ("s", 0, b)],
           "continued": [("r", 0, a), ("r", 1, b), ("s", 0, b), ("r", 2, c)]}[case]
    (tmp_path / "good").mkdir()
    _rows_file(tmp_path / "good" / "a.parquet", good)
    ok = _engines(tmp_path / "good", tmp_path / "g")
    assert not any(isinstance(v, str) for v in ok.values()) and ok["rows"] == ok["columnar"] == ok["duckdb"]
    (tmp_path / "bad").mkdir()
    _rows_file(tmp_path / "bad" / "a.parquet", bad)
    res = _engines(tmp_path / "bad", tmp_path / "b")
    for engine in ("rows", "columnar"):
        assert isinstance(res[engine], str) and "one block numbered 0, 1, 2" in res[engine], (engine, res[engine])
    if case in ("swapped", "continued"):  # PARTITION BY run_id ORDER BY step: the rows as numbered
        assert res["duckdb"] == ok["duckdb"]
    else:
        assert isinstance(res["duckdb"], str) and "one block numbered 0, 1, 2" in res["duckdb"]


@pytest.mark.parametrize("line, msg", [
    ('{"run_id": "r7", "steps": [{"action": null}]}', "{P}:2: trace r7 step 0 has no 'state'"),
    ('{"steps": []}', "{P}:2: trace line-2 has no steps"),
    ('{"run_id": "r7", "steps": [{"state": {"objects": 5}}]}', "{P}:2: trace r7 step 0: predicate"),
    ('{"run_id": "r7", "steps": [{"state": {"object": []}}]}', "{P}:2: trace r7 step 0: predicate"),
    ('{"run_id": "r7", "steps": [3]}', "{P}:2: step 0 of trace r7 is not an object"),
])
def test_a_refused_run_is_named_by_its_file_and_line(tmp_path, line, msg):
    """Every message about one run of a JSONL file starts ``FILE:LINE:``, also those of the learner (a step without a
    state, a state a predicate cannot read), which before named only ``trace RUN_ID`` (the line was left to find)."""
    p = tmp_path / "t.jsonl"
    first = TRACES.read_text(encoding="utf-8").splitlines()[0]
    p.write_text(first + "\n" + line + "\n")
    with pytest.raises(InputError) as ei:
        DTMCLearner(load_spec(SPEC)).add_file(str(p))
    assert str(ei.value).startswith(msg.replace("{P}", str(p))), str(ei.value)
