"""ReGuard from text alone, trained by fitted Q-iteration on the Eq. 5 target (issue 16, second pass).

Stages (each merges its section into benchmarks/results/control_driving_fqi.json with its command):

- ``throughput``: gemma-3-270m first-4-layer (``gemma-L4-last``) encoding rate on fresh texts (never
  cached), batch size x torch threads, on this machine's 2 shared cores.
- ``encode``: encode the transitions of the prefix-stable training states
  (:func:`agentguard.envs.driving.text_latent.training_states`) chunk by chunk into the disk cache
  (``$AGENTGUARD_CACHE/control/encodings``) until a wall-clock budget is spent; records texts/s and the
  number of states whose transitions are fully encoded.
- ``curve``: fitted Q-iteration (:func:`agentguard.control.fqi.fitted_q_iteration`, Eq. 5 target, the same
  network, schedule and states for both inputs) on the text-only latent and on the privileged state, for a
  grid of state counts; value F1 (safe class), unsafe-class F1 and balanced accuracy against exact value
  iteration on the 500 scored nodes of ``control_driving_text.py``.
- ``summary`` / ``plot``: the learning curve of the chosen PCA k (``curve_summary``) and its PNG
  (``control_driving_fqi_curve.png``).
- ``probe``: diagnostic only, a classifier given the exact labels on the same inputs
  (``probe_exact_labels``): what the input carries, apart from what FQI recovers from it.
- ``epsilon``: the switching threshold on validation starts.

Usage: ``nice -n 10 python benchmarks/control_driving_fqi.py throughput|encode|curve|summary|plot|probe|epsilon [options]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))

from _sections import merge_section

from agentguard.bench.driving import RESULTS, cache_root
from agentguard.envs import driving as D
from agentguard.envs.driving.text_latent import latent_encoder, training_states

OUT = RESULTS / "control_driving_fqi.json"
ENCODER = "gemma-L4-last"


def merge(section: str, data: dict) -> None:
    merge_section(OUT, section, data, nice=10, keep_runs=True)


def _load1() -> float:
    try:
        return float(open("/proc/loadavg").read().split()[0])
    except OSError:
        return float("nan")


def stage_throughput(args) -> None:
    """Fresh texts (seed 777 states, never in the cache), one encoder without the disk cache."""
    import torch

    states = training_states(args.n, seed=777)
    texts = [D.observation_text(s) for s in states]
    enc = latent_encoder(ENCODER, cache=None)
    enc.encode(texts[:2])  # warm-up
    rows = []
    for threads in (1, 2):
        for batch in (1, 16, 64):
            enc.threads, enc.batch_size = threads, batch
            torch.set_num_threads(threads)
            t0, c0 = time.perf_counter(), time.process_time()
            enc.encode(texts)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            rows.append({"threads": threads, "batch": batch, "texts": len(texts), "seconds": wall,
                         "cpu_seconds": cpu, "texts_per_s": len(texts) / wall, "load1": _load1()})
            print(rows[-1], flush=True)
    merge("throughput", {"encoder": ENCODER, "rows": rows,
                         "note": "wall-clock on 2 cores shared with other jobs (load1 recorded per row)"})


def _transition_texts(states: np.ndarray) -> list[str]:
    """The texts :func:`transitions_for` encodes: o(s) and o(f(s, a)) for successors that did not fail."""
    out = [D.observation_text(s) for s in states]
    for a in range(3):
        nxt = D.step(states, a)
        out += [D.observation_text(s) for s in nxt[D.margin(nxt) >= 0]]
    return out


def stage_encode(args) -> None:
    """The scored evaluation nodes first, then the training states' transitions in prefix order."""
    from control_driving_text import load_grid, scored_nodes

    enc = latent_encoder(args.encoder, cache=cache_root() / "control" / "encodings", threads=args.threads,
                         batch_size=args.batch)
    states = training_states(args.max_states, seed=0)
    t_start = time.perf_counter()
    enc.encode([D.observation_text(s) for s in scored_nodes(load_grid())[0]])
    print(f"eval nodes: {time.perf_counter() - t_start:.0f}s", flush=True)
    done, new_texts, chunks = 0, 0, []
    for i in range(0, len(states), args.chunk):
        if time.perf_counter() - t_start > args.budget:
            break
        texts = _transition_texts(states[i:i + args.chunk])
        m0 = enc.misses
        t0 = time.perf_counter()
        enc.encode(texts)
        dt = time.perf_counter() - t0
        fresh = enc.misses - m0
        new_texts += fresh
        done = i + len(states[i:i + args.chunk])
        chunks.append({"states_done": done, "fresh_texts": fresh, "seconds": dt,
                       "texts_per_s": fresh / dt if fresh and dt > 0 else None, "load1": _load1()})
        print(chunks[-1], flush=True)
    secs = time.perf_counter() - t_start
    rep = json.loads(OUT.read_text()).get("encode", {}) if OUT.exists() else {}
    full = {**rep.get("states_fully_encoded", {}), args.encoder: done} if isinstance(
        rep.get("states_fully_encoded"), dict) else {args.encoder: done}
    merge("encode", {"states_fully_encoded": full,
                     "runs": {f"run{len(rep.get('runs', {}))}": {"encoder": args.encoder,
                         "budget_s": args.budget, "seconds": secs, "fresh_texts": new_texts,
                         "threads": args.threads, "batch": args.batch, "states_done": done,
                         "texts_per_s": new_texts / secs if secs else None, "chunks": chunks}}})


def _fqi_config(args):
    from agentguard.control.fqi import FQIConfig

    return FQIConfig(hidden=tuple(int(h) for h in args.hidden.split(",")), iterations=args.iterations,
                     epochs=args.epochs, lr=args.lr, weight_decay=args.wd, threads=args.threads)


def stage_curve(args) -> None:
    """Same states, same FQI (Eq. 5), same network and schedule for the privileged and text-only inputs."""
    from control_driving_text import _enc, _value_f1, load_grid, scored_nodes

    from agentguard.control.fqi import fitted_q_iteration
    from agentguard.envs.driving.encoders import StateEncoder
    from agentguard.envs.driving.text_latent import input_map_state, standardized, transitions_for

    from control_driving_text import sweep_nodes

    grid = load_grid()
    ev_s, ev_truth = scored_nodes(grid)
    val = sweep_nodes(grid, args.val) if args.val else None
    cfg = _fqi_config(args)
    p = float(ev_truth.mean())
    for name in args.encoders.split(","):
        enc = _enc(name)
        for n in [int(x) for x in args.sizes.split(",")]:
            t0 = time.perf_counter()
            raw = transitions_for(enc, training_states(n, seed=0))
            t_enc = time.perf_counter() - t0
            data, stats = raw, {}
            if not isinstance(enc, StateEncoder):
                data, std = standardized(raw, enc, pca=args.pca)
                stats = input_map_state(std)
            def cb(k, m, stats=stats):
                m.meta.update(stats)
                out = _value_f1(m, enc, ev_s, ev_truth)
                if val is not None:  # validation nodes (disjoint from the scored ones): used for choices
                    out.update({f"val_{a}": b for a, b in _value_f1(m, enc, *val).items()})
                return out

            model = fitted_q_iteration(data, data.z.shape[1], 3, cfg, callback=cb, log_every=args.every)
            model.meta.update({"kind": "text-only" if stats else "privileged-fixed-states", "encoder": enc.name,
                               "n_states": n, "encode_seconds": t_enc, **stats})
            last = model.history[-1]
            key = f"{name}@{n}{args.tag}"
            run = {"encoder": name, "n_states": n, "transitions": len(data.a), "config": dict(cfg.__dict__),
                   "input_map": (f"pca-{args.pca} (whitened, fitted on the training latents)" if stats and args.pca
                                 else "standardised" if stats else "state"), "critic_input_dim": data.z.shape[1],
                   "value_f1": last["value_f1"], "value_f1_unsafe": last["value_f1_unsafe"],
                   "balanced_accuracy": last["balanced_accuracy"],
                   "validation": {k: v for k, v in last.items() if k.startswith("val_")} or None,
                   "pca": args.pca if stats else None,
                   "by_iteration": [(h["iteration"], h["value_f1"], h["value_f1_unsafe"], h["balanced_accuracy"])
                                    for h in model.history],
                   "encode_or_cache_seconds": t_enc, "fqi_seconds": model.seconds,
                   "fqi_cpu_seconds": model.meta["cpu_seconds"], "load1": _load1()}
            print(f"{key}: F1 {run['value_f1']:.3f} unsafe {run['value_f1_unsafe']:.3f} "
                  f"bacc {run['balanced_accuracy']:.3f} fqi {model.seconds:.0f}s", flush=True)
            folder = cache_root() / "control" / "text_models"
            folder.mkdir(parents=True, exist_ok=True)
            model.save(str(folder / f"fqi_{name}_n{n}{args.tag}.pt"))
            if args.save == n:
                model.save(str(RESULTS / f"control_driving_fqi_{name}.pt"))
                run["saved_as"] = f"benchmarks/results/control_driving_fqi_{name}.pt"
            merge("curve", {"eval_nodes": len(ev_s), "eval_safe_fraction": p,
                            "trivial_all_safe": {"value_f1": 2 * p / (1 + p), "value_f1_unsafe": 0.0,
                                                 "balanced_accuracy": 0.5},
                            "by_iteration_columns": ["fqi_iteration", "value_f1", "value_f1_unsafe",
                                                     "balanced_accuracy"],
                            "runs": {key: run}})


def stage_summary(args) -> None:
    """The learning curve of the chosen configuration: text-only (PCA k chosen on the validation nodes at
    the largest n) vs privileged, same states and FQI, per state count."""
    rep = json.loads(OUT.read_text())
    runs = rep["curve"]["runs"]
    with_val = [r for r in runs.values() if r["encoder"] == args.encoder and r.get("validation") and r.get("pca")]
    # k is chosen where several k were compared on the validation nodes (default: the largest such n)
    sizes = [n for n in {r["n_states"] for r in with_val}
             if len({r["pca"] for r in with_val if r["n_states"] == n}) > 1]
    big = args.select_n or max(sizes)
    cands = {k: r for k, r in runs.items() if r["encoder"] == args.encoder and r["n_states"] == big
             and r.get("validation") and r.get("pca")}
    best = max(cands, key=lambda k: cands[k]["validation"]["val_balanced_accuracy"])
    k_best = cands[best]["pca"]
    cols = ("value_f1", "value_f1_unsafe", "balanced_accuracy")

    def point(r):  # scored nodes, plus the validation nodes' balanced accuracy where that run had them
        return {**{c: r[c] for c in cols}, "val_balanced_accuracy": (r.get("validation") or {}).get(
            "val_balanced_accuracy")}

    curve = {}
    for key, r in runs.items():
        n = r["n_states"]
        if r["encoder"] == "privileged" and "_" not in key.split("@")[1]:  # untagged: the default FQI config
            curve.setdefault(n, {})["privileged"] = point(r)
        # the default schedule only (tags name variants, e.g. _pca128_e120 = 3x the epochs)
        if r["encoder"] == args.encoder and r.get("pca") == k_best and key.split("@")[1] in (
                f"{n}", f"{n}_pca{k_best}"):
            curve.setdefault(n, {})["text_only"] = point(r)
    merge("curve_summary", {
        "text_only_encoder": args.encoder, "pca_k": k_best,
        "selection": {k: {"pca": r["pca"], "val_balanced_accuracy": r["validation"]["val_balanced_accuracy"]}
                      for k, r in cands.items()},
        "rule": f"PCA k with the highest balanced accuracy on 300 validation nodes (disjoint from the 500 "
                f"scored ones) at {big} states",
        "by_states": {str(n): curve[n] for n in sorted(curve) if len(curve[n]) == 2},
        "constant_all_safe": rep["curve"]["trivial_all_safe"]})


def stage_probe(args) -> None:
    """Diagnostic, not a guard: a supervised classifier given the *exact* safe label of each training state
    (``grid.safe``), on the same inputs as the critics (whitened PCA-k of the text latent, fitted on the
    training latents, or the true state), scored on the same 500 nodes. It separates what the latent
    carries from what FQI's bootstrapped Eq. 5 target recovers from it."""
    from control_driving_text import _enc, f1_score, load_grid, scored_nodes
    from sklearn.neural_network import MLPClassifier

    from agentguard.control.encoders import ProjectedEncoder
    from agentguard.envs.driving.encoders import StateEncoder

    grid = load_grid()
    ev_s, ev_truth = scored_nodes(grid)
    rows = {}
    for name in args.encoders.split(","):
        enc = _enc(name, autosave=False)
        for n in [int(x) for x in args.sizes.split(",")]:
            states = training_states(n, seed=0)
            y = grid.safe(states)
            if isinstance(enc, StateEncoder):
                x, xe = enc.encode(states), enc.encode(ev_s)
            else:
                z = enc.encode([D.observation_text(s) for s in states])
                proj = ProjectedEncoder.fit(enc, z, args.pca)
                x, xe = proj.transform(z), proj.transform(enc.encode([D.observation_text(s) for s in ev_s]))
            t0 = time.perf_counter()
            clf = MLPClassifier(hidden_layer_sizes=(100, 100), activation="tanh", max_iter=500, random_state=0)
            clf.fit(x, y)
            pred = clf.predict(xe).astype(bool)
            rows[f"{name}@{n}"] = {"encoder": name, "n_states": n, "train_safe_fraction": float(y.mean()),
                                   "pca": args.pca if not isinstance(enc, StateEncoder) else None,
                                   "value_f1": f1_score(pred, ev_truth), "value_f1_unsafe": f1_score(~pred, ~ev_truth),
                                   "balanced_accuracy": 0.5 * (float(pred[ev_truth].mean())
                                                               + float((~pred[~ev_truth]).mean())),
                                   "train_accuracy": float((clf.predict(x).astype(bool) == y).mean()),
                                   "seconds": time.perf_counter() - t0}
            print(f"{name}@{n}", rows[f"{name}@{n}"], flush=True)
    merge("probe_exact_labels", {"runs": rows, "classifier": "sklearn MLPClassifier (100, 100) tanh, 500 epochs",
                                 "labels": "exact safe set (value iteration, grid.safe) of each training state",
                                 "note": "diagnostic upper reference for the input, not a deployable guard: it is "
                                         "given the exact labels the critics must learn from the Eq. 5 target"})


def stage_plot(args) -> None:
    """PNG of the learning curve in ``curve_summary``: value F1 and balanced accuracy vs training states."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rep = json.loads(OUT.read_text())
    summ, probe = rep["curve_summary"], rep.get("probe_exact_labels", {}).get("runs", {})
    ns = sorted(int(n) for n in summ["by_states"])
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, col, title in zip(axes, ("value_f1", "balanced_accuracy"), ("value F1 (safe class)", "balanced accuracy")):
        for critic, style in (("privileged", "o-"), ("text_only", "s-")):
            ax.plot(ns, [summ["by_states"][str(n)][critic][col] for n in ns], style, label=critic.replace("_", "-"))
        for critic, enc, style in (("privileged", "privileged", "o--"), ("text-only", summ["text_only_encoder"], "s--")):
            pts = sorted((r["n_states"], r[col]) for r in probe.values() if r["encoder"] == enc)
            if pts:  # diagnostic: a classifier given the exact labels (not a guard)
                ax.plot(*zip(*pts), style, alpha=0.5, label=f"{critic}, exact-label probe")
        ax.axhline(summ["constant_all_safe"][col], color="grey", ls=":", label="constant all-safe")
        ax.set_xlabel("training states (FQI, Eq. 5)")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"driving: text-only {summ['text_only_encoder']} (PCA {summ['pca_k']}) vs privileged, "
                 "500 scored grid nodes", fontsize=9)
    fig.tight_layout()
    png = RESULTS / "control_driving_fqi_curve.png"
    fig.savefig(png, dpi=110)
    print(f"wrote {png}", flush=True)


def stage_epsilon(args) -> None:
    """Switching threshold of the FQI critics on *validation* starts (seed 1; the scored eval uses seed 0)."""
    from control_driving_text import _enc

    from agentguard.bench.driving import rollout
    from agentguard.control.ddqn import QModel
    from agentguard.envs.driving.guard import make_filter
    from agentguard.envs.driving.text_latent import text_only_filter

    starts = D.sample_initial_states(args.episodes, seed=1)
    rows: dict = {}
    for eps in [float(e) for e in args.epsilons.split(",")]:
        filters = {"reguard": text_only_filter(QModel.load(str(RESULTS / f"control_driving_fqi_{args.encoder}.pt")),
                                               _enc(args.encoder, autosave=False), eps),
                   "privileged_same_states": make_filter(
                       "privileged", QModel.load(str(RESULTS / "control_driving_fqi_privileged.pt")), epsilon=eps)}
        for name, filt in filters.items():
            r = rollout(filt, D.weak_driver_policy, starts, 1)
            rows.setdefault(name, {})[str(eps)] = {
                "success_rate": float(r.success.mean()), "failure_rate": float(r.failure.mean()),
                "intervention_rate": r.interventions / max(1, r.decisions)}
            print(name, eps, rows[name][str(eps)], flush=True)
    merge("epsilon_validation", {"starts_seed": 1, "episodes": args.episodes, "base_policy": "weak",
                                 "text_only_encoder": args.encoder, "rows": rows})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("stage", choices=["throughput", "encode", "curve", "summary", "epsilon", "plot", "probe"])
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--epsilons", default="0.1,0.5,1,2,4")
    ap.add_argument("--n", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--chunk", type=int, default=100)
    ap.add_argument("--budget", type=float, default=600.0)
    ap.add_argument("--max-states", type=int, default=8000)
    ap.add_argument("--sizes", default="250,1000,4000")
    ap.add_argument("--encoder", default="gemma-L4-w16")
    ap.add_argument("--encoders", default="privileged," + ENCODER)
    ap.add_argument("--iterations", type=int, default=60)
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--wd", type=float, default=0.0)
    ap.add_argument("--hidden", default="100,100")
    ap.add_argument("--every", type=int, default=10)
    ap.add_argument("--tag", default="")
    ap.add_argument("--val", type=int, default=0, help="also score n validation nodes (control_driving_text.sweep_nodes)")
    ap.add_argument("--pca", type=int, default=0, help="text latents: project on the first k principal components")
    ap.add_argument("--select-n", type=int, default=0, help="summary: state count at which PCA k is chosen")
    ap.add_argument("--save", type=int, default=0, help="copy the models of this state count to results/")
    args, _ = ap.parse_known_args()
    if args.stage == "throughput":
        stage_throughput(args)
    elif args.stage == "encode":
        stage_encode(args)
    elif args.stage == "epsilon":
        stage_epsilon(args)
    elif args.stage == "summary":
        stage_summary(args)
    elif args.stage == "plot":
        stage_plot(args)
    elif args.stage == "probe":
        stage_probe(args)
    else:
        stage_curve(args)


if __name__ == "__main__":
    main()
