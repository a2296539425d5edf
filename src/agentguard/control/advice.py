"""A safety critic over open-vocabulary text actions (the Backseat AI Driver, section 6.3 of the ReGuard paper).

In the backseat setting the AI's action ``a^AI`` is a sentence that a human reads before acting, so the
critic cannot have one output per action: it scores the pair ``z = [x, E(a^AI)]``, where ``x`` is the state
part of the latent and ``E`` a text embedder (:class:`~agentguard.control.encoders.TextEncoder`) applied to
the advice sentence *only*. One scalar ``Q(x, E(a^AI))`` per pair, from one of two networks:

- ``factored`` (default): ``Q(x, e) = softmax(g(e)) . h(x)`` with MLPs ``h: x -> R^m`` (the value of ``m``
  possible effects of advice in state ``x``) and ``g: e -> R^m`` (which effect a sentence has; linear by
  default, ``gate_hidden`` adds hidden layers). This is the
  structure of the problem (the advice acts only through what the human does), and it makes every
  (state, candidate) pair cost one pass per state plus one per sentence;
- ``bilinear``: ``Q(x, e) = g(e) . h(x)`` without the softmax (a sentence's value is not confined to a
  convex combination of the effects' values, so no action can be stuck between two others);
- ``concat``: one MLP on ``[x, e]``.

Training is fitted Q-iteration (as :mod:`agentguard.control.fqi`) on the reach-avoid target of Eq. 5 with
the max over next actions taken over a finite candidate set ``C`` of sentences (the guard's options)::

    y_k = (1 - gamma_k) l(s+) + gamma_k min{ l(s+), max_{c in C} Q_{k-1}(x+, E(c)) }      (Eq. 5)
    y_k = l(s+)                                                          where s+ is a failure

The embedding bank ``E(C)`` is centred and scaled by one scalar fitted on the training candidates (stored in
the critic and applied unchanged to sentences never seen in training).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.errors import InputError, require
from .bellman import discounted_safety_target
from .ddqn import _mlp
from .fqi import FQIConfig, _seeded_torch

__all__ = ["AdviceCritic", "AdviceTransitions", "fit_advice_critic"]


@dataclass
class AdviceTransitions:
    """Dense transitions: every state ``x[i]`` (n, dx) with every sentence ``bank[k]`` (K, de, embeddings).
    ``nxt[i, k]`` indexes the next state part in ``x_next`` (m, dx); ``l_next[i, k]`` its margin; ``done[i, k]``
    that it failed."""

    x: np.ndarray
    bank: np.ndarray
    nxt: np.ndarray
    x_next: np.ndarray
    l_next: np.ndarray
    done: np.ndarray

    def __post_init__(self) -> None:
        n, k = len(self.x), len(self.bank)
        if np.asarray(self.bank).ndim != 2 or np.asarray(self.x).ndim != 2:
            raise InputError("x must be (n, dx) and bank (K, de)")
        if not all(np.shape(v) == (n, k) for v in (self.nxt, self.l_next, self.done)):
            raise InputError("nxt, l_next and done must be (n_states, n_sentences)")
        if n and (np.min(self.nxt) < 0 or np.max(self.nxt) >= len(self.x_next)):
            raise InputError("nxt must index x_next")


def _network(x_dim: int, e_dim: int, cfg: Any, architecture: str, effects: int, gate_hidden: tuple[int, ...],
             temperature: float = 1.0):
    torch = require("torch", "control")

    class _Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.architecture = architecture
            if architecture in ("factored", "bilinear"):
                self.h = _mlp(x_dim, effects, cfg.hidden, cfg.activation)
                self.g = _mlp(e_dim, effects, tuple(gate_hidden), cfg.activation)
            elif architecture == "concat":
                self.f = _mlp(x_dim + e_dim, 1, cfg.hidden, cfg.activation)
            else:
                raise InputError("architecture must be factored, bilinear or concat")

        def forward(self, x, e):  # (n, dx), (K, de) -> (n, K)
            if self.architecture == "factored":
                return self.h(x) @ torch.softmax(self.g(e) / temperature, dim=1).T
            if self.architecture == "bilinear":
                return self.h(x) @ self.g(e).T
            n, k = len(x), len(e)
            z = torch.cat([x.repeat_interleave(k, 0), e.repeat(n, 1)], dim=1)
            return self.f(z).reshape(n, k)

    return _Net()


@dataclass
class AdviceCritic:
    """A trained ``Q(x, E(advice))`` with numpy in/out."""

    net: Any
    x_dim: int
    e_dim: int
    e_mean: np.ndarray
    e_scale: float
    meta: dict = field(default_factory=dict)
    history: list = field(default_factory=list)

    def _tensors(self, x: np.ndarray, emb: np.ndarray):
        torch = require("torch", "control")
        x = np.asarray(x, np.float32).reshape(-1, self.x_dim)
        e = (np.asarray(emb, np.float32).reshape(-1, self.e_dim) - self.e_mean) / self.e_scale
        return torch.from_numpy(x), torch.from_numpy(e.astype(np.float32))

    def q_all(self, x: np.ndarray, bank: np.ndarray) -> np.ndarray:
        """Q of every state against every sentence embedding: (n, K)."""
        torch = require("torch", "control")
        with torch.no_grad():
            return self.net(*self._tensors(x, bank)).numpy().astype(float)

    def save(self, path: str) -> None:
        """Weights and everything needed to rebuild the network (torch.save)."""
        torch = require("torch", "control")
        torch.save({"state_dict": self.net.state_dict(), "x_dim": self.x_dim, "e_dim": self.e_dim,
                    "e_mean": torch.from_numpy(np.asarray(self.e_mean, np.float32)), "e_scale": float(self.e_scale),
                    "meta": json.loads(json.dumps(self.meta))}, path)

    @classmethod
    def load(cls, path: str) -> AdviceCritic:
        torch = require("torch", "control")
        d = torch.load(path, weights_only=True)  # tensors and plain data only: no pickled code
        m = d["meta"]
        cfg = FQIConfig(**m["fqi_config"])
        net = _network(d["x_dim"], d["e_dim"], cfg, m["architecture"], m["effects"] or 1,
                       tuple(m["gate_hidden"] or ()), m["temperature"] or 1.0)
        net.load_state_dict(d["state_dict"])
        net.eval()
        return cls(net, d["x_dim"], d["e_dim"], d["e_mean"].numpy(), float(d["e_scale"]), m)

    def q(self, x: np.ndarray, emb: np.ndarray) -> np.ndarray:
        """Q of each pair (x_i, emb_i): (n,)."""
        x = np.asarray(x, np.float32).reshape(-1, self.x_dim)
        emb = np.asarray(emb, np.float32).reshape(-1, self.e_dim)
        if len(emb) == 1:
            return self.q_all(x, emb)[:, 0]
        return np.array([self.q_all(x[i:i + 1], emb[i:i + 1])[0, 0] for i in range(len(x))])


def _bank_stats(bank: np.ndarray) -> tuple[np.ndarray, float]:
    mean = bank.mean(axis=0)
    scale = float(np.sqrt(((bank - mean) ** 2).sum(axis=1).mean() / bank.shape[1])) or 1.0
    return mean.astype(np.float32), scale


def fit_advice_critic(data: AdviceTransitions, config: FQIConfig | None = None, architecture: str = "factored",
                      effects: int = 8, gate_hidden: tuple[int, ...] = (), temperature: float = 1.0,
                      callback: Callable[[int, AdviceCritic], dict] | None = None,
                      log_every: int = 10) -> AdviceCritic:
    """Fitted Q-iteration of ``Q(x, E(advice))`` on the Eq. 5 target, the next max over ``data.bank``.

    Full-batch over every (state, sentence) pair, warm-started network, ``config.epochs`` AdamW steps per
    iteration, ``gamma_k`` annealed as in :class:`~agentguard.control.fqi.FQIConfig`. ``callback(iteration,
    critic)`` results go to ``history``. Deterministic for a given seed and thread count.
    """
    cfg = config or FQIConfig()
    torch = _seeded_torch(cfg)
    bank = np.asarray(data.bank, np.float32)
    x_dim, e_dim = np.asarray(data.x).shape[1], bank.shape[1]
    mean, scale = _bank_stats(bank)
    net = _network(x_dim, e_dim, cfg, architecture, effects, gate_hidden, temperature)
    critic = AdviceCritic(net, x_dim, e_dim, mean, scale,
                          meta={"algorithm": "fitted-q-iteration over text actions", "architecture": architecture,
                                "effects": effects if architecture != "concat" else None,
                                "gate_hidden": list(gate_hidden) if architecture != "concat" else None,
                                "temperature": temperature if architecture == "factored" else None,
                                "fqi_config": dict(cfg.__dict__), "sentences": len(bank)})
    x, e = critic._tensors(data.x, bank)
    xn, _ = critic._tensors(data.x_next, bank[:1])
    nxt = np.asarray(data.nxt)
    ln, done = np.asarray(data.l_next, float), np.asarray(data.done, bool)
    opt = torch.optim.AdamW(net.parameters(), lr=cfg.lr, eps=1e-5, weight_decay=cfg.weight_decay)
    t0, c0 = time.perf_counter(), time.process_time()
    loss = None
    for it in range(1, cfg.iterations + 1):
        gamma = cfg.gamma(it)
        with torch.no_grad():
            v_next = net(xn, e).numpy().max(axis=1)[nxt]  # max over the candidate sentences at s+
        y = torch.from_numpy(discounted_safety_target(ln, v_next, done, gamma).astype(np.float32))
        for _ in range(cfg.epochs):
            loss = torch.nn.functional.mse_loss(net(x, e), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        if it % log_every == 0 or it == cfg.iterations:
            rec = {"iteration": it, "loss": float(loss.detach()), "gamma": gamma, "seconds": time.perf_counter() - t0}
            if callback is not None:
                net.eval()
                rec.update(callback(it, critic) or {})
                net.train()
            critic.history.append(rec)
    net.eval()
    critic.meta.update({"cpu_seconds": time.process_time() - c0, "wall_seconds": time.perf_counter() - t0})
    return critic
