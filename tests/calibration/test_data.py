"""Signal files (calibration.data): load_signals sorts steps, accepts boolean labels, rejects bad files."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from agentguard.calibration import load_signals
from agentguard.core import InputError


def _write_csv(path, rows, header="uq_problem_idx,num_steps,judge_probability,solved"):
    with gzip.open(path, "wt") as fh:
        fh.write(header + "\n")
        for r in rows:
            fh.write(",".join(str(v) for v in r) + "\n")


def test_load_signals_sorts_steps_and_accepts_bool_labels(tmp_path):
    p = tmp_path / "s.csv.gz"
    _write_csv(p, [("b", 2, 0.3, "False"), ("a", 1, 0.9, "True"), ("b", 1, 0.8, "False"), ("a", 2, 0.7, "True")])
    d = load_signals(p)
    assert d.ids.tolist() == ["a", "b"]
    assert d.sequence(1).tolist() == [0.8, 0.3]
    assert d.labels.tolist() == [1, 0]


def test_load_signals_bad_files(tmp_path):
    with pytest.raises(InputError, match="not found"):
        load_signals(tmp_path / "nope.csv")
    p = tmp_path / "nan.csv.gz"
    _write_csv(p, [("a", 1, "", 1), ("a", 2, 0.5, 1)])
    with pytest.raises(InputError, match="NaN"):
        load_signals(p)
    p2 = tmp_path / "lab.csv.gz"
    _write_csv(p2, [("a", 1, 0.5, 3)])
    with pytest.raises(InputError, match="0 or 1"):
        load_signals(p2)
    p3 = tmp_path / "col.csv.gz"
    _write_csv(p3, [("a", 1, 0.5)], header="uq_problem_idx,num_steps,score")
    with pytest.raises(InputError, match="lacks column"):
        load_signals(p3)


# --- red team: long-format rows with duplicated, missing or unordered steps --------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from agentguard.calibration.data import Sequences as _S  # noqa: E402
from agentguard.core.errors import InputError as _IE  # noqa: E402


def test_duplicated_or_missing_steps_are_refused():
    """Attack: the same trajectory in two concatenated CSVs (every row twice). Before: the sequence was
    read with every step twice (the e-valuator fits step t on the wrong prefix, its e-process multiplies
    each ratio twice). Now: InputError naming the sequence and the step. A gap (a missing score) too."""
    ids, steps, scores, labels = np.array(["a", "a", "b"]), np.array([1, 2, 1]), np.array([.9, .1, .5]), np.array([1, 1, 0])
    with pytest.raises(_IE, match="'a' has step 1 twice"):
        _S.from_flat(np.r_[ids, ids], np.r_[steps, steps], np.r_[scores, scores], np.r_[labels, labels])
    with pytest.raises(_IE, match="'a' has step 3 after step 1 .a gap."):
        _S.from_flat(ids, np.array([1, 3, 1]), scores, labels)
    for bad in (np.array([1.0, np.nan, 1.0]), np.array([1, 2.5, 1]), np.array(["1", "x", "1"]), np.array([True, False, True])):
        with pytest.raises(_IE, match="step indices must be integers"):
            _S.from_flat(ids, bad, scores, labels)


def test_numeric_text_steps_are_ordered_as_numbers():
    """Steps read as text ("10" < "2" as strings) are ordered by value: step 2 before step 10."""
    ids = np.array(["a"] * 10)
    steps = np.array([str(i) for i in range(1, 11)])
    scores = np.arange(1, 11) / 10.0
    s = _S.from_flat(ids[::-1], steps[::-1], scores[::-1], np.ones(10, dtype=int))
    assert s.sequence(0).tolist() == scores.tolist()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.floats(0, 1), min_size=1, max_size=6), min_size=1, max_size=6), st.integers(0, 10**6),
       st.booleans())
def test_from_flat_rebuilds_shuffled_rows_and_refuses_any_duplicate(seqs, seed, dup):
    rows = [(f"s{i}", t + 1, v, i % 2) for i, q in enumerate(seqs) for t, v in enumerate(q)]
    rng = np.random.default_rng(seed)
    if dup:
        rows.append(rows[int(rng.integers(len(rows)))])
    rows = [rows[i] for i in rng.permutation(len(rows))]
    cols = [np.array(c) for c in zip(*rows)]
    if dup:
        with pytest.raises(_IE, match="twice"):
            _S.from_flat(*cols)
        return
    s = _S.from_flat(*cols)
    order = sorted(range(len(seqs)), key=lambda i: f"s{i}")
    assert [s.sequence(k).tolist() for k in range(s.n)] == [seqs[i] for i in order]
