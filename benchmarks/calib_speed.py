"""Calibration speed: the closed form versus grid searches over 10,001 thresholds, same run.

10^6 synthetic sequences (lengths 1..15, scores in [0, 1]); the safe ones are calibrated for the
false-alarm risk (alpha = 0.1, delta = 0.1):

* ``closed form``: agentguard's calibrate_threshold (one O(n) selection; UCB adds a bisection over
  the loss count), timed from the per-sequence minima and also from the flat step scores
  (``np.minimum.reduceat`` included);
* ``notebook grid``: the authors' code (sort the minima, ``searchsorted`` a linspace(0, 1, 10001)
  grid, bound per grid point, largest admissible grid point);
* ``straightforward grid``: for each of the 10,001 thresholds, the empirical risk ``mean(m < lam)``
  over all sequences, then the largest admissible one.

Every timing is the median of ``--repeats`` runs (the straightforward grid once: it is slow).
Writes benchmarks/results/calib_speed.json.

    python benchmarks/calib_speed.py [--n 1000000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from agentguard.calibration import Sequences, calibrate_threshold
from agentguard.calibration.bounds import hb_pvalue, max_losses

GRID = np.linspace(0.0, 1.0, 10001)


def timed(fn, repeats: int) -> tuple[float, object]:
    ts, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts)), out


def notebook_grid(m: np.ndarray, alpha: float, delta: float, method: str) -> float:
    s = np.sort(m)
    n = len(s)
    counts = np.searchsorted(s, GRID, side="left")
    if method == "crc":
        ok = (counts + 1.0) / (n + 1.0) <= alpha
    else:
        ok = hb_pvalue(counts, n, alpha) <= delta
    return float(GRID[ok].max()) if ok.any() else float("nan")


def straightforward_grid(m: np.ndarray, alpha: float, delta: float) -> tuple[float, float]:
    n = len(m)
    counts = np.array([np.count_nonzero(m < lam) for lam in GRID])
    crc = GRID[(counts + 1.0) / (n + 1.0) <= alpha].max()
    ucb = GRID[hb_pvalue(counts, n, alpha) <= delta].max()
    return float(crc), float(ucb)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "calib_speed.json"))
    args = ap.parse_args(argv)
    command = "python benchmarks/calib_speed.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    alpha, delta = 0.1, 0.1
    rng = np.random.default_rng(args.seed)
    lengths = rng.integers(1, 16, size=args.n)
    labels = (rng.uniform(size=args.n) < 0.6).astype(np.int8)
    # scores on a 4-decimal grid so the notebook grid can land exactly on the closed-form answer
    scores = np.round(rng.beta(6, 2, size=int(lengths.sum())), 4)
    starts = np.zeros(args.n, dtype=np.int64)
    starts[1:] = np.cumsum(lengths)[:-1]
    data = Sequences(scores, starts, lengths, labels)
    safe = labels == 1
    m_safe = data.minima()[safe]
    n_safe = int(safe.sum())
    print(f"{args.n} sequences ({n_safe} safe), {len(scores)} step scores", flush=True)

    res: dict = {}
    for method in ("crc", "ucb"):
        max_losses.cache_clear()

        def closed(method=method):
            max_losses.cache_clear()   # time the bisection too, not the memo
            return calibrate_threshold(m_safe, method=method, alpha=alpha, delta=delta).threshold

        def closed_flat(method=method):
            max_losses.cache_clear()
            mins = np.minimum.reduceat(data.scores, data.starts)[data.labels == 1]
            return calibrate_threshold(mins, method=method, alpha=alpha, delta=delta).threshold

        t_c, lam_c = timed(closed, args.repeats)
        t_cf, lam_cf = timed(closed_flat, args.repeats)
        t_nb, lam_nb = timed(lambda method=method: notebook_grid(m_safe, alpha, delta, method), args.repeats)
        res[method] = {"closed_form_s": t_c, "closed_form_from_flat_scores_s": t_cf, "notebook_grid_s": t_nb,
                       "threshold_closed_form": lam_c, "threshold_notebook_grid": lam_nb,
                       "notebook_over_closed_ratio": t_nb / t_c}
        assert lam_c == lam_cf
        print(f"  {method}: closed form {t_c * 1e3:.1f} ms (from flat scores {t_cf * 1e3:.1f} ms), "
              f"notebook grid {t_nb * 1e3:.1f} ms -> ratio {t_nb / t_c:.1f}x; thresholds {lam_c} vs {lam_nb}",
              flush=True)
    t0 = time.perf_counter()
    lam_crc, lam_ucb = straightforward_grid(m_safe, alpha, delta)
    t_sf = time.perf_counter() - t0
    for method, lam in (("crc", lam_crc), ("ucb", lam_ucb)):
        res[method]["straightforward_grid_s_both_methods"] = t_sf
        res[method]["threshold_straightforward_grid"] = lam
        res[method]["straightforward_over_closed_ratio"] = t_sf / res[method]["closed_form_s"]
    print(f"  straightforward grid (10,001 x mean(m < lam), both methods): {t_sf:.2f} s -> ratios "
          f"{t_sf / res['crc']['closed_form_s']:.0f}x (crc), {t_sf / res['ucb']['closed_form_s']:.0f}x (ucb)")
    # the grid can only find a grid point; the closed form is the exact supremum (>= grid answer)
    for method in ("crc", "ucb"):
        r = res[method]
        r["closed_form_ge_grid"] = bool(r["threshold_closed_form"] >= r["threshold_notebook_grid"] - 1e-12)
    payload = {"command": command, "n_sequences": args.n, "n_safe": n_safe, "n_scores": len(scores),
               "alpha": alpha, "delta": delta, "grid_points": len(GRID), "repeats": args.repeats,
               "under_one_second": {m: res[m]["closed_form_from_flat_scores_s"] < 1.0 for m in res},
               "results": res}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(payload, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
