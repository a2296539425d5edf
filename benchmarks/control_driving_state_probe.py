"""Diagnostic (issue 16): how well does gemma-3-270m's latent of the driving observation carry the state?

A ridge probe (kernel form, alpha chosen on an inner split of the training part) of the true state from
the pooled hidden states, scored by held-out R^2. Targets: goal distance ``x``, lateral position ``y``, the
heading's sine and cosine, the two obstacle distances, the first obstacle's bearing (sine, cosine) and the
safety margin. Layers 2..12 (final norm applied), poolings: 16 equal token-position windows (``w16``, the
guard's latent), per-sentence means (``smean``), the last token of each sentence (``slast``) and 4 windows
per sentence (``sw4``); sentences split at a period followed by white space (decimal points are followed
by digits). The probe's labels are the true state: this script measures what the latent carries; no guard
uses it.

Usage: ``nice -n 10 python benchmarks/control_driving_state_probe.py [--n 1500]``
-> ``benchmarks/results/control_driving_state_probe.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time

import numpy as np

from agentguard.bench.driving import RESULTS
from agentguard.envs import driving as D
from agentguard.envs.driving.text_latent import training_states

OUT = RESULTS / "control_driving_state_probe.json"
LAYERS = (2, 4, 6, 8, 12)


def pooled_latents(texts: list[str], batch: int = 16) -> tuple[dict[str, np.ndarray], float]:
    """``{"L<layer>-<pool>": (n, dim)}`` for every layer in LAYERS and pooling, in one pass per batch."""
    import torch

    from agentguard.control.encoders import _truncated, _window_means
    from agentguard.llm.local import load_gemma

    torch.set_num_threads(1)
    model, tok = load_gemma()
    base = _truncated(model.model, max(LAYERS))
    feats: dict[str, list] = {}
    t0 = time.perf_counter()
    for i in range(0, len(texts), batch):
        chunk = texts[i:i + batch]
        enc = tok(chunk, return_tensors="pt", padding=True, return_offsets_mapping=True)
        offs = enc.pop("offset_mapping")
        mask = enc["attention_mask"]
        with torch.no_grad():
            hs = base(input_ids=enc["input_ids"], attention_mask=mask, output_hidden_states=True).hidden_states
            for j, text in enumerate(chunk):
                n = int(mask[j].sum())
                ends = np.array([m.end() for m in re.finditer(r"\.(\s|$)", text)])
                sid = np.minimum(np.searchsorted(ends, offs[j, :n, 0].numpy(), side="right"), len(ends) - 1)
                parts = [torch.from_numpy(sid == s) for s in range(len(ends))]
                for layer in LAYERS:
                    h = hs[layer][j, :n].float()
                    h = h if layer == len(base.layers) else base.norm(h)  # the last entry is already normed
                    pools = {"w16": _window_means(h, 16),
                             "smean": torch.cat([h[p].mean(0) for p in parts]),
                             "slast": torch.cat([h[int(np.flatnonzero(p.numpy())[-1])] for p in parts]),
                             "sw4": torch.cat([_window_means(h[p], 4) for p in parts])}
                    for name, v in pools.items():
                        feats.setdefault(f"L{layer}-{name}", []).append(v.numpy())
        print(f"{i + len(chunk)}/{len(texts)} texts, {time.perf_counter() - t0:.0f} s", flush=True)
    return {k: np.stack(v).astype(np.float64) for k, v in feats.items()}, time.perf_counter() - t0


def targets(states: np.ndarray) -> dict[str, np.ndarray]:
    x, y, th = states.T
    obs = np.array([[np.hypot(c[0] - s[0], c[1] - s[1]) for c in D.OBSTACLES] for s in states])
    bear = np.array([np.arctan2(D.OBSTACLES[0][1] - s[1], D.OBSTACLES[0][0] - s[0]) - s[2] for s in states])
    return {"x": x, "y": y, "heading_sin": np.sin(th), "heading_cos": np.cos(th), "obstacle1_distance": obs[:, 0],
            "obstacle2_distance": obs[:, 1], "bearing1_sin": np.sin(bear), "bearing1_cos": np.cos(bear),
            "margin": D.margin(states)}


def ridge_r2(z: np.ndarray, t: np.ndarray, k: int, alphas=(1.0, 10.0, 100.0, 1000.0)) -> float:
    """Held-out R^2 of kernel ridge (linear kernel on standardised features) trained on the first k rows;
    alpha by an 80/20 split of the training part."""
    mu, sd = z[:k].mean(0), z[:k].std(0) + 1e-6
    a, b = (z[:k] - mu) / sd, (z[k:] - mu) / sd
    gram, cross = a @ a.T, b @ a.T
    kk = int(0.8 * k)

    def fit(g, y, al):
        return np.linalg.solve(g + al * np.eye(len(g)), y - y.mean())

    err = {al: np.mean((gram[kk:, :kk] @ fit(gram[:kk, :kk], t[:kk], al) + t[:kk].mean() - t[kk:k]) ** 2)
           for al in alphas}
    al = min(err, key=err.get)
    pred = cross @ fit(gram, t[:k], al) + t[:k].mean()
    return float(1 - np.mean((pred - t[k:]) ** 2) / np.var(t[k:]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1500)
    args = ap.parse_args()
    states = training_states(args.n, seed=7)
    z, secs = pooled_latents([D.observation_text(s) for s in states])
    k = int(0.7 * args.n)
    tg = targets(states)
    r2 = {}
    for name in sorted(z, key=lambda s: (int(s.split("-")[0][1:]), s)):
        r2[name] = {t: round(ridge_r2(z[name], v, k), 3) for t, v in tg.items()}
        print(name, z[name].shape[1], r2[name], flush=True)
    OUT.write_text(json.dumps({
        "n_states": args.n, "train": k, "held_out": args.n - k, "encode_seconds": secs, "r2": r2,
        "dims": {n: int(v.shape[1]) for n, v in z.items()},
        "command": "nice -n 10 python benchmarks/control_driving_state_probe.py " + " ".join(sys.argv[1:])},
        indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
