"""Benchmark (issue 14): learning a DTMC from 10^6 steps of JSONL and up to 10^7 steps of Parquet.

Generates realistic trace files in a temporary folder (never committed): household runs of the
microwave example (``agentguard.demo.dtmc_example``, the spec ``examples/microwave_spec.yaml``),
each state an AI2-THOR-like list of 6 objects (Microwave, Fork, Potato from the simulation plus
CounterTop, Knife and Mug) with ids, flags, receptacles and a per-step ``distance`` float (so no two
states are byte-identical), each step with its tool-call action: about 600 bytes per step, as in
the issue's 612 MB / 10^6-step file.

Each measurement runs in a fresh subprocess (``--child``) and reports wall time, CPU time (user +
system) and peak RSS (``resource.getrusage(RUSAGE_SELF).ru_maxrss``) of that process alone:

* ``jsonl``: ``DTMCLearner.add_file`` (streaming, compiled predicates) on 10^5 and 10^6 steps;
* ``jsonl_before``: today's path before issue 14 (``read_traces`` -> list of Trace, ``learner.add``
  with the tree interpreter ``Expr.interpret``), on the smaller sizes only (it takes minutes and
  GBs at 10^6: 173 s / 3.67 GB in the issue), for the side-by-side ratio;
* ``parquet``: the service's Parquet schema (server/traces.py: one row per step, state as JSON
  text), streamed with PyArrow in record batches, at growing sizes, to show that peak memory is
  flat in the number of steps;
* ``duckdb_count``: transition counting by DuckDB over a Parquet folder of abstract paths (the
  path for data that outgrows one process).

Every learned model is compared with the one of the smallest reference (counts equal). Results:
``benchmarks/results/learn_volume.json`` and ``.png``.

    python benchmarks/learn_volume.py [--jsonl 100000,1000000] [--parquet 100000,1000000,3000000]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "examples" / "microwave_spec.yaml"
RESULTS = ROOT / "benchmarks" / "results"

EXTRA = [("CounterTop", {"isDirty": False, "receptacle": True}), ("Knife", {"isPickedUp": False, "isSliced": False}),
         ("Mug", {"isPickedUp": False, "isFilledWithLiquid": False})]


def _pool(n: int, seed: int) -> list:
    from agentguard.demo.dtmc_example import generate_example_traces

    return generate_example_traces(n, seed=seed)


def _six(state: dict, rng_vals: np.ndarray) -> dict:
    objs = []
    for k, o in enumerate(state["objects"]):
        d = {"objectId": f"{o['objectType']}|+0{k}.25|+00.90|-01.{k}0", **o, "distance": round(float(rng_vals[k]), 4)}
        objs.append(d)
    for k, (typ, fields) in enumerate(EXTRA, start=len(objs)):
        objs.append({"objectId": f"{typ}|+0{k}.25|+00.90|-01.{k}0", "objectType": typ, **fields,
                     "parentReceptacles": ["CounterTop"] if typ != "CounterTop" else [],
                     "distance": round(float(rng_vals[k]), 4)})
    return {"objects": objs}


def iter_runs(n_steps: int, seed: int = 0):
    """Yield trace dicts of the documented format until ``n_steps`` steps in total."""
    pool = _pool(3000, seed + 1)
    rng = np.random.default_rng(seed)
    done = k = 0
    while done < n_steps:
        tr = pool[int(rng.integers(len(pool)))]
        steps = []
        vals = rng.random((len(tr.steps), 6)) * 3
        for i, s in enumerate(tr.steps[: n_steps - done]):
            a = s.action.to_dict() if s.action is not None else None
            steps.append({"state": _six(s.state, vals[i]), "action": a, "time": float(i)})
        done += len(steps)
        yield {"run_id": f"run-{k:07d}", "labels": dict(tr.labels), "steps": steps}
        k += 1


def generate_jsonl(path: str | Path, n_steps: int, seed: int = 0) -> dict:
    import orjson

    runs = 0
    with open(path, "wb") as fh:
        for d in iter_runs(n_steps, seed):
            fh.write(orjson.dumps(d) + b"\n")
            runs += 1
    return {"steps": n_steps, "traces": runs, "bytes": os.path.getsize(path)}
