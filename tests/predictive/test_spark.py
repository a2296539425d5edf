"""Learning on Spark (local mode) gives the single-process learner's DTMC (issue 32).

One short test: a session start costs tens of seconds. Skipped, saying why, only where pyspark or a
Java runtime is missing (``make test`` installs the ``spark`` extra; Java 17 is a system package).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from agentguard.core.errors import InputError
from agentguard.predictive.learn import DTMCLearner
from agentguard.spec.predicates import load_spec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("pyspark") is None, reason="pyspark not installed (extra 'spark')"),
    pytest.mark.skipif(shutil.which("java") is None, reason="no Java runtime for Spark"),
]


def _rows() -> list[tuple[str, int, str]]:
    out = []
    for i, line in enumerate((EXAMPLES / "microwave_traces.jsonl").read_text().splitlines()[:20]):
        d = json.loads(line)
        out += [(d.get("run_id", f"r{i}"), k, json.dumps(s["state"])) for k, s in enumerate(d["steps"])]
    return out


def test_spark_learns_the_same_dtmc(tmp_path: Path) -> None:
    from agentguard.predictive.spark import learn_spark, spark_session

    rows = _rows()
    # a run is cut across the two files (the window over run id joins it)
    cut = next(i for i in range(len(rows) // 2, len(rows)) if rows[i - 1][0] == rows[i][0])
    tbl = pa.table({"run_id": [r[0] for r in rows], "step": pa.array([r[1] for r in rows], pa.int32()),
                    "state": [r[2] for r in rows]})
    pq.write_table(tbl.slice(0, cut), tmp_path / "000.parquet", row_group_size=64)
    pq.write_table(tbl.slice(cut), tmp_path / "001.parquet", row_group_size=64)
    assert rows[cut - 1][0] == rows[cut][0]
    ab = load_spec(EXAMPLES / "microwave_spec.yaml")
    ref = DTMCLearner(ab, alpha=1).add_file(str(tmp_path))
    spark = spark_session("local[1]", **{"spark.sql.shuffle.partitions": "1"})
    got = DTMCLearner(ab, alpha=1)
    stats = learn_spark(got, tmp_path, spark)
    assert stats["rows"] == len(rows) and stats["fallback_rows"] == 0
    assert got.states == ref.states and got.n_traces == ref.n_traces
    assert np.array_equal(got.initial_counts, ref.initial_counts) and (got.counts != ref.counts).nnz == 0
    assert (got.model().matrix != ref.model().matrix).nnz == 0
    # typed traces (state_typed, a struct column): the same model
    from agentguard.predictive.trace_stream import write_typed_parquet

    assert write_typed_parquet(tmp_path, tmp_path / "typed")["text"] == 0
    typed = DTMCLearner(ab, alpha=1)
    assert learn_spark(typed, tmp_path / "typed", spark)["rows"] == len(rows)
    assert typed.states == ref.states and (typed.counts != ref.counts).nnz == 0
    assert np.array_equal(typed.initial_counts, ref.initial_counts)
    with pytest.raises(InputError, match="Spark could not learn"):
        learn_spark(DTMCLearner(ab), tmp_path / "missing", spark)
    # red team: a step twice or a gap in a run (the window would pair them into transitions no run made)
    for name, steps in (("dup", [0, 1, 1, 2]), ("gap", [0, 1, 3, 4])):
        bad = tmp_path / name
        bad.mkdir()
        r = rows[:4]
        pq.write_table(pa.table({"run_id": ["x"] * 4, "step": pa.array(steps, pa.int32()),
                                 "state": [s for _, _, s in r]}), bad / "a.parquet")
        with pytest.raises(InputError, match="one block numbered 0, 1, 2"):
            learn_spark(DTMCLearner(ab, alpha=1), bad, spark)
