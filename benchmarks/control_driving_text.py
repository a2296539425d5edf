"""ReGuard on Agentic Driving from the observation text alone (issue 16).

Stages (each merges its section into benchmarks/results/control_driving_text.json with its command):

- ``sweep``: gemma-3-270m layer x pooling (and the sentence embedders) scored by a ridge probe of the exact
  safe set on a held-out split of grid nodes (disjoint from the scored evaluation nodes); encode cost per
  text for truncated gemma.
- ``curve``: the Eq. 5 DDQN on N training states (N a grid) for each text-only latent and for the
  privileged state of the *same* N states, same schedule; value F1 vs exact value iteration on the
  scored evaluation nodes (learning curve over N and over iterations).
- ``eval``: closed-loop rows (privileged, text-only ReGuard, text + parsed numbers, myopic, one-step
  classifier, no guard, exact) on seeded episodes of the weak base driver, decision latency.

Usage: ``nice -n 15 python benchmarks/control_driving_text.py sweep|curve|eval [options]``.
Encodings are cached in ``$AGENTGUARD_CACHE/control/encodings`` (keyed by text).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from _sections import merge_section

from agentguard.bench.driving import RESULTS, cache_root, eval_states
from agentguard.control.ddqn import f1_score
from agentguard.envs import driving as D
from agentguard.envs.driving.text_latent import latent_encoder, probe_sweep

OUT = RESULTS / "control_driving_text.json"
GRID = ("driving_vi_r0.05_t64.npz",)
EVAL_N = 500  # scored value nodes: the first 500 of eval_states(grid, 1000, 0); every row uses the same nodes


def scored_nodes(grid):
    s, y = eval_states(grid, 1000, 0)
    return s[:EVAL_N], y[:EVAL_N]


def load_grid():
    from agentguard.envs.driving.value_iteration import DrivingValueGrid

    return DrivingValueGrid.load(str(cache_root() / "control" / GRID[0]))


def merge(section: str, data: dict) -> None:
    merge_section(OUT, section, data, nice=15, keep_runs=True)


def sweep_nodes(grid, n: int, seed: int = 123):
    """Road grid nodes with exact labels, disjoint from the scored evaluation nodes."""
    ev, _ = eval_states(grid, 1000, 0)
    nodes = grid.node_states().reshape(-1, 3)
    vals = grid.values.reshape(-1)
    road = np.flatnonzero((D.margin(nodes) > 0) & (nodes[:, 0] <= D.GOAL_X))
    seen = {tuple(np.round(s, 6)) for s in ev}
    rng = np.random.default_rng(seed)
    pick = [i for i in rng.permutation(road)[: 2 * n] if tuple(np.round(nodes[i], 6)) not in seen][:n]
    return nodes[pick], vals[pick] > grid.tol


def gemma_all_layers(texts, layers, batch=16):
    import torch

    from agentguard.llm.local import load_gemma

    torch.set_num_threads(1)
    model, tok = load_gemma()
    base = model.model
    out = {(k, p): [] for k in layers for p in ("last", "mean")}
    t0 = time.perf_counter()
    for i in range(0, len(texts), batch):
        enc = tok(texts[i:i + batch], return_tensors="pt", padding=True)
        mask = enc["attention_mask"]
        with torch.no_grad():
            hs = base(**enc, output_hidden_states=True).hidden_states
            for k in layers:
                h = (hs[k] if k == len(base.layers) else base.norm(hs[k])).float()
                out[(k, "last")].append(h[torch.arange(h.shape[0]), mask.sum(1) - 1].numpy())
                m = mask[..., None].float()
                out[(k, "mean")].append(((h * m).sum(1) / m.sum(1)).numpy())
    secs = time.perf_counter() - t0
    return {f"gemma-L{k}-{p}": np.concatenate(v) for (k, p), v in out.items()}, secs


def stage_sweep(args) -> None:
    grid = load_grid()
    s, y = sweep_nodes(grid, args.n)
    texts = [D.observation_text(x) for x in s]
    k = int(len(s) * 2 / 3)
    layers = [2, 4, 6, 8, 10, 12, 15, 18]
    z, gsec = gemma_all_layers(texts, layers)
    for name in ("wordllama-64", "wordllama-256", "minilm"):
        t0 = time.perf_counter()
        z[name] = latent_encoder(name).encode(texts)
        print(f"{name}: {time.perf_counter() - t0:.1f}s", flush=True)
    res = probe_sweep({n: (v[:k], v[k:]) for n, v in z.items()}, y[:k], y[k:])
    for n, r in sorted(res.items(), key=lambda kv: -(kv[1]["probe_f1"] or 0)):
        print(f"  {n:16s} probe F1 {r['probe_f1']:.3f}", flush=True)
    # encode cost of a truncated gemma per text (1 thread), measured on 32 texts
    cost = {}
    for layer in (2, 6, 12, 18):
        enc = latent_encoder(f"gemma-L{layer}-last")
        t0 = time.perf_counter()
        enc.encode(texts[:32])
        cost[layer] = (time.perf_counter() - t0) / 32
    gem = {n: r for n, r in res.items() if n.startswith("gemma")}
    best = max(gem, key=lambda n: (round(gem[n]["probe_f1"], 2), -int(n.split("-")[1][1:])))
    merge("sweep", {"n_train": k, "n_val": len(s) - k, "val_safe_fraction": float(y[k:].mean()),
                    "probe": res, "gemma_all_layers_seconds": gsec, "gemma_seconds_per_text_by_layer": cost,
                    "chosen_gemma": best,
                    "rule": "highest held-out ridge-probe F1 (rounded to 0.01), ties to the shallower layer"})


#: the privileged guard's schedule (bench/driving.py FULL_CONFIG); only the iteration count is budgeted
CONFIG = {"gamma_end": 0.999, "gamma_period": 4000, "lr_period": 3000, "tau": 0.05, "lr_start": 2e-3}


def _enc(name: str, autosave: bool = True):
    """``autosave=False`` (closed-loop rows): the cache is read, never rewritten per decision."""
    from agentguard.envs.driving.encoders import StateEncoder

    if name == "privileged":
        return StateEncoder()
    enc = latent_encoder(name, cache=cache_root() / "control" / "encodings")
    enc.autosave = autosave
    return enc


def _value_f1(model, enc, ev_s, ev_truth) -> dict:
    from agentguard.envs.driving.encoders import StateEncoder
    from agentguard.envs.driving.text_latent import text_only_filter

    if isinstance(enc, StateEncoder):
        q = model.q_values(enc.encode(ev_s))
    else:
        q = text_only_filter(model, enc).q_batch([D.observation_text(x) for x in ev_s])
    pred = q.max(1) > 0
    return {"value_f1": f1_score(pred, ev_truth), "value_f1_unsafe": f1_score(~pred, ~ev_truth),
            "balanced_accuracy": 0.5 * (float(pred[ev_truth].mean()) + float((~pred[~ev_truth]).mean()))}


def stage_curve(args) -> None:
    from agentguard.envs.driving.text_latent import train_on_states, training_states

    grid = load_grid()
    ev_s, ev_truth = scored_nodes(grid)
    rep = json.loads(OUT.read_text()).get("curve", {}) if OUT.exists() else {}
    done = set(rep.get("runs", {}))
    runs: dict = {}  # only this process's runs: merge() keeps what other processes wrote meanwhile
    for name in args.encoders.split(","):
        enc = _enc(name)
        for n in [int(x) for x in args.sizes.split(",")]:
            key = f"{name}@{n}"
            if key in done and not args.redo:
                continue
            t0 = time.perf_counter()
            if name != "privileged":  # encode the scored nodes first (cached), so the callback is cheap
                _ = enc.encode([D.observation_text(x) for x in ev_s])
            t_ev = time.perf_counter() - t0
            model, _std = train_on_states(
                enc, training_states(n, seed=0), args.iterations, seed=0, batch_size=args.batch,
                callback=lambda it, m: _value_f1(m, enc, ev_s, ev_truth), log_every=args.every,
                **CONFIG)
            last = model.history[-1]
            f1 = last["value_f1"]
            runs[key] = {"encoder": name, "n_states": n, "iterations": args.iterations, "batch": args.batch,
                         "value_f1": f1, "value_f1_unsafe": last["value_f1_unsafe"],
                         "balanced_accuracy": last["balanced_accuracy"],
                         "by_iteration": [(h["iteration"], h["value_f1"], h["value_f1_unsafe"], h["balanced_accuracy"])
                                          for h in model.history],
                         "encode_seconds": model.meta["encode_seconds"], "eval_encode_seconds": t_ev,
                         "ddqn_seconds": model.meta["train_seconds"], "cpu_seconds": model.meta["cpu_seconds"]}
            print(f"{key}: value F1 {f1:.3f} encode {model.meta['encode_seconds']:.0f}s "
                  f"ddqn {model.meta['train_seconds']:.0f}s", flush=True)
            (cache_root() / "control" / "text_models").mkdir(parents=True, exist_ok=True)
            model.save(str(cache_root() / "control" / "text_models" / f"{name}_n{n}.pt"))
            if args.save == n:
                model.save(str(RESULTS / f"control_driving_text_{name}.pt"))
            p = float(ev_truth.mean())
            merge("curve", {"eval_nodes": EVAL_N, "eval_safe_fraction": p, "config": CONFIG,
                            "trivial_all_safe": {"value_f1": 2 * p / (1 + p), "value_f1_unsafe": 0.0,
                                                 "balanced_accuracy": 0.5},
                            "by_iteration_columns": ["iteration", "value_f1", "value_f1_unsafe", "balanced_accuracy"],
                            "runs": runs})
            if hasattr(enc, "flush"):
                enc.flush()


def _filters(args, epsilon: float):
    from agentguard.control.baselines import OneStepClassifier
    from agentguard.control.ddqn import QModel
    from agentguard.control.filter import SafetyFilter
    from agentguard.envs.driving.guard import make_filter, make_text_encoder
    from agentguard.envs.driving.text_latent import text_only_filter

    f = {"privileged": make_filter("privileged", QModel.load(str(RESULTS / "control_driving_privileged_full.pt")),
                                   epsilon=epsilon)}
    # --models fqi: the fitted-Q-iteration critics of control_driving_fqi.py (same states, same algorithm)
    stem = "control_driving_fqi" if getattr(args, "models", "ddqn") == "fqi" else "control_driving_text"
    p_same = RESULTS / f"{stem}_privileged.pt"
    if p_same.exists():
        f["privileged_same_states"] = make_filter("privileged", QModel.load(str(p_same)), epsilon=epsilon)
    for i, name in enumerate(args.encoders.split(",")):
        path = RESULTS / f"{stem}_{name}.pt"
        if not path.exists() and i > 0:  # secondary rows: the earlier DDQN critics
            path = RESULTS / f"control_driving_text_{name}.pt"
        m = QModel.load(str(path))
        row = "reguard" if i == 0 else f"reguard_{name}"
        f[row] = text_only_filter(m, _enc(name, autosave=False), epsilon, name=row)
    numbers = make_text_encoder("wordllama+numbers")
    f["text_plus_parsed_numbers"] = make_filter(
        "reguard", QModel.load(str(RESULTS / "control_driving_reguard_full.pt")), numbers, epsilon=epsilon)
    f["myopic"] = make_filter("myopic", epsilon=epsilon)
    f["classifier_stop_text_plus_parsed_numbers"] = SafetyFilter(
        OneStepClassifier.load(str(RESULTS / "control_driving_classifier_full_weak.pt")), numbers, D.ACTIONS,
        D.parse_action, 0.0, intervention="stop", name="classifier_stop")
    f["no_guard"] = None
    return f


def stage_eval(args) -> None:
    from agentguard.bench.driving import evaluate_driving, time_decisions
    from agentguard.control.ddqn import QModel
    from agentguard.envs.driving.guard import make_filter
    from agentguard.envs.driving.text_latent import latent_encoder as raw_encoder
    from agentguard.envs.driving.text_latent import text_only_filter

    grid = load_grid()
    filters = _filters(args, args.epsilon)
    filters["exact"] = make_filter("exact", grid=grid)
    starts = D.sample_initial_states(args.episodes, seed=0)
    t0 = time.perf_counter()
    metrics = evaluate_driving(filters, grid, D.weak_driver_policy, starts, seed=0, nodes=scored_nodes(grid),
                               max_pairs=args.pairs, fallback_steps=args.fsteps, quiet=False)
    for name, m in metrics.items():
        m.pop("_traj", None)
        q = getattr(filters[name], "q", None) if filters[name] is not None else None
        meta = getattr(q, "meta", None) or getattr(getattr(q, "model", None), "meta", None) or {}
        m["train"] = {k: v for k, v in meta.items() if isinstance(v, (int, float, str))}
    first = args.encoders.split(",")[0]
    lat_filters = {"privileged": filters["privileged"], "text_plus_parsed_numbers": filters["text_plus_parsed_numbers"],
                   "exact": filters["exact"],
                   # the text-only latency is measured without the disk cache: every text is new
                   "reguard": text_only_filter(filters["reguard"].q, raw_encoder(first), args.epsilon)}
    for name, filt in lat_filters.items():
        metrics[name]["decision_latency_ms"] = time_decisions(filt, n=args.latency_n, seed=0)
    ev_s, ev_truth = scored_nodes(grid)
    for name, filt in filters.items():  # balanced accuracy of the value sign (the constant predictor: 0.5)
        if filt is not None and name != "exact":
            pred = filt.q_batch([D.observation_text(x) for x in ev_s]).max(1) > 0
            metrics[name]["value_balanced_accuracy"] = 0.5 * (float(pred[ev_truth].mean())
                                                              + float((~pred[~ev_truth]).mean()))
    priv = metrics["privileged"]["failure_rate"]
    rg = metrics["reguard"]
    p = float(ev_truth.mean())
    targets = {"value_f1_target": 0.85, "reguard_value_f1": rg["value_f1"],
               "reguard_value_f1_unsafe": rg["value_f1_unsafe"],
               "reguard_value_balanced_accuracy": rg["value_balanced_accuracy"],
               "constant_all_safe_value_f1": 2 * p / (1 + p),
               "failure_ratio_vs_privileged": (rg["failure_rate"] / priv) if priv else None,
               "reached": bool(rg["value_f1"] >= 0.85 and rg["failure_rate"] <= 2 * priv
                               and rg["value_balanced_accuracy"] > 0.6)}
    merge("eval", {"base_policy": "weak", "episodes": args.episodes, "seed": 0, "epsilon": args.epsilon,
                   "eval_nodes": EVAL_N, "monitor_pairs": args.pairs, "fallback_steps": args.fsteps,
                   "reguard_encoder": first, "threads": 1, "cores": 2, "seconds": time.perf_counter() - t0,
                   "guards": metrics, "targets": targets,
                   "models": args.models,
                   "rows": {"privileged": "DDQN on the true state, 24k iterations on fresh states (committed model)",
                            "privileged_same_states": ("fitted Q-iteration (Eq. 5)" if args.models == "fqi" else "DDQN")
                                                      + " on the true state of the same training states, same "
                                                      "algorithm and schedule as the text-only row",
                            "reguard": f"text-only latent {first} (no parsed number on the path)",
                            "text_plus_parsed_numbers": "wordllama-64 + DrivingNumbersEncoder (privileged numbers "
                                                        "parsed from the text; the old README row)"}})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("stage", choices=["sweep", "curve", "eval"])
    ap.add_argument("--n", type=int, default=480)
    ap.add_argument("--encoders", default="privileged,wordllama-256")
    ap.add_argument("--sizes", default="250,500,1000")
    ap.add_argument("--iterations", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--every", type=int, default=500)
    ap.add_argument("--redo", action="store_true")
    ap.add_argument("--save", type=int, default=0, help="copy the model of this state count to results/")
    ap.add_argument("--episodes", type=int, default=100)
    ap.add_argument("--pairs", type=int, default=60)
    ap.add_argument("--fsteps", type=int, default=15)
    ap.add_argument("--epsilon", type=float, default=0.1)
    ap.add_argument("--latency-n", type=int, default=30)
    ap.add_argument("--models", choices=["ddqn", "fqi"], default="ddqn",
                    help="fqi: critics of benchmarks/control_driving_fqi.py (fitted Q-iteration, Eq. 5)")
    args, _ = ap.parse_known_args()
    if args.stage == "sweep":
        stage_sweep(args)
    elif args.stage == "curve":
        stage_curve(args)
    else:
        stage_eval(args)


if __name__ == "__main__":
    main()
