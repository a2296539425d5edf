"""Signal files (calibration.data): load_signals sorts steps, accepts boolean labels, rejects bad files."""

from __future__ import annotations

import gzip

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
