"""Benchmark (issue 14): learning a DTMC from 10^6 steps of JSONL and up to 10^7 steps of Parquet.

Generates realistic trace files in a temporary folder (never committed): household runs of the
microwave example (``agentguard.demo.dtmc_example``, the spec ``examples/microwave_spec.yaml``),
each state an AI2-THOR-like list of 6 objects (Microwave, Fork, Potato from the simulation plus
CounterTop, Knife and Mug) with ids, flags, receptacles and a per-step ``distance`` float (so no two
states are byte-identical), each step with its tool-call action: about 600 bytes per step, as in
the issue's 612 MB / 10^6-step file.

Each measurement runs in a fresh subprocess (``--child``) and reports wall time, CPU time (user +
system) and peak RSS (Linux ``VmHWM`` of that process image; ``ru_maxrss`` beside it) of that process alone:

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


def generate_parquet(folder: str | Path, n_steps: int, seed: int = 0, rows_per_file: int = 500_000, row_group: int = 20_000) -> dict:
    """The same runs in the service's Parquet schema (agentguard.server.traces), several files."""
    import orjson
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([("run_id", pa.string()), ("labels", pa.string()), ("step", pa.int32()),
                        ("time", pa.float64()), ("state", pa.string()), ("action", pa.string()),
                        ("observation", pa.string()), ("output", pa.string()), ("signals", pa.string()),
                        ("unsafe", pa.bool_())])
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    cols: dict[str, list] = {c: [] for c in schema.names}
    files = runs = 0

    def flush() -> None:
        nonlocal files, cols
        pq.write_table(pa.Table.from_pydict(cols, schema=schema), folder / f"{files:06d}.parquet",
                       compression="zstd", row_group_size=row_group)
        files += 1
        cols = {c: [] for c in schema.names}

    for d in iter_runs(n_steps, seed):
        runs += 1
        labels = orjson.dumps(d["labels"]).decode()
        for i, s in enumerate(d["steps"]):
            for c, v in (("run_id", d["run_id"]), ("labels", labels), ("step", i), ("time", s["time"]),
                         ("state", orjson.dumps(s["state"]).decode()),
                         ("action", orjson.dumps(s["action"]).decode() if s["action"] else None),
                         ("observation", None), ("output", None), ("signals", "{}"),
                         ("unsafe", bool(d["labels"].get("unsafe")))):
                cols[c].append(v)
        if len(cols["run_id"]) >= rows_per_file:
            flush()
    if cols["run_id"]:
        flush()
    size = sum(f.stat().st_size for f in folder.glob("*.parquet"))
    return {"steps": n_steps, "traces": runs, "bytes": size, "files": files}


def _child(mode: str, path: str) -> dict:
    """One measurement in this (fresh) process."""
    from agentguard.predictive.learn import DTMCLearner
    from agentguard.spec.predicates import load_spec

    ab = load_spec(SPEC)
    learner = DTMCLearner(ab, alpha=1, epsilon=0.1, delta=0.05)
    extra: dict = {}
    t0, c0 = time.perf_counter(), time.process_time()
    if mode == "jsonl_before":  # the learner as it was: whole file as Trace objects, tree interpreter
        from agentguard.core.types import read_traces
        from agentguard.spec.expr import Expr

        Expr.evaluate = Expr.interpret  # type: ignore[method-assign]
        ab.abstractor = lambda: ab.abstract  # type: ignore[method-assign]
        learner.add(read_traces(path))
    elif mode in ("jsonl", "parquet"):
        learner.add_file(path)
    elif mode == "duckdb":
        from agentguard.predictive.trace_stream import abstract_parquet, duckdb_counts, parquet_files

        out = Path(tempfile.mkdtemp(prefix="abstract-", dir=Path(path).parent))
        for k, f in enumerate(parquet_files(path)):  # the map step, file by file
            abstract_parquet(f, out / f"{k:06d}.parquet", ab.abstractor())
        extra["map_s"] = time.perf_counter() - t0
        c = duckdb_counts(out, terminal=ab.terminal)
        extra["count_s"] = time.perf_counter() - t0 - extra["map_s"]
        learner.add_counts(c["src"], c["dst"], c["count"], c["initial"], c["runs"])
    else:
        raise SystemExit(f"unknown mode {mode}")
    model = learner.model()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    ru = resource.getrusage(resource.RUSAGE_SELF)
    hwm = _vm_hwm_mb()
    C = model.counts.tocoo()
    counts = sorted((model.state_names[i], model.state_names[j], int(v)) for i, j, v in zip(C.row, C.col, C.data))
    return {"mode": mode, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
            "peak_rss_mb": hwm if hwm is not None else round(ru.ru_maxrss / 1024, 1),
            "ru_maxrss_mb": round(ru.ru_maxrss / 1024, 1), "traces": learner.n_traces,
            "transitions": int(model.counts.sum()), "states": model.n, "counts": counts,
            "initial": model.meta["initial_distribution"], **{k: round(v, 3) for k, v in extra.items()}}


def _vm_hwm_mb() -> float | None:
    """Peak RSS of this process image (Linux ``VmHWM``). ``ru_maxrss`` is not used for the figure: on
    Linux it keeps the high-water mark of the forked parent across ``exec`` (the mark is carried
    into the new image), so a child started by a parent that just generated a large file reported
    the parent's memory (that made Parquet learning look like 446 MB at 10^5 and 777 MB at
    2x10^5 steps)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:  # pragma: no cover - not Linux
        pass
    return None


def _measure(mode: str, path: str) -> dict:
    cmd = [sys.executable, __file__, "--child", mode, str(path)]
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    if r.returncode:
        raise SystemExit(f"{mode} failed: {r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def _plot(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    for mode in dict.fromkeys(r["mode"] for r in results):
        rs = sorted((r for r in results if r["mode"] == mode), key=lambda r: r["steps"])
        x = [r["steps"] for r in rs]
        a1.plot(x, [r["wall_s"] for r in rs], "o-", label=f"{mode} wall")
        a1.plot(x, [r["cpu_s"] for r in rs], "x:", label=f"{mode} CPU")
        a2.plot(x, [r["peak_rss_mb"] for r in rs], "o-", label=mode)
    for a, lab in ((a1, "seconds"), (a2, "peak RSS (MB)")):
        a.set_xscale("log")
        a.set_xlabel("steps")
        a.set_ylabel(lab)
        a.legend(fontsize=7)
        a.grid(alpha=0.3)
    a1.set_yscale("log")
    a1.axhline(30, color="grey", lw=0.8)
    a2.axhline(1024, color="grey", lw=0.8)
    fig.suptitle("learning a DTMC from traces (microwave spec, 6 objects per state)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _kept(path: Path, modes: list[str]) -> tuple[list[dict], dict]:
    """Rows of ``modes`` from an earlier run's JSON (kept, not re-measured), and that JSON."""
    if not modes or not path.exists():
        return [], {}
    earlier = json.loads(path.read_text())
    return [r for r in earlier["results"] if r["mode"] in modes], earlier


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jsonl", default="100000,1000000")
    ap.add_argument("--before", default="100000", help="sizes for today's (pre-issue-14) learner")
    ap.add_argument("--parquet", default="100000,1000000,2000000")
    ap.add_argument("--duckdb", default="1000000")
    ap.add_argument("--out", default=str(RESULTS / "learn_volume.json"))
    ap.add_argument("--keep", default="", help="modes whose rows are kept from the existing --out JSON "
                    "(not re-run), e.g. jsonl,jsonl_before,duckdb")
    ap.add_argument("--child", nargs=2, metavar=("MODE", "PATH"))
    args = ap.parse_args()
    if args.child:
        print(json.dumps(_child(*args.child)))
        return
    sizes = lambda s: [int(x) for x in s.split(",") if x]  # noqa: E731
    results, files = [], {}
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="learn-volume-") as tmp:
        for n in sorted(set(sizes(args.jsonl)) | set(sizes(args.before))):
            p = Path(tmp) / f"traces-{n}.jsonl"
            files[f"jsonl-{n}"] = generate_jsonl(p, n)
            for mode in (["jsonl"] if n in sizes(args.jsonl) else []) + (["jsonl_before"] if n in sizes(args.before) else []):
                r = _measure(mode, str(p))
                results.append({**r, "steps": n, "file": files[f"jsonl-{n}"]})
                print(mode, n, {k: r[k] for k in ("wall_s", "cpu_s", "peak_rss_mb")}, flush=True)
            p.unlink()
        for n in sorted(set(sizes(args.parquet)) | set(sizes(args.duckdb))):
            d = Path(tmp) / f"parquet-{n}"
            files[f"parquet-{n}"] = generate_parquet(d, n)
            for mode in (["parquet"] if n in sizes(args.parquet) else []) + (["duckdb"] if n in sizes(args.duckdb) else []):
                r = _measure(mode, str(d))
                results.append({**r, "steps": n, "file": files[f"parquet-{n}"]})
                print(mode, n, {k: r[k] for k in ("wall_s", "cpu_s", "peak_rss_mb")}, flush=True)
    kept, earlier = _kept(Path(args.out), [m for m in args.keep.split(",") if m])
    # every run of one size learned the same counts (and the JSONL and Parquet copies agree)
    same = {}
    for n in {r["steps"] for r in results}:
        rs = [r for r in results if r["steps"] == n]
        same[str(n)] = all(r["counts"] == rs[0]["counts"] and r["initial"] == rs[0]["initial"] for r in rs)
    for r in results:
        r.pop("counts")
    for n, ok in earlier.get("same_model_per_size", {}).items():
        same.setdefault(n, ok)
    for r in results:  # kept rows have no counts left: compare their totals with the new rows
        for k in kept:
            if k["steps"] == r["steps"]:
                same[str(r["steps"])] = same[str(r["steps"])] and all(
                    k[f] == r[f] for f in ("traces", "transitions", "states", "initial"))
    results = kept + results
    files = {**{k: v for k, v in earlier.get("files", {}).items() if any(r["file"] == v for r in kept)}, **files}
    out = {"command": "python " + " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
           **({"kept_rows_from": {"modes": args.keep, "command": earlier.get("command"),
                                  "machine": earlier.get("machine")}} if kept else {}),
           "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                       "loadavg_before": load0, "loadavg_after": os.getloadavg()},
           "spec": str(SPEC.relative_to(ROOT)), "files": files, "same_model_per_size": same, "results": results,
           "note": "each row is a fresh subprocess; peak_rss_mb is its VmHWM (ru_maxrss_mb beside it inherits "
                   "the forked parent's high-water mark across exec; kept rows from earlier runs measured "
                   "peak_rss_mb as ru_maxrss); cpu_s = user+system of "
                   "that process. The machine is shared: wall time > CPU time means waiting for a core."}
    Path(args.out).write_text(json.dumps(out, indent=1))
    _plot(results, Path(args.out).with_suffix(".png"))
    print(json.dumps(same))


if __name__ == "__main__":
    main()
