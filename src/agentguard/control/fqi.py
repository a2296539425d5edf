"""Fitted Q-iteration on the discounted safety Bellman equation (Eq. 5, Appendix A of the ReGuard paper).

Over a *fixed* set of transitions ``(z, a, l(s+), z+, done)`` (every next latent encoded too), iterate::

    y_k(z, a) = (1 - gamma_k) l(s+) + gamma_k min{ l(s+), max_a+ Q_{k-1}(z+, a+) }     (Eq. 5)
    y_k(z, a) = l(s+)                                                     where s+ is a failure
    Q_k       = argmin_Q  sum (Q(z, a) - y_k(z, a))^2     (warm-started network, ``epochs`` full-batch steps)

This is neural fitted Q-iteration (Riedmiller, 2005) with the reach-avoid target of Eq. 5 exactly as
written (the max over next actions, evaluated with the previous iterate; no double-Q substitution). It is
an alternative to online DDQN (:mod:`agentguard.control.ddqn`) when data are a fixed, expensive-to-encode
set: every transition is used in every step, and the target is frozen within an iteration. The same
function trains the text-latent critic and the privileged one, so both can be compared on the same states
and algorithm. ``gamma_k`` anneals towards ``gamma_end`` (``1 - gamma`` halves every ``gamma_period``
iterations), as in the DDQN schedule.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from dataclasses import dataclass

import numpy as np

from ..core.errors import InputError, require
from .bellman import discounted_safety_target
from .ddqn import DDQNConfig, QModel, Transitions, _annealed_gamma, _mlp

__all__ = ["FQIConfig", "fitted_q_iteration", "fqi_targets"]


@dataclass
class FQIConfig:
    """Outer iterations (target refreshes), inner full-batch Adam steps per iteration, and the network."""

    hidden: tuple[int, ...] = (100, 100)
    activation: str = "tanh"
    iterations: int = 60
    epochs: int = 40
    lr: float = 2e-3
    weight_decay: float = 0.0
    gamma_start: float = 0.9
    gamma_end: float = 0.999
    gamma_period: int = 10
    seed: int = 0
    threads: int = 1

    def gamma(self, k: int) -> float:
        return _annealed_gamma(self.gamma_start, self.gamma_end, self.gamma_period, k)


def _seeded_torch(cfg: FQIConfig) -> Any:
    """torch, after checking ``cfg``'s schedule and fixing its seed and thread count (every FQI learner)."""
    torch = require("torch", "control")
    if cfg.iterations < 1 or cfg.epochs < 1:
        raise InputError("iterations and epochs must be >= 1")
    torch.manual_seed(cfg.seed)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    return torch


def fqi_targets(q_next: np.ndarray, data: Transitions, gamma: float) -> np.ndarray:
    """Eq. 5 targets of one iteration: ``q_next`` is ``Q_{k-1}(z+, .)`` (n, n_actions) for every transition."""
    q_next = np.asarray(q_next, float)
    if q_next.ndim != 2 or len(q_next) != len(data.a):
        raise InputError("q_next must be (n_transitions, n_actions)")
    return discounted_safety_target(np.asarray(data.l_next, float), q_next.max(axis=1),
                                    np.asarray(data.done, bool), gamma)


def fitted_q_iteration(data: Transitions, in_dim: int, n_actions: int, config: FQIConfig | None = None,
                       callback: Callable[[int, QModel], dict] | None = None, log_every: int = 10) -> QModel:
    """Train a Q-network by fitted Q-iteration on the Eq. 5 target over the fixed ``data``.

    ``callback(iteration, model)`` runs every ``log_every`` iterations (and at the end); what it returns is
    stored in ``model.history``. Deterministic for a given seed and thread count.
    """
    cfg = config or FQIConfig()
    torch = _seeded_torch(cfg)
    net = _mlp(in_dim, n_actions, cfg.hidden, cfg.activation)
    opt = torch.optim.AdamW(net.parameters(), lr=cfg.lr, eps=1e-5, weight_decay=cfg.weight_decay)
    z = torch.from_numpy(np.asarray(data.z, np.float32))
    zn = torch.from_numpy(np.asarray(data.z_next, np.float32))
    a = torch.from_numpy(np.asarray(data.a, np.int64))[:, None]
    ddqn_cfg = DDQNConfig(hidden=cfg.hidden, activation=cfg.activation, iterations=cfg.iterations,
                          seed=cfg.seed, threads=cfg.threads)
    model = QModel(net, in_dim, n_actions, ddqn_cfg, meta={"algorithm": "fitted-q-iteration",
                                                            "fqi_config": dict(cfg.__dict__)})
    t0, c0 = time.perf_counter(), time.process_time()
    for k in range(1, cfg.iterations + 1):
        gamma = cfg.gamma(k)
        with torch.no_grad():
            y = torch.from_numpy(fqi_targets(net(zn).numpy(), data, gamma).astype(np.float32))
        for _ in range(cfg.epochs):
            loss = torch.nn.functional.mse_loss(net(z).gather(1, a).squeeze(1), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        if k % log_every == 0 or k == cfg.iterations:
            rec = {"iteration": k, "loss": float(loss.detach()), "gamma": gamma,
                   "seconds": time.perf_counter() - t0}
            if callback is not None:
                net.eval()
                rec.update(callback(k, model) or {})
                net.train()
            model.history.append(rec)
    net.eval()
    model.seconds = time.perf_counter() - t0
    model.meta.update({"cpu_seconds": time.process_time() - c0, "wall_seconds": model.seconds})
    return model
