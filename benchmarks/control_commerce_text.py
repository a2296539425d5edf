"""Text-only ReGuard for Agentic Commerce (issue 16) -> benchmarks/results/control_commerce_text.json.

Stages (each merges its section, keyed by task, into the JSON with its command):

- ``encode``: gemma-L4-w16 encodings of the validation carts, the scored carts and the transitions of
  the prefix-stable training states (:func:`agentguard.bench.commerce_text.training_states`), chunk by
  chunk into the disk cache (``$AGENTGUARD_CACHE/control/encodings/commerce``) until a wall-clock budget
  is spent; records texts/s and how many training states are fully encoded (this sets the state count).
- ``train``: fitted Q-iteration (Eq. 5, gamma = 1, commerce convention) of three critics on the *same*
  states and actions: privileged (true cart numbers), text-only (gemma-L4-w16 + PCA k, k chosen on the
  validation carts), text + parsed numbers; value F1 / unsafe F1 / balanced accuracy against the exact
  value on the scored carts; the models are saved to benchmarks/results/control_commerce_text_<task>_*.pt
  for ``agentguard bench commerce``.

- ``probe``: diagnostic only: ridge read-outs of the exact safe label and the cart total from the text
  latent (given the labels), and the trained text-only critic's checkout head vs its other heads.

Usage: ``nice -n 10 python benchmarks/control_commerce_text.py encode|train|probe [--task plain|bundles] [...]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from _sections import merge_section

from agentguard.bench import commerce_latent as T
from agentguard.bench.driving import RESULTS
from agentguard.envs import commerce as C

OUT = RESULTS / "control_commerce_text.json"


def merge(section: str, data: dict) -> None:
    merge_section(OUT, section, data, nice=10)


def _succ_texts(carts, acts) -> list[str]:
    out = [C.render_tree(c) for c in carts]
    for c, row in zip(carts, acts):
        for a in row[row >= 0]:
            c2, d = C.step(c, int(a))
            if not d:
                out.append(C.render_tree(c2))
    return out


def stage_encode(a) -> None:
    b = a.task == "bundles"
    enc = T.text_encoder(threads=a.threads, batch_size=a.batch, bundles=b)
    t0, runs = time.perf_counter(), []

    def run(label, texts):
        s, m0 = time.perf_counter(), enc.misses
        T.encode_sorted(enc, texts)
        dt, fresh = time.perf_counter() - s, enc.misses - m0
        runs.append({"what": label, "texts": len(texts), "fresh": fresh, "seconds": dt,
                     "texts_per_s": fresh / dt if fresh else None, "load1": os.getloadavg()[0]})
        print(runs[-1], flush=True)

    run("validation", [C.render_tree(c) for c in T.eval_states(a.val, a.seed + 1, b)])
    run("scored", [C.render_tree(c) for c in T.eval_states(a.scored, a.seed, b)])
    carts, acts = T.training_states(a.max_states, a.seed, b, a.noop)
    done = 0
    while done < len(carts) and time.perf_counter() - t0 < a.budget:
        run(f"train[{done}:{done + a.chunk}]", _succ_texts(carts[done:done + a.chunk], acts[done:done + a.chunk]))
        done = min(len(carts), done + a.chunk)
    prev = json.loads(OUT.read_text()).get(f"encode_{a.task}", {}) if OUT.exists() else {}
    session = {"threads": a.threads, "batch": a.batch, "seconds": time.perf_counter() - t0, "runs": runs,
               "fresh_texts": sum(r["fresh"] for r in runs)}
    if "runs" in prev and "sessions" not in prev:  # a section written before sessions were recorded
        prev["sessions"] = [{k: prev[k] for k in ("threads", "batch", "seconds", "runs")}]
        prev["sessions"][0]["fresh_texts"] = sum(r["fresh"] for r in prev["runs"])
    sessions = prev.get("sessions", []) + [session]
    fresh = sum(s["fresh_texts"] for s in sessions)
    secs = sum(r["seconds"] for s in sessions for r in s["runs"] if r["fresh"])
    merge(f"encode_{a.task}", {"encoder": T.ENCODER, "states_encoded": max(done, prev.get("states_encoded", 0)),
                               "noop": a.noop, "validation": a.val, "scored": a.scored,
                               "fresh_texts": fresh, "encode_seconds": secs, "texts_per_s": fresh / max(secs, 1e-9),
                               "sessions": sessions, "cache": str(T.cache_folder(b))})


def _scores(model, page, carts, bundles) -> dict:
    f = T.text_filter(model, page, "x")
    q = f.q_batch([C.render_tree(c) for c in carts])
    return T.value_scores(q.max(1), carts)


def stage_train(a) -> None:
    from agentguard.control.fqi import FQIConfig

    b = a.task == "bundles"
    text = T.text_encoder(threads=a.threads, batch_size=a.batch, bundles=b) if a.kinds != "privileged" else None
    carts, acts = T.training_states(a.n, a.seed, b, a.noop)
    val, scored = T.eval_states(a.val, a.seed + 1, b), T.eval_states(a.scored, a.seed, b)
    cfg = FQIConfig(gamma_start=1.0, gamma_end=1.0, iterations=a.iterations, epochs=a.epochs,
                    hidden=tuple(int(x) for x in a.hidden.split(",")), seed=a.seed, threads=a.threads)
    runs: dict = {}
    models: dict = {}
    for kind in a.kinds.split(","):
        ks = [0] if kind == "privileged" else [int(k) for k in a.pcas.split(",")]
        for k in ks:
            m = T.train_critic(kind, carts, acts, pca=k, config=cfg, bundles=b, text=text)
            page = T.cart_encoder(kind, b, text)[1]
            rec = {"pca": k, "validation": _scores(m, page, val, b), "train_seconds": m.seconds,
                   "encode_seconds": m.meta["encode_seconds"], "encoder": m.meta["encoder"]}
            runs[f"{kind}_pca{k}"] = rec
            print(kind, k, rec["validation"], flush=True)
            models[(kind, k)] = m
        best = max(ks, key=lambda k: runs[f"{kind}_pca{k}"]["validation"]["balanced_accuracy"])
        m, page = models[(kind, best)], T.cart_encoder(kind, b, text)[1]
        runs[f"{kind}_pca{best}"]["scored"] = _scores(m, page, scored, b)
        runs[f"{kind}_pca{best}"]["chosen"] = True
        print(kind, "chosen", best, runs[f"{kind}_pca{best}"]["scored"], flush=True)
        m.save(str(RESULTS / f"control_commerce_text_{a.task}_{kind.replace('+', '_')}.pt"))
    if a.large:  # the privileged critic with more states (no encoding cost): what the state count does
        cl, al = T.training_states(a.large, a.seed, b, a.noop)
        m = T.train_critic("privileged", cl, al, config=cfg, bundles=b)
        page = T.CommerceNumbersEncoder(b)
        runs[f"privileged_{a.large}_states"] = {"validation": _scores(m, page, val, b), "scored": _scores(m, page, scored, b),
                                               "train_seconds": m.seconds, "n_states": a.large}
        print("privileged large", runs[f"privileged_{a.large}_states"], flush=True)
        m.save(str(RESULTS / f"control_commerce_text_{a.task}_privileged_large.pt"))
    merge(f"train_{a.task}", {"n_states": a.n, "noop": a.noop, "n_transitions": int((acts >= 0).sum()), "fqi_config": dict(cfg.__dict__), "validation_carts": a.val,
                              "scored_carts": a.scored, "runs": runs,
                              "note": "same states, actions, FQI schedule and network for the three critics; "
                                      "PCA k chosen by validation balanced accuracy, scored carts unseen"})


def _pca(a, b, k):
    mu, sd = a.mean(0), a.std(0) + 1e-6
    _, _, vt = np.linalg.svd((a - mu) / sd, full_matrices=False)
    return ((a - mu) / sd) @ vt[:k].T, ((b - mu) / sd) @ vt[:k].T


def _ridge_r2(a, b, t, s, alpha=10.0):
    mu, sd = a.mean(0), a.std(0) + 1e-6
    xa, xb = np.c_[(a - mu) / sd, np.ones(len(a))], np.c_[(b - mu) / sd, np.ones(len(b))]
    w = np.linalg.solve(xa.T @ xa + alpha * np.eye(xa.shape[1]), xa.T @ t)
    return float(1 - ((xb @ w - s) ** 2).mean() / s.var())


def stage_probe(a) -> None:
    """Diagnostic, not a guard: what the text latent carries (ridge read-outs fitted on the training
    states' latents with their *exact* labels / totals, scored on the scored carts) and where the trained
    text-only critic goes wrong (its checkout head vs the other heads)."""
    from agentguard.control.ddqn import QModel
    from agentguard.envs.driving.text_latent import _ridge_f1

    b = a.task == "bundles"
    enc = T.text_encoder(threads=a.threads, batch_size=a.batch, bundles=b)
    carts, _ = T.training_states(a.n, a.seed, b, a.noop)
    sc = T.eval_states(a.scored, a.seed, b)
    ztr = T.encode_sorted(enc, [C.render_tree(c) for c in carts])
    zsc = T.encode_sorted(enc, [C.render_tree(c) for c in sc])
    ytr = np.array([C.exact_value(c, c.actions_left) >= 0 for c in carts])
    ysc = np.array([C.exact_value(c, c.actions_left) >= 0 for c in sc])
    ttr, tsc = np.array([c.total for c in carts]), np.array([c.total for c in sc])
    probes = {}
    for name, sl in (("all_windows", slice(None)), ("last_window", slice(enc.dim - enc.dim // 16, None))):
        for k in (16, 32, 64):
            x, y = _pca(ztr[:, sl], zsc[:, sl], k)
            probes[f"{name}_pca{k}"] = {**_ridge_f1(x, ytr, y, ysc), "total_r2": _ridge_r2(x, y, ttr, tsc)}
            print(name, k, probes[f"{name}_pca{k}"], flush=True)
    m = QModel.load(str(RESULTS / f"control_commerce_text_{a.task}_text.pt"))
    q = T.text_filter(m, enc, "reguard").q_batch([C.render_tree(c) for c in sc])
    margin = np.array([c.margin for c in sc])
    critic = {"corr_q_checkout_vs_margin": float(np.corrcoef(q[:, 0], margin)[0, 1]),
              "frac_q_checkout_positive": float((q[:, 0] > 0).mean()), "frac_margin_positive": float((margin > 0).mean()),
              "frac_max_q_positive": float((q.max(1) > 0).mean()), "frac_exact_safe": float(ysc.mean()),
              "argmax_counts": np.bincount(q.argmax(1), minlength=C.N_ACTIONS).tolist()}
    print(critic, flush=True)
    merge(f"probe_{a.task}", {"n_states": a.n, "scored_carts": a.scored, "probes": probes, "text_critic": critic,
                              "constant_safe_f1": float(2 * ysc.mean() / (1 + ysc.mean())),
                              "note": "ridge read-outs get the exact labels / totals of the training states: a "
                                      "diagnostic of the latent, not a guard"})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("stage", choices=["encode", "train", "probe"])
    ap.add_argument("--task", choices=["plain", "bundles"], default="plain")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--chunk", type=int, default=100)
    ap.add_argument("--budget", type=float, default=900.0)
    ap.add_argument("--max-states", type=int, default=2000)
    ap.add_argument("--val", type=int, default=100)
    ap.add_argument("--scored", type=int, default=200)
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--pcas", default="16,32,64")
    ap.add_argument("--iterations", type=int, default=60)
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--hidden", default="100,100")
    ap.add_argument("--kinds", default="privileged,text,text+numbers")
    ap.add_argument("--large", type=int, default=0, help="also the privileged critic on this many states")
    ap.add_argument("--noop", action="store_true", help="also the clicks on empty rows (one more page per state)")
    a = ap.parse_args()
    {"encode": stage_encode, "train": stage_train, "probe": stage_probe}[a.stage](a)


if __name__ == "__main__":
    main()
