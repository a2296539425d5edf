"""Shielding a language-model driver (the shape of Figure 4 of the ReGuard paper) on Agentic Driving.

Base policy: gemma-3-270m choosing the answer letter of highest log-likelihood for the Appendix C chat
(:class:`agentguard.bench.llm_driver.GemmaChoiceDriver`). Conditions, on the same seeded starts:
unguarded; shielded (switch to argmax_a Q when Q(z, a_task) <= epsilon) by each critic; and the Eq. 4
blend argmax_a log pi_LM(a) + beta Q(z, a) with each critic. Critics: privileged (true state), ReGuard
(text-only latent), text + parsed numbers, exact grid (reference). Every episode is saved.

Usage: ``nice -n 15 python benchmarks/control_driving_gemma_shield.py --episodes 8``
-> ``benchmarks/results/control_driving_gemma_shield.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from agentguard.bench.driving import RESULTS
from agentguard.bench.llm_driver import GemmaChoiceDriver
from agentguard.envs import driving as D

sys.path.insert(0, str(RESULTS.parent))
from control_driving_text import _filters, load_grid  # noqa: E402


def kernel_filters(args) -> tuple[dict, dict]:
    """``--models kernel``: the critics of control_driving_kernel.py (kernel FQI on 5000 states) with the
    epsilon each chose on validation starts (the eval section ``--section``), plus the committed privileged
    DDQN and the parsed-numbers row."""
    from control_driving_kernel import OUT, _baseline_filters, _encoder

    from agentguard.control.kernel_fqi import KernelQ
    from agentguard.envs.driving.guard import make_filter
    from agentguard.envs.driving.text_latent import text_only_filter

    rep = json.loads(OUT.read_text())
    ev = rep[args.section]
    chosen, eps = rep["sweep"]["chosen"], ev["epsilon_chosen"]
    name = args.encoders.split(",")[0]
    f = _baseline_filters(args.epsilon)
    text_path = ev.get("text_critic_selection", {}).get("saved_as") or chosen[f"{name}@5000"]["saved_as"]
    f["reguard"] = text_only_filter(KernelQ.load(text_path), _encoder(name), float(eps["reguard"]))
    f["privileged_same_states"] = make_filter("privileged", KernelQ.load(chosen["privileged@5000"]["saved_as"]),
                                              epsilon=float(eps["privileged_same_states"]))
    return f, {k: float(v) for k, v in eps.items()}


def episode(start, driver, filt, mode: str, beta: float, epsilon: float) -> dict:
    s = np.asarray(start, float).copy()
    rec = {"start": s.tolist(), "proposed": [], "executed": [], "interventions": 0, "outcome": "timeout"}
    for _ in range(D.HORIZON):
        prop = int(driver(s[None], None)[0])
        if filt is None:
            exe = prop
        else:
            q = filt.q_batch([D.observation_text(s)])[0]
            if mode == "shield":
                exe = int(np.argmax(q)) if q[prop] <= epsilon else prop
            else:
                exe = int(driver.blend(s[None], q[None], beta)[0])
        rec["proposed"].append(prop)
        rec["executed"].append(exe)
        rec["interventions"] += int(exe != prop)
        s = D.step(s[None], np.array([exe]))[0]
        if D.margin(s[None])[0] < 0:
            rec["outcome"] = "failure"
            break
        if D.goal_reached(s[None])[0]:
            rec["outcome"] = "success"
            break
    rec["steps"] = len(rec["executed"])
    return rec


def main() -> None:
    from agentguard.envs.driving.guard import make_filter

    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=8)
    ap.add_argument("--epsilon", type=float, default=0.1)
    ap.add_argument("--beta", type=float, default=10.0)
    ap.add_argument("--encoders", default="gemma-L4-last")
    ap.add_argument("--critics", default="privileged,reguard,text_plus_parsed_numbers,exact")
    ap.add_argument("--blend", default="", help="critics for the Eq. 4 blend (default: every critic)")
    ap.add_argument("--models", choices=["ddqn", "fqi", "kernel"], default="ddqn")
    ap.add_argument("--betas", default="", help="Eq. 4 blend: several beta values (default: --beta)")
    ap.add_argument("--out", default="control_driving_gemma_shield.json")
    ap.add_argument("--section", default="eval", help="--models kernel: the control_driving_kernel.json eval "
                    "section whose text-only critic and epsilons to use")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    grid = load_grid()
    filters, eps_by = kernel_filters(args) if args.models == "kernel" else (_filters(args, args.epsilon), {})
    filters["exact"] = make_filter("exact", grid=grid)
    driver = GemmaChoiceDriver(threads=args.threads, reuse_prefix=True)  # exact: tested against the full pass
    starts = D.sample_initial_states(args.episodes, seed=0)
    conds = [("unguarded", None, "none")]
    blend = args.blend.split(",") if args.blend else args.critics.split(",")
    shields = [(f"shield_{c}", filters[c], "shield") for c in args.critics.split(",")]
    # the first two shields, then the Eq. 4 blends, then the other shields (the JSON is written after each)
    betas = [float(b) for b in args.betas.split(",")] if args.betas else [args.beta]
    blends = [(f"blend_{c}" + (f"_beta{b:g}" if args.betas else ""), filters[c], "blend", b) for c in blend for b in betas]
    conds = [c + (args.beta,) for c in conds + shields[:2]] + blends + [c + (args.beta,) for c in shields[2:]]
    out = {"episodes": args.episodes, "seed": 0, "epsilon": args.epsilon, "beta": args.beta,
           "base_policy": "gemma-3-270m argmax letter log-likelihood (Appendix C chat)",
           "starts_in_exact_safe_set": float(grid.safe(starts).mean()), "models": args.models,
           "kernel_eval_section": args.section if args.models == "kernel" else None,
           "reguard_encoder": args.encoders.split(",")[0], "gemma_threads": args.threads,
           "gemma_prefix_kv_reuse": True, "conditions": {}}
    t0 = time.perf_counter()
    out["epsilon_by_critic"] = eps_by or None
    for name, filt, mode, beta in conds:
        t1 = time.perf_counter()
        e_c = eps_by.get(name.removeprefix("shield_"), args.epsilon)
        eps = [episode(s, driver, filt, mode, beta, e_c) for s in starts]
        n_dec = sum(e["steps"] for e in eps)
        out["conditions"][name] = {
            "success_rate": float(np.mean([e["outcome"] == "success" for e in eps])),
            "failure_rate": float(np.mean([e["outcome"] == "failure" for e in eps])),
            "intervention_rate": sum(e["interventions"] for e in eps) / max(1, n_dec),
            "decisions": n_dec, "seconds": time.perf_counter() - t1, "epsilon": e_c if mode == "shield" else None,
            "beta": beta if mode == "blend" else None, "records": eps}
        m = out["conditions"][name]
        print(f"{name:36s} success {m['success_rate']:.2f} failure {m['failure_rate']:.2f} "
              f"interventions {m['intervention_rate']:.2f} (gemma calls so far {driver.calls})", flush=True)
        out["gemma_forward_passes"] = driver.calls
        out["seconds"] = time.perf_counter() - t0
        out["complete"] = len(out["conditions"]) == len(conds)  # written after every condition
        out["command"] = "nice -n 10 python benchmarks/control_driving_gemma_shield.py " + " ".join(sys.argv[1:])
        (RESULTS / args.out).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
