"""ReGuard from text alone with a kernel-averager critic (issue 16, third pass).

The neural fitted Q-iteration of ``control_driving_fqi.py`` loses most of what the gemma latent carries
(balanced accuracy 0.85 with exact labels, 0.59-0.73 through the Eq. 5 bootstrap). Here the same Eq. 5
target is iterated on a k-nearest-neighbour averager over the encoded training states
(:func:`agentguard.control.kernel_fqi.kernel_fitted_q_iteration`: a gamma-contraction, so it cannot drift),
for the text-only latent and the privileged state on the *same* states.

Stages (each merges its section into benchmarks/results/control_driving_kernel.json with its command):

- ``sweep``: for each state count and latent, PCA size x k x gamma_end; value F1 / unsafe F1 / balanced
  accuracy on the 300 *validation* nodes (used for every choice) and on the 500 scored nodes; the chosen
  configuration per (latent, state count) and the learning curve of the chosen ones (``curve``).
- ``eval``: closed loop, weak scripted driver, the chosen 5000-state critics saved under
  ``$AGENTGUARD_CACHE/control/text_models`` (text-only) and ``benchmarks/results`` (privileged, small);
  epsilon chosen on validation starts (seed 1), scored on seed 0, the same protocol and rows as
  ``control_driving_text.py eval``. ``--section eval_slow --candidates sfa128:6:10:0.999,...`` writes the
  fourth pass: candidates on the slow features of the latent, 40 validation starts, ties within one
  validation episode broken by fewer interventions.
- ``slow_sweep``: value metrics of kernel critics on the slow features (``ProjectedEncoder.fit_slow``: no
  label, only which observation follows which) of the whitened PCA of the text latent; ``top`` lists the
  candidates for ``eval``.
- ``privileged_curve``: closed-loop failure of the privileged kernel critic against the state count.
- ``actions``: does each critic's fallback pick an exactly safe action (``--section``: whose text critic).
- ``wide``: 100 more scored starts (seed 2, used for no choice) for the critics of ``--sections``.

Usage: ``nice -n 10 python benchmarks/control_driving_kernel.py sweep|slow_sweep|eval|... [options]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))

from control_driving_text import _enc, load_grid, scored_nodes, sweep_nodes

from _sections import merge_section

from agentguard.bench.driving import RESULTS, cache_root
from agentguard.control.ddqn import Transitions, f1_score
from agentguard.control.encoders import ProjectedEncoder
from agentguard.control.kernel_fqi import KernelFQIConfig, KernelQ, kernel_fitted_q_iteration
from agentguard.envs import driving as D
from agentguard.envs.driving.encoders import StateEncoder
from agentguard.envs.driving.text_latent import (
    input_map_state,
    standardized,
    text_only_filter,
    training_states,
    transitions_for,
)

OUT = RESULTS / "control_driving_kernel.json"


def merge(section: str, data: dict) -> None:
    merge_section(OUT, section, data, nice=10)


def scores(q: np.ndarray, truth: np.ndarray) -> dict:
    pred = q.max(1) > 0
    return {"value_f1": f1_score(pred, truth), "value_f1_unsafe": f1_score(~pred, ~truth),
            "balanced_accuracy": 0.5 * (float(pred[truth].mean()) + float((~pred[~truth]).mean()))}


_ENCODERS: dict = {}


def _encoder(name: str):
    """One cache-backed encoder per name per process (loading the encoding cache takes a while)."""
    if name not in _ENCODERS:
        _ENCODERS[name] = _enc(name, autosave=False)
    return _ENCODERS[name]


_RAW: dict = {}


def _raw(name: str, n: int) -> Transitions:
    """The encoded transitions of the first n training states (once per process)."""
    if (name, n) not in _RAW:
        _RAW[(name, n)] = transitions_for(_encoder(name), training_states(n, seed=0))
    return _RAW[(name, n)]


def _inputs(name: str, n: int, pca: int, val_s, ev_s, slow: int = 0):
    """Transitions of the first n training states, with the latent map fitted on them (no labels): the
    whitened PCA ``pca``, or with ``slow=m`` its m slow features over the transitions
    (:func:`standardized`, as the bench's critic)."""
    enc = _encoder(name)
    raw = _raw(name, n)
    if isinstance(enc, StateEncoder):
        return raw, enc.encode(val_s), enc.encode(ev_s), None
    data, proj = standardized(raw, enc, pca=pca, slow=slow)
    enc_eval = lambda s: proj.transform(enc.encode([D.observation_text(x) for x in s]))  # noqa: E731
    return data, enc_eval(val_s), enc_eval(ev_s), proj


def _fit(data: Transitions, n: int, dims: int, cfg: KernelFQIConfig) -> KernelQ:
    t = Transitions(data.z[:, :dims], data.a, data.l_next, data.z_next[:, :dims], data.done)
    return kernel_fitted_q_iteration(data.z[:n, :dims], np.tile(np.arange(n), 3), t, 3, cfg)


def _save_chosen(name: str, n: int, best: dict, data: Transitions, proj) -> str:
    """Refit the chosen configuration, store the input map in its meta and save it."""
    dims = best["pca"] or data.z.shape[1]
    model = _fit(data, n, dims, KernelFQIConfig(k=best["k"], gamma_end=best["gamma_end"]))
    model.meta.update({"encoder": name, "n_states": n, "pca": best["pca"],
                       "kind": "text-only" if proj is not None else "privileged-fixed-states"})
    if proj is not None:
        sub = ProjectedEncoder(proj.encoder, proj.mean, proj.std, proj.components[:dims], proj.scale[:dims])
        model.meta.update(input_map_state(sub))
        path = cache_root() / "control" / "text_models" / f"kernel_{name}_n{n}.npz"
    else:
        path = RESULTS / f"control_driving_kernel_{name}_n{n}.npz"
    path.parent.mkdir(parents=True, exist_ok=True)
    model.save(str(path))
    return str(path)


def stage_sweep(args) -> None:
    grid = load_grid()
    ev_s, ev_y = scored_nodes(grid)
    val_s, val_y = sweep_nodes(grid, 300)
    rep = json.loads(OUT.read_text()).get("sweep", {}) if OUT.exists() else {}
    runs, chosen = rep.get("runs", {}), rep.get("chosen", {})
    for name in args.encoders.split(","):
        priv = name == "privileged"
        for n in [int(x) for x in args.sizes.split(",")]:
            t0 = time.perf_counter()
            data, zv, ze, proj = _inputs(name, n, max(int(x) for x in args.pcas.split(",")), val_s, ev_s)
            t_load = time.perf_counter() - t0
            best = None
            for dims in ([0] if priv else [int(x) for x in args.pcas.split(",")]):
                for k in [int(x) for x in args.ks.split(",")]:
                    for g in [float(x) for x in args.gammas.split(",")]:
                        d = dims or data.z.shape[1]
                        m = _fit(data, n, d, KernelFQIConfig(k=k, gamma_end=g))
                        row = {"encoder": name, "n_states": n, "pca": dims or None, "k": k, "gamma_end": g,
                               "iterations": m.meta["iterations"], "converged": m.meta["converged"],
                               "fit_seconds": m.seconds,
                               "validation": scores(m.q_values(zv[:, :d]), val_y),
                               "scored": scores(m.q_values(ze[:, :d]), ev_y)}
                        key = f"{name}@{n}_pca{dims}_k{k}_g{g}"
                        runs[key] = row
                        print(key, row["validation"]["balanced_accuracy"], row["scored"], flush=True)
                        if best is None or (row["validation"]["balanced_accuracy"]
                                            > best["validation"]["balanced_accuracy"]):
                            best = {**row, "key": key}
            chosen[f"{name}@{n}"] = {**best, "load_seconds": t_load}
            if n == args.save:
                chosen[f"{name}@{n}"]["saved_as"] = _save_chosen(name, n, best, data, proj)
    curve: dict = {}
    for key, b in chosen.items():
        curve.setdefault(str(b["n_states"]), {})[b["encoder"]] = {
            **b["scored"], "val_balanced_accuracy": b["validation"]["balanced_accuracy"], "pca": b["pca"], "k": b["k"],
            "gamma_end": b["gamma_end"]}
    merge("sweep", {"rule": "per (latent, state count): the PCA size, k and gamma_end with the highest balanced "
                            "accuracy on 300 validation nodes (disjoint from the 500 scored ones)",
                    "eval_nodes": len(ev_s), "validation_nodes": len(val_s), "runs": runs, "chosen": chosen,
                    "curve": {n: curve[n] for n in sorted(curve, key=int)}})


def stage_slow_sweep(args) -> None:
    """Value metrics of kernel critics on the slow features of the text-only latent
    (:meth:`ProjectedEncoder.fit_slow`: PCA size x slow features x k x gamma_end), on the 300 validation
    nodes (used for choices) and the 500 scored nodes; ``top`` lists the best by validation balanced
    accuracy (the candidates passed on to ``eval --candidates``)."""
    grid = load_grid()
    ev_s, ev_y = scored_nodes(grid)
    val_s, val_y = sweep_nodes(grid, 300)
    runs = {}
    for pca in [int(x) for x in args.pcas.split(",")]:
        for slow in [int(x) for x in args.slows.split(",") if int(x) <= pca]:
            data, zv, ze, _ = _inputs(args.encoder, args.n, pca, val_s, ev_s, slow=slow)
            for k in [int(x) for x in args.ks.split(",")]:
                for g in [float(x) for x in args.gammas.split(",")]:
                    m = _fit(data, args.n, slow, KernelFQIConfig(k=k, gamma_end=g))
                    key = f"sfa{pca}:{slow}:{k}:{g}"
                    runs[key] = {"pca": pca, "slow": slow, "k": k, "gamma_end": g,
                                 "iterations": m.meta["iterations"], "fit_seconds": m.seconds,
                                 "validation": scores(m.q_values(zv), val_y), "scored": scores(m.q_values(ze), ev_y)}
                    print(key, runs[key]["validation"]["balanced_accuracy"], runs[key]["scored"], flush=True)
    top = sorted(runs, key=lambda r: -runs[r]["validation"]["balanced_accuracy"])[: args.top]
    merge("slow_sweep", {"encoder": args.encoder, "n_states": args.n, "runs": runs, "top": top,
                         "rule": "top by balanced accuracy on the 300 validation nodes (disjoint from the scored)"})


def _baseline_filters(epsilon: float) -> dict:
    """The rows of ``control_driving_text.py eval`` that do not depend on the text-only critic."""
    from agentguard.control.baselines import OneStepClassifier
    from agentguard.control.ddqn import QModel
    from agentguard.control.filter import SafetyFilter
    from agentguard.envs.driving.guard import make_filter, make_text_encoder

    numbers = make_text_encoder("wordllama+numbers")
    return {"privileged": make_filter("privileged", QModel.load(str(RESULTS / "control_driving_privileged_full.pt")),
                                      epsilon=epsilon),
            "text_plus_parsed_numbers": make_filter(
                "reguard", QModel.load(str(RESULTS / "control_driving_reguard_full.pt")), numbers, epsilon=epsilon),
            "myopic": make_filter("myopic", epsilon=epsilon),
            "classifier_stop_text_plus_parsed_numbers": SafetyFilter(
                OneStepClassifier.load(str(RESULTS / "control_driving_classifier_full_weak.pt")), numbers,
                D.ACTIONS, D.parse_action, 0.0, intervention="stop", name="classifier_stop"),
            "no_guard": None}


def stage_eval(args) -> None:
    from agentguard.bench.driving import evaluate_driving, rollout, time_decisions
    from agentguard.envs.driving.guard import make_filter
    from agentguard.envs.driving.text_latent import latent_encoder as raw_encoder

    grid = load_grid()
    chosen = json.loads(OUT.read_text())["sweep"]["chosen"]
    same = KernelQ.load(chosen[f"privileged@{args.n}"]["saved_as"])
    value_pick = chosen[f"{args.encoder}@{args.n}"]
    texts = {f"pca{value_pick['pca']}_k{value_pick['k']}_g{value_pick['gamma_end']}": KernelQ.load(value_pick["saved_as"])}
    one = sweep_nodes(grid, 1)[0], scored_nodes(grid)[0][:1]
    pca_inputs = None
    for c in filter(None, args.candidates.split(",")):  # more text-only configurations, compared in closed
        if c.startswith("sfa"):  # loop on the validation starts: sfa<pca>:<slow>:<k>:<gamma> or <pca>:<k>:<gamma>
            pca_s, slow_s, k, g = c[3:].split(":")
            data, _, _, proj = _inputs(args.encoder, args.n, int(pca_s), *one, slow=int(slow_s))
            m = _fit(data, args.n, data.z.shape[1], KernelFQIConfig(k=int(k), gamma_end=float(g)))
            m.meta.update({"encoder": args.encoder, "n_states": args.n, "pca": int(pca_s), "slow": int(slow_s),
                           "kind": "text-only", **input_map_state(proj)})
            texts[f"sfa{pca_s}-{slow_s}_k{k}_g{float(g)}"] = m
            continue
        dims, k, g = c.split(":")
        if pca_inputs is None:  # one PCA (an SVD of the training latents) serves every plain candidate
            pca_inputs = _inputs(args.encoder, args.n, 128, *one)
        data, _, _, proj = pca_inputs
        m = _fit(data, args.n, int(dims), KernelFQIConfig(k=int(k), gamma_end=float(g)))
        sub = ProjectedEncoder(proj.encoder, proj.mean, proj.std, proj.components[:int(dims)], proj.scale[:int(dims)])
        m.meta.update({"encoder": args.encoder, "n_states": args.n, "pca": int(dims), "kind": "text-only",
                       **input_map_state(sub)})
        texts[f"pca{dims}_k{k}_g{float(g)}"] = m

    def kernel_filters(eps: float, text_key: str) -> dict:
        """The text-only critic ``texts[text_key]`` and the privileged critic of the same states."""
        return {"reguard": text_only_filter(texts[text_key], _encoder(args.encoder), eps),
                "privileged_same_states": make_filter("privileged", same, epsilon=eps)}

    val_starts = D.sample_initial_states(args.val_episodes or args.episodes, seed=1)
    eps_rows: dict = {}
    for eps in [float(e) for e in args.epsilons.split(",")]:
        for i, key in enumerate(texts):
            for name, filt in kernel_filters(eps, key).items():
                if name != "reguard" and i > 0:
                    continue
                label = f"reguard[{key}]" if name == "reguard" else name
                r = rollout(filt, D.weak_driver_policy, val_starts, 1)
                eps_rows.setdefault(label, {})[str(eps)] = {"failure_rate": float(r.failure.mean()),
                                                           "success_rate": float(r.success.mean()),
                                                           "intervention_rate": r.interventions / max(1, r.decisions)}
                print("validation", label, eps, eps_rows[label][str(eps)], flush=True)

    tie = args.tie_episodes / len(val_starts)  # failures within this many episodes of the lowest tie

    def choose(rows: dict[str, dict]) -> str:
        """The key of the lowest validation failure (then success, interventions); with ties allowed, the
        fewest interventions among those within ``tie`` of the lowest failure."""
        lo = min(r["failure_rate"] for r in rows.values())
        ok = [k for k, r in rows.items() if r["failure_rate"] <= lo + tie + 1e-9]

        def rank(k: str) -> tuple:
            r = rows[k]
            return ((r["intervention_rate"],) if tie else ()) + (r["failure_rate"], -r["success_rate"],
                                                                  r["intervention_rate"])
        return min(ok, key=rank)

    eps_of = {k: choose(eps_rows[f"reguard[{k}]"]) for k in texts}
    text_key = choose({k: eps_rows[f"reguard[{k}]"][eps_of[k]] for k in texts})
    pick = {"reguard": eps_of[text_key], "privileged_same_states": choose(eps_rows["privileged_same_states"])}
    text = texts[text_key]
    if args.candidates:
        saved = cache_root() / "control" / "text_models" / f"kernel_{args.encoder}_n{args.n}_{args.section}.npz"
        text.save(str(saved))
        text_key_note = {"text_critic": text_key, "saved_as": str(saved)}
    else:
        text_key_note = {"text_critic": text_key, "saved_as": value_pick["saved_as"]}

    filters = _baseline_filters(0.1)
    filters.update({name: kernel_filters(float(pick[name]), text_key)[name] for name in pick})
    filters["exact"] = make_filter("exact", grid=grid)
    starts = D.sample_initial_states(args.episodes, seed=0)
    t0 = time.perf_counter()
    metrics = evaluate_driving(filters, grid, D.weak_driver_policy, starts, seed=0, nodes=scored_nodes(grid),
                               max_pairs=args.pairs, fallback_steps=args.fsteps, quiet=False)
    for m in metrics.values():
        m.pop("_traj", None)
    raw = text_only_filter(text, raw_encoder(args.encoder), float(pick["reguard"]))  # latency without the cache
    metrics["reguard"]["decision_latency_ms"] = time_decisions(raw, n=args.latency_n, seed=0)
    metrics["privileged_same_states"]["decision_latency_ms"] = time_decisions(filters["privileged_same_states"],
                                                                             n=args.latency_n, seed=0)
    priv = metrics["privileged"]["failure_rate"]
    rg = metrics["reguard"]
    merge(args.section, {"base_policy": "weak", "episodes": args.episodes, "seed": 0, "validation_seed": 1,
                   "validation_episodes": len(val_starts), "tie_episodes": args.tie_episodes,
                   "epsilon_validation": eps_rows, "epsilon_chosen": pick, "monitor_pairs": args.pairs,
                   "text_critic_selection": {**text_key_note, "rule": "the text-only configuration (value-chosen "
                                             "one plus --candidates) and epsilon with the lowest closed-loop "
                                             "failure on the validation starts (then success, interventions); "
                                             "with tie_episodes > 0, failures within that many validation "
                                             "episodes of the lowest count as tied and the fewest "
                                             "interventions wins"},
                   "fallback_steps": args.fsteps, "seconds": time.perf_counter() - t0, "guards": metrics,
                   "starts_in_exact_safe_set": float(grid.safe(starts).mean()),
                   "targets": {"value_f1_target": 0.85, "reguard_value_f1": rg["value_f1"],
                               "failure_ratio_vs_privileged": rg["failure_rate"] / priv if priv else None,
                               "failure_ratio_vs_privileged_same_states":
                                   rg["failure_rate"] / metrics["privileged_same_states"]["failure_rate"]
                                   if metrics["privileged_same_states"]["failure_rate"] else None,
                               "reached": bool(rg["value_f1"] >= 0.85 and rg["failure_rate"] <= 2 * priv)},
                   "rows": {"privileged": "DDQN on the true state, 24k iterations on fresh states (committed model)",
                            "privileged_same_states": f"kernel FQI (Eq. 5) on the true state of the same "
                                                      f"{args.n} training states, configuration chosen on validation",
                            "reguard": f"kernel FQI (Eq. 5) on the text-only latent {args.encoder} of the same "
                                       f"{args.n} states (no parsed number on the path)",
                            "text_plus_parsed_numbers": "wordllama-64 + DrivingNumbersEncoder (privileged numbers "
                                                        "parsed from the text)"}})


def stage_privileged_curve(args) -> None:
    """Closed-loop failure of the *privileged* kernel critic vs the number of training states (no encoding
    cost: the true state): how many states the closed loop needs, which the text-only critic would have to
    encode (~3.5 texts per state)."""
    from agentguard.bench.driving import rollout
    from agentguard.envs.driving.guard import make_filter

    grid = load_grid()
    ev_s, ev_y = scored_nodes(grid)
    val_s, val_y = sweep_nodes(grid, 300)
    val_starts, starts = D.sample_initial_states(args.episodes, seed=1), D.sample_initial_states(args.episodes, seed=0)
    enc = StateEncoder()
    rows = {}
    for n in [int(x) for x in args.sizes.split(",")]:
        data = transitions_for(enc, training_states(n, seed=0))
        fits = []
        for k in [int(x) for x in args.ks.split(",")]:
            for g in [float(x) for x in args.gammas.split(",")]:
                m = _fit(data, n, data.z.shape[1], KernelFQIConfig(k=k, gamma_end=g))
                fits.append((scores(m.q_values(enc.encode(val_s)), val_y)["balanced_accuracy"], k, g, m))
        vb, k, g, m = max(fits, key=lambda f: f[0])

        def run(eps: float, st, seed: int, m=m) -> dict:
            r = rollout(make_filter("privileged", m, epsilon=eps), D.weak_driver_policy, st, seed)
            return {"failure_rate": float(r.failure.mean()), "success_rate": float(r.success.mean()),
                    "intervention_rate": r.interventions / max(1, r.decisions)}

        val = {str(e): run(float(e), val_starts, 1) for e in args.epsilons.split(",")}
        eps = min(val, key=lambda e: (val[e]["failure_rate"], -val[e]["success_rate"], float(e)))
        rows[str(n)] = {"k": k, "gamma_end": g, "val_balanced_accuracy": vb, "scored": scores(m.q_values(enc.encode(ev_s)), ev_y),
                        "epsilon_validation": val, "epsilon": float(eps), "closed_loop": run(float(eps), starts, 0),
                        "fit_seconds": m.seconds}
        print(n, rows[str(n)]["scored"], rows[str(n)]["closed_loop"], flush=True)
    merge("privileged_curve", {"episodes": args.episodes, "seed": 0, "validation_seed": 1, "rows": rows,
                               "rule": "k, gamma_end on the 300 validation nodes; epsilon on validation starts"})


def stage_actions(args) -> None:
    """Diagnostic: does each critic's fallback ``argmax_a Q`` pick an exactly safe action (``Q*(s, a) > tol``)
    on the scored nodes, in particular on safe nodes where some action is unsafe; and the scale of its
    value on safe nodes (the switching threshold epsilon is on that scale)."""
    grid = load_grid()
    ev_s, ev_y = scored_nodes(grid)
    rep = json.loads(OUT.read_text())
    chosen = rep["sweep"]["chosen"]
    text_path = rep.get(args.section, {}).get("text_critic_selection", {}).get("saved_as")  # closed-loop choice
    good = grid.q_values(ev_s) > grid.tol
    hard = ev_y & ~good.all(1)
    rows = {}
    for name, key in (("text_only", f"{args.encoder}@{args.n}"), ("privileged_same_states", f"privileged@{args.n}")):
        model = KernelQ.load(text_path if name == "text_only" and text_path else chosen[key]["saved_as"])
        if name == "text_only":
            q = text_only_filter(model, _encoder(args.encoder)).q_batch([D.observation_text(x) for x in ev_s])
        else:
            q = model.q_values(StateEncoder().encode(ev_s))
        ok = good[np.arange(len(ev_s)), q.argmax(1)]
        rows[name] = {"fallback_safe_on_safe_nodes": float(ok[ev_y].mean()),
                      "fallback_safe_on_safe_nodes_with_an_unsafe_action": float(ok[hard].mean()),
                      "nodes_with_an_unsafe_action": int(hard.sum()),
                      "mean_max_q_on_safe_nodes": float(q.max(1)[ev_y].mean()),
                      "median_max_q_on_safe_nodes": float(np.median(q.max(1)[ev_y]))}
        print(name, rows[name], flush=True)
    merge("actions" if args.section == "eval" else f"actions_{args.section}",
          {"nodes": len(ev_s), "rows": rows,
           "text_only_critic": text_path or chosen[f"{args.encoder}@{args.n}"]["saved_as"]})


def stage_wide(args) -> None:
    """More scored starts (seed 2, never used for a choice): closed-loop failure / success / interventions
    of the text-only critics chosen by the ``--sections`` eval stages, each with the epsilon it chose there,
    beside the privileged rows, the exact filter and no guard."""
    from agentguard.bench.driving import rollout
    from agentguard.envs.driving.guard import make_filter

    grid = load_grid()
    rep = json.loads(OUT.read_text())
    filters = {k: v for k, v in _baseline_filters(0.1).items() if k != "classifier_stop_text_plus_parsed_numbers"}
    same = rep["sweep"]["chosen"][f"privileged@{args.n}"]["saved_as"]
    for sec in args.sections.split(","):
        ev = rep[sec]
        eps = ev["epsilon_chosen"]
        filters[f"reguard[{sec}:{ev['text_critic_selection']['text_critic']}]"] = text_only_filter(
            KernelQ.load(ev["text_critic_selection"]["saved_as"]), _encoder(args.encoder), float(eps["reguard"]))
        filters[f"privileged_same_states[{sec}]"] = make_filter("privileged", KernelQ.load(same),
                                                                 epsilon=float(eps["privileged_same_states"]))
    filters["exact"] = make_filter("exact", grid=grid)
    starts = D.sample_initial_states(args.episodes, seed=2)
    rows = {}
    for name, filt in filters.items():
        t0 = time.perf_counter()
        r = rollout(filt, D.weak_driver_policy, starts, 2)
        rows[name] = {"failure_rate": float(r.failure.mean()), "success_rate": float(r.success.mean()),
                      "intervention_rate": r.interventions / max(1, r.decisions), "failures": int(r.failure.sum()),
                      "seconds": time.perf_counter() - t0}
        print(name, rows[name], flush=True)
    merge("wide", {"episodes": args.episodes, "seed": 2, "starts_in_exact_safe_set": float(grid.safe(starts).mean()),
                   "rows": rows, "note": "starts and rollout noise of seed 2, used for no choice"})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("stage", choices=["sweep", "slow_sweep", "eval", "privileged_curve", "actions", "wide"])
    ap.add_argument("--encoders", default="privileged,gemma-L4-w16")
    ap.add_argument("--encoder", default="gemma-L4-w16")
    ap.add_argument("--sizes", default="1250,2500,3750,5000")
    ap.add_argument("--pcas", default="16,32,64,128")
    ap.add_argument("--ks", default="5,10,20")
    ap.add_argument("--gammas", default="0.99,0.999")
    ap.add_argument("--save", type=int, default=5000, help="save the chosen critics of this state count")
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--epsilons", default="0,0.05,0.1,0.2")
    ap.add_argument("--pairs", type=int, default=20)
    ap.add_argument("--fsteps", type=int, default=10)
    ap.add_argument("--latency-n", type=int, default=30)
    ap.add_argument("--candidates", default="", help="eval: more text-only configs pca:k:gamma (e.g. 16:10:0.999) "
                    "or sfa<pca>:<slow features>:k:gamma (e.g. sfa64:6:10:0.999)")
    ap.add_argument("--val-episodes", type=int, default=0, help="eval: validation starts (default --episodes)")
    ap.add_argument("--tie-episodes", type=int, default=0, help="eval: validation failures within this many "
                    "episodes of the best count as tied (then fewest interventions)")
    ap.add_argument("--section", default="eval", help="eval: the JSON section to write; actions: the eval "
                    "section whose text-only critic to diagnose")
    ap.add_argument("--slows", default="4,6,8,12,16", help="slow_sweep: numbers of slow features")
    ap.add_argument("--top", type=int, default=4, help="slow_sweep: how many to list as candidates")
    ap.add_argument("--sections", default="eval,eval_slow", help="wide: the eval sections whose critics to run")
    args, _ = ap.parse_known_args()
    {"sweep": stage_sweep, "slow_sweep": stage_slow_sweep, "eval": stage_eval,
     "privileged_curve": stage_privileged_curve, "actions": stage_actions, "wide": stage_wide}[args.stage](args)


if __name__ == "__main__":
    main()
