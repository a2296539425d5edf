"""Backseat AI Driver (Tables 3 and 4 shape), a learned critic over the advice text -> results/control_backseat.json.

    nice -n 10 python benchmarks/control_backseat.py --save-models [--episodes 200] [--states 5000] [--encoder minilm]
    nice -n 10 python benchmarks/control_backseat.py --encoder wordllama --no-pooled --out /tmp/backseat_wl.json

Scripted human proxies (personas none and urgent; the urgent human does the opposite of calm advice).
Rows per persona, on the same seeded test starts (seed 0):

- human alone;
- exact shield / exact full with a scripted sentence (the exact fallback action as a calm or an urgent
  sentence; what this benchmark reported before the learned critic);
- exact advice oracle: the exact ``Q*(s, a^H, advice)`` choosing among the held-out sentences (an upper bound
  for the learned critic with the same sentences);
- learned critic (``agentguard.envs.backseat_critic``: ``Q([privileged state + human's intended action,
  E(advice text)])``, fitted Q-iteration on Eq. 5, one critic per persona, the persona being part of the
  environment): shielded (speak when ``Q(s, a^H, "(no advice)") <= epsilon``) and full (speak every step),
  choosing the highest-Q sentence among the *held-out* paraphrases (never seen in training); "+ privileged
  answer" restricts the choice to the sentences that name the exact fallback action (the paper appends that
  answer to its guard's prompt);
- pooled critic: one critic trained on both personas with the persona unobserved.

``epsilon`` is chosen per critic on validation starts (seed 1): the smallest value in the sweep whose
validation failure rate is within 0.01 of the sweep's lowest. Value F1 of ``Q > 0`` against ``Q* > tol``
over (state, intended action, sentence) pairs on 2000 road grid nodes (seed 5), for the training sentences
and the held-out ones.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from agentguard.bench.driving import cache_root, eval_states
from agentguard.control.encoders import MiniLMEncoder, WordLlamaEncoder
from agentguard.control.fqi import FQIConfig
from agentguard.envs import backseat as B
from agentguard.envs import backseat_critic as BC
from agentguard.envs import driving as D
from agentguard.envs.driving.value_iteration import DrivingValueGrid, solve_driving

EPSILONS = (-0.1, -0.05, 0.0, 0.05, 0.1, 0.2, 0.3, 0.5)


def _scripted(grid, urgent: bool, shielded: bool):
    def guard(s, own):
        if shielded and grid.q_values(s[None])[0, own] > grid.tol:
            return None
        return B.advice_text(int(grid.fallback(s[None])[0]), urgent)
    return guard


def _pick_epsilon(persona, critic, enc, texts, val, seed) -> tuple[float, list]:
    sweep = []
    for eps in EPSILONS:
        r = BC.run_episodes(persona, BC.learned_guard(critic, enc, texts, eps), val, seed)
        sweep.append({"epsilon": eps, "failure_rate": r["failure_rate"], "success_rate": r["success_rate"],
                      "intervention_rate": r["intervention_rate"]})
    best = min(r["failure_rate"] for r in sweep)
    return next(r["epsilon"] for r in sweep if r["failure_rate"] <= best + 0.01), sweep


def _row(persona, setting, res, **extra) -> dict:
    return {"persona": persona, "setting": setting, **extra, **res}


def _learned_rows(persona, name, critic, enc, grid, texts, val, starts, seed) -> tuple[list, dict]:
    eps, sweep = _pick_epsilon(persona, critic, enc, texts, val, seed)
    priv = {t: c.action for c in BC.CANDIDATES for t in [c.text]}
    allowed = (lambda s: [i for i, t in enumerate(texts) if priv.get(t) == int(grid.fallback(s[None])[0])])
    rows = [
        _row(persona, f"{name}, shielded", BC.run_episodes(persona, BC.learned_guard(critic, enc, texts, eps),
                                                            starts, seed), epsilon=eps),
        _row(persona, f"{name}, full", BC.run_episodes(persona, BC.learned_guard(critic, enc, texts, None),
                                                        starts, seed)),
        _row(persona, f"{name} + privileged answer, shielded",
             BC.run_episodes(persona, BC.learned_guard(critic, enc, texts, eps, allowed), starts, seed), epsilon=eps),
        _row(persona, f"{name} + privileged answer, full",
             BC.run_episodes(persona, BC.learned_guard(critic, enc, texts, None, allowed), starts, seed)),
    ]
    full_val = BC.run_episodes(persona, BC.learned_guard(critic, enc, texts, None), val, seed)
    return rows, {"epsilon": eps, "validation_sweep": sweep,
                  "validation_full": {k: full_val[k] for k in ("success_rate", "failure_rate")}}


def _value(critic, grid, persona, enc, probe, own) -> dict:
    out = {}
    for split in ("train", "test"):
        texts = [c.text for c in BC.candidates(split)]
        out[f"{split}_sentences"] = BC.value_f1(critic, grid, persona, probe, own, texts, enc.encode(texts))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=200)
    ap.add_argument("--states", type=int, default=5000)
    ap.add_argument("--iterations", type=int, default=80)
    ap.add_argument("--epochs", type=int, default=50)
    ap.add_argument("--encoder", choices=("wordllama", "minilm"), default="minilm")
    ap.add_argument("--no-pooled", action="store_true")
    ap.add_argument("--save-models", action="store_true", help="results/control_backseat_critic_<persona>.pt")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "control_backseat.json"))
    a = ap.parse_args()
    t0 = time.perf_counter()
    gpath = cache_root() / "control" / "driving_vi_r0.05_t64.npz"
    grid = DrivingValueGrid.load(str(gpath)) if gpath.exists() else solve_driving(0.05, 64)
    enc = WordLlamaEncoder(64) if a.encoder == "wordllama" else MiniLMEncoder()
    starts = D.sample_initial_states(a.episodes, seed=a.seed)
    val = D.sample_initial_states(a.episodes, seed=a.seed + 1)
    probe, _ = eval_states(grid, 2000, seed=5)
    own = D.weak_driver_policy(probe, np.random.default_rng(5))
    test_texts = [c.text for c in BC.candidates("test")]
    cfg = FQIConfig(hidden=(128, 128), iterations=a.iterations, epochs=a.epochs, seed=a.seed)
    rows, critics = [], {}
    for persona in B.PERSONAS:
        rows.append(_row(persona, "human alone", BC.run_episodes(persona, None, starts, a.seed)))
        for urgent in (False, True):
            style = "urgent" if urgent else "calm"
            for shielded in (True, False):
                kind = "shield" if shielded else "full"
                rows.append(_row(persona, f"exact {kind}, scripted {style} sentence",
                                 BC.run_episodes(persona, _scripted(grid, urgent, shielded), starts, a.seed)))
        for shielded in (True, False):
            rows.append(_row(persona, f"exact advice oracle (held-out sentences), {'shielded' if shielded else 'full'}",
                             BC.run_episodes(persona, BC.exact_guard(grid, persona, test_texts, shielded),
                                             starts, a.seed)))
        critic = BC.train_advice_critic(persona, enc, a.states, cfg, seed=a.seed)
        if a.save_models:
            critic.save(str(ROOT / "benchmarks" / "results" / f"control_backseat_critic_{persona}.pt"))
        lrows, info = _learned_rows(persona, "learned critic", critic, enc, grid, test_texts, val, starts, a.seed)
        rows += lrows
        critics[persona] = {**info, **_value(critic, grid, persona, enc, probe, own), "meta": critic.meta}
        print(persona, json.dumps({k: v for k, v in critics[persona].items() if k.endswith("sentences")}), flush=True)
    if not a.no_pooled:
        pooled = BC.train_advice_critic(list(B.PERSONAS), enc, a.states, cfg, seed=a.seed)
        critics["pooled"] = {"meta": pooled.meta}
        for persona in B.PERSONAS:
            lrows, info = _learned_rows(persona, "pooled critic (persona unobserved)", pooled, enc, grid,
                                        test_texts, val, starts, a.seed)
            rows += lrows[:2]
            critics["pooled"][persona] = {**info, **_value(pooled, grid, persona, enc, probe, own)}
    rep = {"command": "nice -n 10 python benchmarks/control_backseat.py " + " ".join(sys.argv[1:]),
           "episodes": a.episodes, "encoder": enc.name, "starts_in_exact_safe_set": float(grid.safe(starts).mean()),
           "starts": {"test_seed": a.seed, "validation_seed": a.seed + 1},
           "episode_record": "[outcome, steps, interventions] per test start, in D.sample_initial_states order",
           "sentences": {"train": [c.text for c in BC.candidates("train")], "test": test_texts},
           "critics": critics, "rows": rows, "seconds": time.perf_counter() - t0}
    Path(a.out).write_text(json.dumps(rep, indent=1))
    for r in rows:
        print(f"{r['persona']:7s} {r['setting']:58s} success {r['success_rate']:.3f} failure {r['failure_rate']:.3f}"
              f" interventions {r['intervention_rate']:.3f} said {r['said']}")


if __name__ == "__main__":
    main()
