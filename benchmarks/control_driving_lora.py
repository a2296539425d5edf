"""What one LoRA DDQN training step through gemma-3-270m costs on this machine (issue 31).

The ReGuard paper trains the safety critic through the language model: a Q-head on the LM's latent with
LoRA adapters, fitted by double DQN on the Eq. 5 target. This script times that step on the CPU (threads
as given): LoRA (peft, rank ``--rank`` on the attention q/v projections) on all 18 layers of gemma-3-270m, a
linear Q-head on the last token's final hidden state, a batch of ``--batch`` driving transitions (observation
texts): one forward + backward + Adam step on the current texts and two no-grad forwards on the next texts
(online argmax and target value, DDQN). The Eq. 5 target is
:func:`agentguard.control.bellman.discounted_safety_target`. The first step (warm-up) is not counted.

It writes benchmarks/results/control_driving_lora.json with the measured seconds per step and what a
training budget would cost at that rate (no training run is made beyond the timed steps).

Needs the ``lora`` extra (peft). Usage: ``nice -n 19 python benchmarks/control_driving_lora.py --batch 8 --steps 2``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
import time

import numpy as np

from agentguard.bench.driving import RESULTS
from agentguard.control.bellman import discounted_safety_target
from agentguard.envs import driving as D

OUT = RESULTS / "control_driving_lora.json"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--rank", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    import torch
    from peft import LoraConfig, get_peft_model

    from agentguard.llm.local import load_gemma

    torch.set_num_threads(args.threads)
    model, tok = load_gemma()
    base = model.model
    lora = get_peft_model(base, LoraConfig(r=args.rank, lora_alpha=2 * args.rank, target_modules=["q_proj", "v_proj"],
                                           lora_dropout=0.0))
    head = torch.nn.Linear(base.config.hidden_size, 3)
    params = [p for p in lora.parameters() if p.requires_grad] + list(head.parameters())
    opt = torch.optim.Adam(params, lr=1e-4)
    target_head = torch.nn.Linear(base.config.hidden_size, 3)
    target_head.load_state_dict(head.state_dict())

    def q_of(texts):
        enc = tok(texts, return_tensors="pt", padding=True)
        mask = enc["attention_mask"]
        h = lora(input_ids=enc["input_ids"], attention_mask=mask).last_hidden_state
        return h[torch.arange(h.shape[0]), mask.sum(1) - 1].float()

    rng = np.random.default_rng(5)
    times, cpu = [], []
    for step in range(args.steps + 1):
        s = D.sample_initial_states(args.batch, seed=int(rng.integers(1 << 30)))
        a = rng.integers(0, 3, args.batch)
        nxt = D.step(s, a)
        l_next = torch.tensor(D.margin(nxt), dtype=torch.float32)
        done = l_next < 0
        t0, c0 = time.perf_counter(), time.process_time()
        with torch.no_grad():
            z_next = q_of([D.observation_text(x) for x in nxt])  # one LM pass serves both heads' features
            a_star = head(z_next).argmax(1)  # online argmax (DDQN)
            z_t = q_of([D.observation_text(x) for x in nxt])  # the target network's pass (its own adapters)
            q_next = target_head(z_t).gather(1, a_star[:, None])[:, 0]
            y = discounted_safety_target(l_next, q_next, done, 0.99)
        q = head(q_of([D.observation_text(x) for x in s])).gather(1, torch.as_tensor(a)[:, None])[:, 0]
        loss = torch.nn.functional.mse_loss(q, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        dt = time.perf_counter() - t0
        print(f"step {step}: {dt:.2f}s loss {loss.item():.4f}", flush=True)
        if step > 0:
            times.append(dt)
            cpu.append(time.process_time() - c0)
    sec = float(np.median(times))
    trainable = sum(p.numel() for p in params)
    rep = {"command": "nice -n 19 python benchmarks/control_driving_lora.py " + shlex.join(sys.argv[1:]),
           "model": "gemma-3-270m (18 layers), LoRA on q_proj/v_proj", "rank": args.rank, "batch": args.batch,
           "threads": args.threads, "trainable_parameters": trainable, "timed_steps": len(times),
           "seconds_per_step": times, "median_seconds_per_step": sec,
           "cpu_seconds_per_step": cpu,
           "seconds_per_transition": sec / args.batch,
           "text_critic_transitions": 15000, "ddqn_schedule_steps": 24000,
           "budgets_at_this_rate_hours": {
               "24000 steps (the privileged DDQN's schedule) at this batch": 24000 * sec / 3600,
               "one pass over 5000 states x 3 actions (the text critic's data)": 15000 / args.batch * sec / 3600,
               "10 minutes": {"steps": int(600 // sec), "transitions": int(600 // sec) * args.batch}},
           "machine": {"host": platform.node(), "cpus": os.cpu_count(), "loadavg_end": list(os.getloadavg())},
           "note": "the 2 cores are shared by other jobs (loadavg above); the figure is this run's wall time"}
    OUT.write_text(json.dumps(rep, indent=1) + "\n")
    print(json.dumps(rep, indent=1))


if __name__ == "__main__":
    main()
