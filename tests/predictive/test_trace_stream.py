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
