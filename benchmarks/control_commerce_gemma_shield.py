"""Shielding a language-model shopper (the shape of Figure 4 of the ReGuard paper, in Agentic Commerce).

Base policy: gemma-3-270m clicking the element id of highest log-likelihood for the Appendix C commerce chat
(:class:`agentguard.bench.llm_shopper.GemmaCartChooser`). Conditions, on the first ``--episodes`` of the
seeded carts of ``agentguard bench commerce`` (plain task): unguarded; shielded (switch to argmax_a Q when
Q(z, a_task) <= 0) by each commerce critic: privileged DDQN, text + parsed numbers DDQN, the text-only
FQI critic (gemma hidden states; a constant predictor, see docs/control.md), the myopic one-step filter;
with ``--blend`` the Eq. 4 blend ``argmax_i log pi_LM(i) + beta Q(z, i)`` with those critics (Q in dollars
of budget margin) for each ``--betas``. Every episode is saved.

Usage: ``nice -n 10 python benchmarks/control_commerce_gemma_shield.py --episodes 20``
-> ``benchmarks/results/control_commerce_gemma_shield.json``;
``... --rows "" --blend privileged,reguard --betas 1,10 --out control_commerce_gemma_blend.json``: unguarded
and the blends only.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time

import numpy as np

from agentguard.bench.commerce import _CartParse, _ddqn_rows, _filter, _fqi_rows, _MyopicCommerce
from agentguard.bench.driving import RESULTS
from agentguard.bench.llm_shopper import GemmaCartChooser
from agentguard.envs import commerce as C


def episode(cart: C.Cart, chooser: GemmaCartChooser, filt, beta: float | None = None) -> dict:
    """One cart: shielded by ``filt`` (``beta`` None) or the Eq. 4 blend with its Q (``beta``)."""
    c = C.Cart(list(cart.items), cart.actions_left, list(cart.bundles))
    rec = {"prices": c.prices, "proposed": [], "executed": [], "interventions": 0}
    while True:
        prop = chooser(c)
        exe = prop
        if filt is not None:
            q = filt.q_batch([C.render_tree(c)])[0]
            if beta is None:  # an intervention is the filter's switch (its fallback may equal the proposal)
                inter, act = filt.decide_batch(q[None], np.array([prop]))
                exe = int(act[0])
                rec["interventions"] += int(inter[0])
            else:  # the blend changed the model's choice
                exe = chooser.blend(c, q, beta)
                rec["interventions"] += int(exe != prop)
        rec["proposed"].append(prop)
        rec["executed"].append(exe)
        c, done = C.step(c, exe)
        if done:
            rec.update({"total": c.total, "outcome": "success" if c.margin >= 0 else "failure"})
            return rec


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rows", default="privileged,text_numbers,myopic,reguard")
    ap.add_argument("--blend", default="", help="critics for the Eq. 4 blend (default: none)")
    ap.add_argument("--betas", default="1,10")
    ap.add_argument("--out", default="control_commerce_gemma_shield.json")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    carts = [C.random_cart(rng) for _ in range(200)][: args.episodes]  # the bench's seeded carts
    ddqn, _ = _ddqn_rows(False, args.seed, False, None, True)
    fqi, skipped = _fqi_rows(False, "plain", args.seed, False, True)
    pool = {**ddqn, **fqi, "myopic": _filter(_MyopicCommerce(), _CartParse(), "myopic")}
    conds: dict = {"no_guard": (None, None)}
    conds.update({r: (pool[r], None) for r in args.rows.split(",") if r in pool})
    conds.update({f"blend_{r}_beta{b}": (pool[r], float(b)) for r in args.blend.split(",") if r in pool
                  for b in args.betas.split(",")})
    chooser = GemmaCartChooser(threads=args.threads)
    out = {"episodes": args.episodes, "seed": args.seed, "task": "plain",
           "base_policy": "gemma-3-270m, element id of highest log-likelihood of the complete answer (Appendix C chat)",
           "feasible_fraction": float(np.mean([C.exact_value(c, c.actions_left) >= 0 for c in carts])),
           "skipped": {r: skipped[r] for r in (args.rows + "," + args.blend).split(",") if r in skipped},
           "blend": "Eq. 4, greedy: argmax_i log P_gemma(' i' | prompt) + beta Q(z, i), Q in dollars of margin",
           "conditions": {}}
    t0 = time.perf_counter()
    for name, (filt, beta) in conds.items():
        t1 = time.perf_counter()
        eps = [episode(c, chooser, filt, beta) for c in carts]
        dec = sum(len(e["executed"]) for e in eps)
        out["conditions"][name] = {
            "success_rate": float(np.mean([e["outcome"] == "success" for e in eps])),
            "failure_rate": float(np.mean([e["outcome"] == "failure" for e in eps])),
            "intervention_rate": sum(e["interventions"] for e in eps) / max(1, dec), "decisions": dec,
            "beta": beta, "seconds": time.perf_counter() - t1, "records": eps}
        m = out["conditions"][name]
        print(f"{name:14s} success {m['success_rate']:.2f} failure {m['failure_rate']:.2f} "
              f"interventions {m['intervention_rate']:.2f} (gemma prompts {chooser.calls})", flush=True)
        out.update({"gemma_prompt_passes": chooser.calls, "seconds": time.perf_counter() - t0,
                    "complete": len(out["conditions"]) == len(conds),
                    "command": "nice -n 10 python benchmarks/control_commerce_gemma_shield.py " + shlex.join(sys.argv[1:])})
        (RESULTS / args.out).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
