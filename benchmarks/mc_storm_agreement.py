"""Native engine vs Storm on all 200 DTMCs of the Pro2Guard release: P=? [F unsafe] from every state.

For each model folder (193 household ``embodied_dtmcs`` + 7 driving ``av_dtmcs``):
  * the unsafe set is the one :func:`agentguard.predictive.prism.read_pro2guard` documents
    (household: states satisfying an applicable spec of spec_state.jsonl; driving: collision or
    law-violation bit);
  * native: our PRISM reader + :func:`agentguard.predictive.checker.check`;
  * Storm: Storm's *own* PRISM parser on the original file, all states made initial, values mapped
    back through Storm's state valuations; once with Storm's default solver and once in exact
    (rational) mode; plus, as a stronger check, P=? [F s=j] for every single state j (both modes).

Writes benchmarks/results/mc_storm_agreement.json (with the command that produced it).
Run:  nice .venv/bin/python benchmarks/mc_storm_agreement.py [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def model_dirs(data: Path) -> list[Path]:
    root = data / "pro2guard"
    return sorted(p.parent for p in root.glob("*_dtmcs/**/dtmc.prism"))


def target_text(mask: np.ndarray, var: str = "s") -> str:
    idx = np.flatnonzero(mask)
    return " | ".join(f"{var}={int(i)}" for i in idx) if idx.size else "false"


def compare(folder: Path, singles: bool = True) -> dict:
    from agentguard.predictive.checker import check
    from agentguard.predictive.prism import read_pro2guard
    from agentguard.predictive.storm_engine import prism_values

    m = read_pro2guard(folder)
    prop = f"P=? [F {target_text(m.labels['unsafe'])}]"
    t0 = time.perf_counter()
    native = check(m, 'P=? [F "unsafe"]').values
    t_native = time.perf_counter() - t0
    t0 = time.perf_counter()
    storm = prism_values(folder / "dtmc.prism", [prop], "default")[0]
    t_storm = time.perf_counter() - t0
    exact = prism_values(folder / "dtmc.prism", [prop], "exact")[0]
    row = {
        "model": "/".join(folder.parts[len(folder.parts) - folder.parts[::-1].index("pro2guard"):]),
        "states": m.n,
        "unsafe_states": np.flatnonzero(m.labels["unsafe"]).tolist(),
        "initial": m.initial,
        "p_unsafe_initial": float(native[m.initial]),
        "max_abs_diff_storm_default": float(np.max(np.abs(native - storm))),
        "max_abs_diff_storm_exact": float(np.max(np.abs(native - exact))),
        "native_seconds": t_native,
        "storm_seconds": t_storm,
        "deadlocks_fixed": m.meta.get("deadlocks_fixed", []),
    }
    if singles:
        props = [f"P=? [F s={j}]" for j in range(m.n)]
        ours = [check(m, p).values for p in props]
        for mode in ("default", "exact"):
            st = prism_values(folder / "dtmc.prism", props, mode)
            row[f"max_abs_diff_single_targets_{mode}"] = float(max(
                np.max(np.abs(a - v)) for a, v in zip(ours, st)))
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "mc_storm_agreement.json")
    ap.add_argument("--no-singles", action="store_true", help="skip the per-state single-target check")
    args = ap.parse_args(argv)
    dirs = model_dirs(args.data)
    if not dirs:
        print(f"no models under {args.data}/pro2guard", file=sys.stderr)
        return 1
    rows = []
    t0 = time.perf_counter()
    for k, d in enumerate(dirs, 1):
        rows.append(compare(d, singles=not args.no_singles))
        if k % 20 == 0 or k == len(dirs):
            print(f"[{k}/{len(dirs)}] {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    worst = lambda key: max(r[key] for r in rows)
    summary = {
        "models": len(rows),
        "embodied": sum("embodied" in r["model"] for r in rows),
        "driving": sum("av_dtmcs" in r["model"] for r in rows),
        "models_with_nonempty_unsafe_set": sum(bool(r["unsafe_states"]) for r in rows),
        "max_abs_diff_storm_default": worst("max_abs_diff_storm_default"),
        "max_abs_diff_storm_exact": worst("max_abs_diff_storm_exact"),
        "agree_to_1e-6": all(r["max_abs_diff_storm_default"] <= 1e-6 for r in rows),
        "total_native_seconds": sum(r["native_seconds"] for r in rows),
        "total_storm_seconds_default": sum(r["storm_seconds"] for r in rows),
    }
    if not args.no_singles:
        summary["max_abs_diff_single_targets_default"] = worst("max_abs_diff_single_targets_default")
        summary["max_abs_diff_single_targets_exact"] = worst("max_abs_diff_single_targets_exact")
        summary["single_target_checks"] = sum(r["states"] for r in rows)
    out = {
        "command": "nice .venv/bin/python benchmarks/mc_storm_agreement.py" + (" --no-singles" if args.no_singles else ""),
        "property": "P=? [F unsafe] from every state",
        "unsafe_set": "see agentguard.predictive.prism.read_pro2guard: household = states satisfying an "
                      "applicable spec of spec_state.jsonl (recomputed from state_interpret); driving = "
                      "collision bit or law-violation bit",
        "summary": summary,
        "models": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1))
    print(json.dumps(summary, indent=1))
    return 0 if summary["agree_to_1e-6"] else 1


if __name__ == "__main__":
    sys.exit(main())
