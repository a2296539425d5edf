"""Double DQN on the discounted safety Bellman equation (Eq. 5, Appendix A of the ReGuard paper).

The Q-network maps a latent ``z`` (the true state for *Privileged*, an encoding of the text
observation for *ReGuard*) to one Q-value per action. Training minimises the squared error to the
target of :func:`~agentguard.control.bellman.discounted_safety_target` with a soft-updated target
network (DDQN: the online network picks ``argmax_a Q(z+, a)``, the target network evaluates it).

Data come from a *transition sampler* (``sample(batch, rng) -> Transitions``). The simulators here
are cheap and resettable, so the samplers draw states uniformly over the region of interest and an
action uniformly at random (exploring starts) instead of filling a replay buffer from epsilon-greedy
episodes; the Bellman target is the same. :class:`ReplayBuffer` is a sampler over a fixed set of
transitions (the text-latent guard trains on pre-encoded observations this way).

PyTorch is imported lazily; ``torch==2.13.0`` CPU is the pinned version (extra ``control``).
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import numpy as np

from ..core.errors import InputError, require
from .bellman import discounted_safety_target

__all__ = ["DDQNConfig", "QModel", "ReplayBuffer", "TransitionSampler", "Transitions", "f1_score", "train_ddqn"]


@dataclass
class Transitions:
    """A batch: ``z`` (n, d), ``a`` (n,), ``l_next`` (n,), ``z_next`` (n, d), ``done`` (n,) bool."""

    z: np.ndarray
    a: np.ndarray
    l_next: np.ndarray
    z_next: np.ndarray
    done: np.ndarray


class TransitionSampler(Protocol):
    def sample(self, batch_size: int, rng: np.random.Generator) -> Transitions: ...


@dataclass
class ReplayBuffer:
    """Uniform sampling from a fixed set of transitions."""

    data: Transitions

    def __post_init__(self) -> None:
        n = len(self.data.a)
        if not all(len(x) == n for x in (self.data.z, self.data.l_next, self.data.z_next, self.data.done)):
            raise InputError("replay buffer arrays must have the same length")

    def __len__(self) -> int:
        return len(self.data.a)

    def sample(self, batch_size: int, rng: np.random.Generator) -> Transitions:
        i = rng.integers(0, len(self), size=batch_size)
        d = self.data
        return Transitions(d.z[i], d.a[i], d.l_next[i], d.z_next[i], d.done[i])


def _annealed_gamma(start: float, end: float, period: int, t: int) -> float:
    """The discount at step ``t``, annealed towards ``end``: 1 - gamma halves every ``period`` steps."""
    if end <= start:
        return start
    return min(end, 1 - (1 - start) * 0.5 ** (t // period))


@dataclass
class DDQNConfig:
    """Hyperparameters (Table 6 of the paper for the architecture; shorter schedules for CPU)."""

    hidden: tuple[int, ...] = (100, 100)
    activation: str = "tanh"
    batch_size: int = 512
    iterations: int = 20_000
    lr_start: float = 1e-3
    lr_end: float = 1e-4
    lr_decay: float = 0.8
    lr_period: int = 2_000
    tau: float = 0.01
    gamma_start: float = 0.99
    gamma_end: float = 0.99
    gamma_period: int = 2_000
    seed: int = 0
    threads: int = 1  # more threads only spin on a shared, busy machine

    def lr(self, t: int) -> float:
        return max(self.lr_end, self.lr_start * self.lr_decay ** (t // self.lr_period))

    def gamma(self, t: int) -> float:
        return _annealed_gamma(self.gamma_start, self.gamma_end, self.gamma_period, t)


def _mlp(in_dim: int, n_actions: int, hidden: tuple[int, ...], activation: str):
    torch = require("torch", "control")
    nn = torch.nn
    act = {"tanh": nn.Tanh, "relu": nn.ReLU, "gelu": nn.GELU}[activation]
    layers: list[Any] = []
    d = in_dim
    for h in hidden:
        layers += [nn.Linear(d, h), act()]
        d = h
    layers.append(nn.Linear(d, n_actions))
    return nn.Sequential(*layers)


@dataclass
class QModel:
    """A trained Q-network with numpy in/out: ``q_values(z) -> (n, n_actions)``."""

    net: Any
    in_dim: int
    n_actions: int
    config: DDQNConfig
    history: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    meta: dict = field(default_factory=dict)

    def q_values(self, z: np.ndarray) -> np.ndarray:
        torch = require("torch", "control")
        z = np.atleast_2d(np.asarray(z, dtype=np.float32))
        if z.shape[1] != self.in_dim:
            raise InputError(f"latent has dimension {z.shape[1]}, the Q-network expects {self.in_dim}")
        with torch.no_grad():
            return self.net(torch.from_numpy(z)).numpy().astype(float)

    def save(self, path: str) -> None:
        torch = require("torch", "control")
        torch.save({"state_dict": self.net.state_dict(), "in_dim": self.in_dim, "n_actions": self.n_actions,
                    "config": asdict(self.config), "history": self.history, "seconds": self.seconds,
                    "meta": self.meta}, path)

    @classmethod
    def load(cls, path: str) -> QModel:
        torch = require("torch", "control")
        try:
            d = torch.load(path, map_location="cpu", weights_only=False)
        except Exception as exc:
            raise InputError(f"cannot load Q-network {path}: {exc}") from None
        cfg = DDQNConfig(**{**d["config"], "hidden": tuple(d["config"]["hidden"])})
        net = _mlp(d["in_dim"], d["n_actions"], cfg.hidden, cfg.activation)
        net.load_state_dict(d["state_dict"])
        net.eval()
        return cls(net, d["in_dim"], d["n_actions"], cfg, d.get("history", []), d.get("seconds", 0.0),
                   d.get("meta", {}))


def train_ddqn(sampler: TransitionSampler, in_dim: int, n_actions: int, config: DDQNConfig | None = None,
               progress: bool = False, callback: Callable[[int, QModel], dict] | None = None,
               log_every: int = 1000) -> QModel:
    """Train a Q-network by DDQN on the discounted safety Bellman target (Eq. 5).

    ``callback(iteration, model)`` (optional) is called every ``log_every`` iterations and may return
    numbers to store in ``model.history``. Deterministic for a given seed and thread count.
    """
    torch = require("torch", "control")
    cfg = config or DDQNConfig()
    torch.manual_seed(cfg.seed)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    rng = np.random.default_rng(cfg.seed)
    net = _mlp(in_dim, n_actions, cfg.hidden, cfg.activation)
    target = _mlp(in_dim, n_actions, cfg.hidden, cfg.activation)
    target.load_state_dict(net.state_dict())
    opt = torch.optim.AdamW(net.parameters(), lr=cfg.lr_start, eps=1e-5, weight_decay=0.0)
    model = QModel(net, in_dim, n_actions, cfg)
    t0 = time.perf_counter()
    c0 = time.process_time()
    running = 0.0
    for it in range(1, cfg.iterations + 1):
        b = sampler.sample(cfg.batch_size, rng)
        z = torch.from_numpy(np.asarray(b.z, dtype=np.float32))
        zn = torch.from_numpy(np.asarray(b.z_next, dtype=np.float32))
        a = torch.from_numpy(np.asarray(b.a, dtype=np.int64))
        ln = torch.from_numpy(np.asarray(b.l_next, dtype=np.float32))
        done = torch.from_numpy(np.asarray(b.done, dtype=bool))
        gamma = cfg.gamma(it)
        with torch.no_grad():
            a_star = net(zn).argmax(dim=1, keepdim=True)
            q_next = target(zn).gather(1, a_star).squeeze(1)
            y = discounted_safety_target(ln, q_next, done, gamma)
        q = net(z).gather(1, a[:, None]).squeeze(1)
        loss = torch.nn.functional.mse_loss(q, y)
        for g in opt.param_groups:
            g["lr"] = cfg.lr(it)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        with torch.no_grad():
            for p, pt in zip(net.parameters(), target.parameters()):
                pt.mul_(1 - cfg.tau).add_(p, alpha=cfg.tau)
        lv = float(loss.detach())
        running = 0.98 * running + 0.02 * lv if it > 1 else lv
        if it % log_every == 0 or it == cfg.iterations:
            rec = {"iteration": it, "loss": running, "gamma": gamma, "lr": cfg.lr(it),
                   "seconds": time.perf_counter() - t0}
            if callback is not None:
                net.eval()
                rec.update(callback(it, model) or {})
                net.train()
            model.history.append(rec)
            if progress:
                extra = " ".join(f"{k}={v:.4g}" for k, v in rec.items()
                                 if k not in ("iteration",) and isinstance(v, float))
                print(f"  ddqn {it}/{cfg.iterations} {extra}", file=sys.stderr, flush=True)
    net.eval()
    model.seconds = time.perf_counter() - t0
    model.meta["cpu_seconds"] = time.process_time() - c0
    model.meta["wall_seconds"] = model.seconds
    return model


def f1_score(pred: np.ndarray, truth: np.ndarray) -> float:
    """F1 of boolean predictions (positive = True)."""
    pred, truth = np.asarray(pred, bool), np.asarray(truth, bool)
    tp = float(np.sum(pred & truth))
    fp = float(np.sum(pred & ~truth))
    fn = float(np.sum(~pred & truth))
    return 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else math.nan


def dumps_config(cfg: DDQNConfig) -> str:
    return json.dumps(asdict(cfg))
