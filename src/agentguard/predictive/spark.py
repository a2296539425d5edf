"""Learning a DTMC on Apache Spark: abstraction and counting for traces that outgrow one machine.

:func:`learn_spark` reads Parquet traces (the service's schema: ``run_id, step, state`` as JSON text)
from a folder or an object-store path (``s3a://``, ``gs://``, ``abfss://`` ... whatever the Spark
session can read) and fills a :class:`~.learn.DTMCLearner` with exactly the counts the
single-process learner finds:

1. the map: ``mapInArrow`` runs :class:`~.columnar_learn.BatchAbstractor` on each Arrow batch (the
   columnar predicates of :mod:`.columnar` through an in-process DuckDB; rows it is not certain
   about through the row path, counted), giving each step its abstract state code;
2. the window: ``lead(code) OVER (PARTITION BY run_id ORDER BY step)`` pairs each step with the next
   one of its run, wherever the run's rows are (several files, several partitions); the last step
   of a run goes to the spec's terminal state, as ``add_paths`` appends it;
3. the reduce: ``GROUP BY (code, next, first-of-run)``, a few hundred rows, collected and merged into
   the learner with :meth:`~.learn.DTMCLearner.add_counts` (integer counts: the merge is exact).

States are registered in the order the row path meets them (files in name order, rows in file
order: Spark's ``_metadata.file_path`` and ``_metadata.row_index``), so the DTMC is the same object.

Typed traces (:mod:`.typed_state`): the ``state_typed`` column goes to the mapper whole (Spark's
nested-column pruning does not reach into a list of structs here) and is cut there to the fields
the predicates read, each distinct projected state abstracted once (:mod:`.columnar_typed`).

Why Spark (issue 32's prototype on 10^6 steps, same counts everywhere): Ray Data local 15-19 s and
Dask 17-25 s against pyspark ``local[2]`` 21-35 s on this 2-core machine, but Ray Data has no window
functions (runs spread across files need a shuffle by run id written by hand) and Spark runs as a
managed service on every major cloud; the Python predicate step dominated all of them, which the
columnar predicates remove.

Differences from the row path, by construction: a run is everything with one ``run_id`` (the row
path cuts runs where adjacent rows change id, so one id in two separate blocks is two traces there),
ordered by ``step`` (the row path takes file order); the service's store writes each run as one
block in step order, where both agree. Where they could disagree, one refuses (``trace_stream.
STEP_RULE``): the row paths refuse rows out of step order, and this engine refuses a run whose steps
are not 0..n-1 once each (a duplicate or a gap). Rows without a run id are dropped, as the row path
drops them.

``pyspark`` is the ``spark`` extra (Java 17 needed); imported on first use.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..core.errors import InputError, require
from ..spec.predicates import Abstraction
from .trace_stream import STEP_RULE
from .typed_state import STATE_TYPED

__all__ = ["learn_spark", "spark_session"]

_OUT = "run_id string, step long, code long, pos long, fallback boolean"


def spark_session(master: str = "local[2]", app: str = "agentguard-learn", **conf: str) -> Any:
    """A Spark session (``getOrCreate``) tuned for the Arrow exchange of :func:`learn_spark`."""
    import sys

    pyspark_sql = require("pyspark.sql", "spark")
    # local mode: the Python workers run this interpreter (with agentguard, pyarrow and duckdb); on a
    # cluster, PYSPARK_PYTHON names the executors' interpreter (see docs/learning.md)
    if master.startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    b = pyspark_sql.SparkSession.builder.master(master).appName(app)
    defaults = {"spark.sql.execution.arrow.maxRecordsPerBatch": "65536", "spark.ui.enabled": "false",
                "spark.sql.shuffle.partitions": "8", "spark.driver.memory": "1g",
                "spark.ui.showConsoleProgress": "false"}
    for k, v in {**defaults, **conf}.items():
        b = b.config(k, v)
    return b.getOrCreate()


def _mapper(abstraction: Abstraction) -> Any:
    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        from agentguard.predictive.columnar_learn import BatchAbstractor

        ab = BatchAbstractor(abstraction)
        for b in batches:
            codes = ab.table_codes(b)
            fb = np.zeros(b.num_rows, bool)
            fb[ab.last_fallback] = True
            yield pa.RecordBatch.from_arrays([b.column(0), b.column(1), pa.array(codes, pa.int64()),
                                              b.column(3), pa.array(fb)],
                                             names=["run_id", "step", "code", "pos", "fallback"])
    return run


def learn_spark(learner: Any, path: str | os.PathLike[str], spark: Any = None, master: str = "local[2]") -> dict[str, Any]:
    """Fill ``learner`` (a :class:`~.learn.DTMCLearner` with an abstraction) from Parquet traces at
    ``path`` on Spark; ``spark``: a session (default: :func:`spark_session` with ``master``).

    Returns statistics (``rows``, ``fallback_rows``, ``runs``, ``fallback_predicates``)."""
    F = require("pyspark.sql.functions", "spark")
    Window = require("pyspark.sql.window", "spark").Window
    errors = require("pyspark.errors", "spark")
    ab: Abstraction = learner.abstraction
    if ab is None:
        raise InputError("the Spark engine needs an abstraction")
    if ab.width > 62:
        raise InputError(f"the Spark engine holds states as 62-bit codes; the spec has {ab.width} predicates")
    spark = spark or spark_session(master)
    try:
        df = spark.read.parquet(str(path)).withColumn("file_path", F.col("_metadata.file_path"))
        files = sorted(r[0] for r in df.select("file_path").distinct().collect())  # name order, as the row path
        fidx = F.create_map(*[x for i, f in enumerate(files) for x in (F.lit(f), F.lit(i))])
        typed = [STATE_TYPED] if STATE_TYPED in df.columns else []  # read whole; cut in the mapper
        rows = df.select("run_id", F.col("step").cast("long").alias("step"), "state",
                         (fidx[F.col("file_path")].cast("long") * (1 << 40)
                          + F.col("_metadata.row_index")).alias("pos"), *typed)
        coded = rows.mapInArrow(_mapper(ab), _OUT).filter(F.col("run_id").isNotNull()).cache()
        w = Window.partitionBy("run_id").orderBy("step", "pos")
        live = coded.filter(F.col("step") >= 0)
        paired = live.select("code", F.lead("code").over(w).alias("nxt"), (F.row_number().over(w) == 1).alias("first"))
        agg = paired.groupBy("code", "nxt", "first").count().collect()
        first_pos = live.groupBy("code").agg(F.min("pos").alias("p")).collect()
        stats = coded.agg(F.sum(F.when(F.col("step") >= 0, 1).otherwise(0)).alias("rows"),
                          F.sum(F.col("fallback").cast("long")).alias("fb"),
                          F.sum(F.when((F.col("step") >= 0) & (F.col("code") == -2), 1).otherwise(0)).alias("nostate"),
                          F.countDistinct("run_id").alias("runs_all")).collect()[0]
        # trace_stream.STEP_RULE as a window engine can check it: each run's steps are 0..n-1, once each
        # (a duplicate or a gap would be paired by ORDER BY step, pos into transitions no run made)
        bad_run = (live.groupBy("run_id").agg(F.count("*").alias("n"), F.countDistinct("step").alias("d"),
                                              F.min("step").alias("lo"), F.max("step").alias("hi"))
                   .filter((F.col("n") != F.col("d")) | (F.col("lo") != 0) | (F.col("hi") != F.col("n") - 1))
                   .first())
        runs_live = sum(int(r["count"]) for r in agg if r["first"])
        term_pos = None
        if ab.terminal is not None and first_pos:  # the end of the first run (where add_paths meets the terminal)
            term_pos = (live.groupBy("run_id").agg(F.min("pos").alias("a"), F.max("pos").alias("b"))
                        .orderBy("a").first()["b"])
    except errors.PySparkException as exc:
        raise InputError(f"Spark could not learn from {path}: {_first_line(exc)}") from None
    finally:
        if "coded" in locals():
            coded.unpersist()
    if bad_run is not None:
        raise InputError(f"trace {bad_run['run_id']}: {bad_run['n']} rows with {bad_run['d']} distinct steps from "
                         f"{bad_run['lo']} to {bad_run['hi']}: {STEP_RULE}")
    if stats["nostate"]:
        raise InputError(f"{stats['nostate']} step(s) of {path} have no 'state'")
    if stats["runs_all"] != runs_live:
        raise InputError(f"{stats['runs_all'] - runs_live} trace(s) of {path} have no steps")
    _merge(learner, ab, agg, first_pos, term_pos)
    return {"rows": int(stats["rows"] or 0), "fallback_rows": int(stats["fb"] or 0), "runs": runs_live,
            "fallback_predicates": {}}


def _first_line(exc: BaseException) -> str:
    text = str(exc)
    for line in text.splitlines():
        if "InputError:" in line:
            return line.split("InputError:", 1)[1].strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _merge(learner: Any, ab: Abstraction, agg: list[Any], first_pos: list[Any], term_pos: int | None) -> None:
    w = ab.width
    name = lambda c: format(int(c), f"0{w}b")  # noqa: E731
    # registration order of the row path: first appearance; the terminal right after the first run
    keyed = [(2 * int(r["p"]), name(r["code"])) for r in first_pos]
    if term_pos is not None:
        keyed.append((2 * int(term_pos) + 1, str(ab.terminal)))
    for _, nm in sorted(keyed):
        learner._register(nm)
    src, dst, cnt = [], [], []
    initial: dict[str, int] = {}
    runs = 0
    for r in agg:
        a = name(r["code"])
        if r["first"]:
            initial[a] = initial.get(a, 0) + int(r["count"])
            runs += int(r["count"])
        if r["nxt"] is None:
            if ab.terminal is None:
                continue
            b = str(ab.terminal)
        else:
            b = name(r["nxt"])
        src.append(a)
        dst.append(b)
        cnt.append(int(r["count"]))
    learner.add_counts(src, dst, np.asarray(cnt, np.int64), initial, runs)
