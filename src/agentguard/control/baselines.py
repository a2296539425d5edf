"""Baselines of the ReGuard paper's evaluation (section 6.1 and 6.2).

- *Myopic*: the one-step margin ``l(f(s, a))`` as monitor and its argmax as fallback (see
  :class:`agentguard.envs.driving.guard.MyopicQ`); it looks one step ahead only.
- *LlamaGuard-style one-step classifier + stop* (:class:`OneStepClassifier`): a binary classifier of
  ``(z, a) -> P(s+ not in F)`` trained by cross-entropy on state-action pairs from rollouts of the base
  policy (label 1 unless the very next state fails), used as a monitor with the ``stop`` policy
  (``SafetyFilter(..., intervention="stop")``; its Q-values are ``P(safe) - 0.5``).
- *No guard*: the base policy alone.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.errors import InputError, require

__all__ = ["OneStepClassifier", "train_one_step_classifier"]


@dataclass
class OneStepClassifier:
    """``q_values(z) = P(safe | z, a) - 0.5`` for every action (an MLP on [z, onehot(a)])."""

    net: Any
    in_dim: int
    n_actions: int
    seconds: float = 0.0
    meta: dict = field(default_factory=dict)

    def q_values(self, z: np.ndarray) -> np.ndarray:
        torch = require("torch", "control")
        z = np.atleast_2d(np.asarray(z, dtype=np.float32))
        if z.shape[1] != self.in_dim:
            raise InputError(f"latent has dimension {z.shape[1]}, the classifier expects {self.in_dim}")
        n = len(z)
        zz = np.repeat(z, self.n_actions, axis=0)
        oh = np.tile(np.eye(self.n_actions, dtype=np.float32), (n, 1))
        with torch.no_grad():
            p = torch.sigmoid(self.net(torch.from_numpy(np.concatenate([zz, oh], 1)))).numpy()
        return p.reshape(n, self.n_actions).astype(float) - 0.5

    def save(self, path: str) -> None:
        torch = require("torch", "control")
        torch.save({"state_dict": self.net.state_dict(), "in_dim": self.in_dim, "n_actions": self.n_actions,
                    "seconds": self.seconds, "meta": self.meta}, path)

    @classmethod
    def load(cls, path: str) -> OneStepClassifier:
        torch = require("torch", "control")
        d = torch.load(path, map_location="cpu", weights_only=False)
        net = _net(d["in_dim"] + d["n_actions"])
        net.load_state_dict(d["state_dict"])
        net.eval()
        return cls(net, d["in_dim"], d["n_actions"], d.get("seconds", 0.0), d.get("meta", {}))


def _net(d: int):
    torch = require("torch", "control")
    nn = torch.nn
    return nn.Sequential(nn.Linear(d, 128), nn.Tanh(), nn.Linear(128, 64), nn.Tanh(), nn.Linear(64, 1))


def train_one_step_classifier(z: np.ndarray, a: np.ndarray, safe_next: np.ndarray, n_actions: int,
                              epochs: int = 5, batch_size: int = 128, lr: float = 3e-3, seed: int = 0,
                              threads: int = 2) -> OneStepClassifier:
    """Binary cross-entropy on (z, a) -> 1[s+ not in F] (Table 8 of the paper, as a small MLP)."""
    torch = require("torch", "control")
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    z = np.asarray(z, np.float32)
    x = np.concatenate([z, np.eye(n_actions, dtype=np.float32)[np.asarray(a, int)]], 1)
    y = np.asarray(safe_next, np.float32)
    if len(x) == 0:
        raise InputError("the one-step classifier needs at least one labelled state-action pair")
    net = _net(x.shape[1])
    opt = torch.optim.AdamW(net.parameters(), lr=lr)
    pos = max(1.0, float(y.sum()))
    neg = max(1.0, float(len(y) - y.sum()))
    lossf = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(neg / pos))  # balance the rare failures
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    X, Y = torch.from_numpy(x), torch.from_numpy(y)
    for _ in range(epochs):
        perm = rng.permutation(len(x))
        for i in range(0, len(x), batch_size):
            idx = torch.from_numpy(perm[i:i + batch_size])
            loss = lossf(net(X[idx]).squeeze(1), Y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    net.eval()
    return OneStepClassifier(net, z.shape[1], n_actions, time.perf_counter() - t0,
                             {"n": len(x), "positive_fraction": float(y.mean())})
