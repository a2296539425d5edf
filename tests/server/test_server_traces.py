"""Traces ingested by the service, read back by the DTMC learner and the calibrator."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("duckdb")

from agentguard.core import Step, ToolCall, Trace  # noqa: E402
from agentguard.server.traces import TraceStore, load_traces, query  # noqa: E402


def _runs(n: int, seed: int = 0) -> list[Trace]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        states, s = [], "00"
        for _ in range(int(rng.integers(2, 6))):
            states.append(s)
            s = ["00", "01", "11"][int(rng.integers(0, 3))]
        unsafe = states[-1] == "11"
        score = np.clip(0.9 - 0.2 * np.arange(len(states)) * unsafe + rng.normal(0, 0.05, len(states)), 0, 1)
        out.append(Trace([Step(state=st, action=ToolCall("move", {"k": k}), signals={"score": float(x)},
                               time=float(k)) for k, (st, x) in enumerate(zip(states, score))],
                         {"unsafe": bool(unsafe)}, run_id=f"r{i}"))
    return out


def test_roundtrip_is_exact(tmp_path):
    store = TraceStore(tmp_path)
    runs = _runs(30)
    store.add(runs[:10])
    store.add(runs[10:])
    back = load_traces(tmp_path)
    assert [t.to_dict() for t in back] == [t.to_dict() for t in runs]
    assert store.summary() == {"runs": 30, "steps": sum(len(t) for t in runs),
                               "unsafe_runs": sum(t.labels["unsafe"] for t in runs), "uploads_by_identity": {"": 2}}
    # DuckDB sees the files as one table
    n = query(tmp_path, "SELECT count(*) AS n FROM traces WHERE json_extract_string(action, '$.name') = ?", ["move"])
    assert n == [{"n": sum(len(t) for t in runs)}]
    assert load_traces(tmp_path / "nothing-here") == []
    assert query(tmp_path / "nothing-here", "SELECT count(*) AS n FROM traces") == [{"n": 0}]


def test_the_learner_reads_stored_traces(tmp_path):
    from agentguard.predictive.learn import DTMCLearner

    runs = _runs(200, seed=1)
    TraceStore(tmp_path).add(runs)
    paths = [[s.state for s in t.steps] for t in load_traces(tmp_path)]
    m = DTMCLearner(alpha=0, labels={"unsafe": {"11"}}).add_paths(paths).model()
    # Plain frequencies (alpha = 0) equal the transition counts of the original runs.
    counts: dict[tuple[str, str], int] = {}
    for t in runs:
        for a, b in zip(t.states, t.states[1:]):
            counts[(a, b)] = counts.get((a, b), 0) + 1
    P = m.matrix.toarray()
    for a in ("00", "01"):
        tot = sum(v for (x, _), v in counts.items() if x == a)
        for b in ("00", "01", "11"):
            i, j = m.state_names.index(a), m.state_names.index(b)
            assert P[i, j] == pytest.approx(counts.get((a, b), 0) / tot)


def test_the_calibrator_reads_stored_signals(tmp_path):
    from agentguard.calibration import Sequences, ThresholdCalibrator

    runs = _runs(300, seed=2)
    TraceStore(tmp_path).add(runs)
    seqs = Sequences.from_traces(load_traces(tmp_path), "score")  # the one trace -> Sequences converter
    assert seqs.n == 300 and seqs.labels.tolist() == [0 if t.labels["unsafe"] else 1 for t in runs]
    five = seqs.scores[seqs.starts[5]: seqs.starts[5] + seqs.lengths[5]]
    assert five.tolist() == [s.signals["score"] for s in runs[5].steps]
    cal = ThresholdCalibrator(risk="false_alarm", method="crc", alpha=0.2).calibrate(seqs)
    assert 0.0 < cal.threshold_ < 1.0


def test_typed_store_is_refused_by_load_traces_not_read_without_states(tmp_path):
    """write_parquet(typed=True) keeps the states in ``state_typed`` (for the learners): load_traces,
    which reads the JSON column, refuses such a file instead of giving steps without a state."""
    from agentguard.core.errors import InputError
    from agentguard.core.types import Step, Trace
    from agentguard.server.traces import load_traces, write_parquet

    write_parquet(tmp_path / "a.parquet", [Trace(run_id="r", steps=[Step(state={"x": 1})])], typed=True)
    with pytest.raises(InputError, match="typed states"):
        load_traces(tmp_path)


def test_a_run_is_ingested_once_so_no_client_grafts_steps_onto_another_run(tmp_path):
    """Poisoning: a second batch naming a stored run id (another client, a replay) would be joined to that
    run by load_traces, inventing a transition from its last state to the new first one."""
    import threading

    from agentguard.server.traces import TraceConflict

    store = TraceStore(tmp_path)
    runs = _runs(4)
    store.add(runs[:2])
    graft = Trace([Step(state="00")], {"unsafe": False}, run_id=runs[0].run_id)
    with pytest.raises(TraceConflict, match="already stored"):
        store.add([runs[2], graft])
    with pytest.raises(TraceConflict, match="twice"):
        store.add([runs[3], runs[3]])
    store.add(runs[2:])  # nothing of the refused batches was written or claimed
    assert [t.to_dict() for t in load_traces(tmp_path)] == [t.to_dict() for t in runs]
    # two writers racing for one new run id: exactly one wins
    race = Trace([Step(state="01")], {}, run_id="race")
    won, lost = [], []

    def add() -> None:
        try:
            store.add([race])
            won.append(1)
        except TraceConflict:
            lost.append(1)

    ts = [threading.Thread(target=add) for _ in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(won) == 1 and len(lost) == 5
