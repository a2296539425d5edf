"""Benchmark: DTMC learner transition counting, vectorised vs a naive Python loop (same run).

Counts 10^6 transitions (paths of random lengths over n abstract states) three ways:
  * ``vectorised``: :func:`agentguard.predictive.learn.count_transitions` on index arrays
    (pair codes + np.bincount), the learner's hot path;
  * ``learner_names``: ``DTMCLearner.add_paths`` on state-name strings (np.unique to index + counting);
  * ``naive_loop``: a Python ``for`` loop over transitions incrementing a dict.
All three must give identical counts (checked). Reports transitions per second (median of
``--repeat`` runs) and the vectorised/naive ratio.

    python benchmarks/learn_counting.py [--transitions 1000000] [--states 64] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from agentguard.predictive.learn import DTMCLearner, count_transitions


def naive(flat: np.ndarray, lengths: np.ndarray) -> dict[tuple[int, int], int]:
    counts: dict[tuple[int, int], int] = defaultdict(int)
    seq = flat.tolist()
    pos = 0
    for L in lengths.tolist():
        for t in range(pos, pos + L - 1):
            counts[(seq[t], seq[t + 1])] += 1
        pos += L
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--transitions", type=int, default=1_000_000)
    ap.add_argument("--states", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "learn_counting.json"))
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    # paths of 2..40 states until the total number of transitions reaches the target
    lengths = rng.integers(2, 41, size=a.transitions // 10 + 10)
    cum = np.cumsum(lengths - 1)
    k = int(np.searchsorted(cum, a.transitions)) + 1
    lengths = lengths[:k]
    lengths[-1] -= int(cum[k - 1] - a.transitions)
    assert int((lengths - 1).sum()) == a.transitions
    flat = rng.integers(0, a.states, size=int(lengths.sum()))
    width = max(1, int(np.ceil(np.log2(a.states))))
    names = np.array([format(i, f"0{width}b") for i in range(a.states)])
    name_paths = []
    pos = 0
    for L in lengths.tolist():
        name_paths.append(names[flat[pos:pos + L]].tolist())
        pos += L

    def timed(fn):
        fn()  # warm-up (page faults, caches), not timed
        ts, out = [], None
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            out = fn()
            ts.append(time.perf_counter() - t0)
        return statistics.median(ts), ts, out

    t_vec, ts_vec, C = timed(lambda: count_transitions(flat, lengths, a.states))
    t_names, ts_names, learner = timed(lambda: DTMCLearner(alpha=1).add_paths(name_paths))
    t_naive, ts_naive, ref = timed(lambda: naive(flat, lengths))
    # identical counts
    dense = np.zeros((a.states, a.states))
    for (i, j), c in ref.items():
        dense[i, j] = c
    assert np.array_equal(C.toarray(), dense), "vectorised counts differ from the loop"
    order = [learner.index[s] for s in names if s in learner.index]
    L = learner.counts.toarray()
    assert np.array_equal(L[np.ix_(order, order)], dense[np.ix_(range(len(order)), range(len(order)))]), "learner differs"
    res = {
        "command": "python " + " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
        "transitions": a.transitions, "paths": int(lengths.size), "states": a.states, "repeat": a.repeat,
        "seconds_median": {"vectorised": t_vec, "learner_names": t_names, "naive_loop": t_naive},
        "seconds_all": {"vectorised": ts_vec, "learner_names": ts_names, "naive_loop": ts_naive},
        "transitions_per_second": {"vectorised": a.transitions / t_vec, "learner_names": a.transitions / t_names,
                                   "naive_loop": a.transitions / t_naive},
        "speedup_vectorised_over_naive": t_naive / t_vec,
        "speedup_learner_names_over_naive": t_naive / t_names,
        "counts_identical": True,
        "machine": {"python": platform.python_version(), "numpy": np.__version__, "platform": platform.platform()},
    }
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=2))
    tps = res["transitions_per_second"]
    print(f"vectorised {tps['vectorised']:.3g}/s, learner on names {tps['learner_names']:.3g}/s, "
          f"naive loop {tps['naive_loop']:.3g}/s; vectorised/naive = {res['speedup_vectorised_over_naive']:.1f}x")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
