"""Driving guards: training data, DDQN training and filter construction for Agentic Driving.

- *Privileged*: DDQN on the true state (the paper's privileged baseline, Table 6 architecture).
- *ReGuard (text latent)*: DDQN on an encoding of the Appendix C text observation
  (WordLlama embedding + numbers parsed from the text by default; embedding-only as an ablation).
- *Exact*: the grid value of :mod:`agentguard.envs.driving.value_iteration` as a Q-function (oracle).
- *Myopic*: the one-step margin ``Q(s, a) = l(f(s, a))`` (no look-ahead).

All training is seeded; see ``benchmarks/control_driving.py`` for the full runs and their timings.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...control.ddqn import DDQNConfig, QModel, ReplayBuffer, Transitions, train_ddqn
from ...control.encoders import ConcatEncoder, TextEncoder, WordLlamaEncoder
from ...control.filter import SafetyFilter
from ...core.errors import InputError
from . import dynamics as D
from .encoders import DrivingNumbersEncoder, StateEncoder

__all__ = [
    "DrivingStateSampler", "ExactQ", "MyopicQ", "TextStateAdapter", "build_text_buffer", "make_filter",
    "make_text_encoder", "train_privileged", "train_text_latent",
]

#: where training states are drawn: the road (a little beyond the goal) and every heading
TRAIN_BOX = ((0.0, D.GOAL_X + 1.0), (0.0, D.ROAD_WIDTH), (-math.pi, math.pi))


def _uniform_states(n: int, rng: np.random.Generator, box=TRAIN_BOX) -> np.ndarray:
    return np.column_stack([rng.uniform(*box[0], n), rng.uniform(*box[1], n), rng.uniform(*box[2], n)])


@dataclass
class DrivingStateSampler:
    """Exploring-starts transitions on the true state: s uniform on the road; every action of each
    sampled state (``all_actions``, 3 transitions per state) or one uniform action."""

    box: tuple = TRAIN_BOX
    all_actions: bool = True

    def sample(self, batch_size: int, rng: np.random.Generator) -> Transitions:
        enc = StateEncoder()
        if self.all_actions:
            s = np.repeat(_uniform_states(batch_size, rng, self.box), 3, axis=0)
            a = np.tile(np.arange(3), batch_size)
        else:
            s = _uniform_states(batch_size, rng, self.box)
            a = rng.integers(0, 3, batch_size)
        nxt = D.step(s, a)
        ln = D.margin(nxt)
        return Transitions(enc.encode(s), a, ln.astype(np.float32), enc.encode(nxt), ln < 0)


def train_privileged(iterations: int = 20_000, seed: int = 0, progress: bool = False, callback=None,
                     **config: Any) -> QModel:
    cfg = DDQNConfig(iterations=iterations, seed=seed, **config)
    m = train_ddqn(DrivingStateSampler(), StateEncoder.dim, 3, cfg, progress=progress, callback=callback)
    m.meta.update({"kind": "privileged", "encoder": StateEncoder.name})
    return m


def make_text_encoder(kind: str = "wordllama+numbers", dim: int = 64) -> TextEncoder:
    """``wordllama+numbers`` (default), ``wordllama``, ``numbers``, ``minilm``, ``minilm+numbers``."""
    parts: list[TextEncoder] = []
    for k in kind.split("+"):
        if k == "wordllama":
            parts.append(WordLlamaEncoder(dim))
        elif k == "minilm":
            from ...control.encoders import MiniLMEncoder

            parts.append(MiniLMEncoder())
        elif k == "numbers":
            parts.append(DrivingNumbersEncoder())
        else:
            raise InputError(f"unknown encoder part {k!r}; use wordllama, minilm or numbers joined by '+'")
    return parts[0] if len(parts) == 1 else ConcatEncoder(parts)


def _encode_states(encoder: TextEncoder, states: np.ndarray, chunk: int = 4096) -> np.ndarray:
    out = []
    for i in range(0, len(states), chunk):
        out.append(encoder.encode([D.observation_text(s) for s in states[i:i + chunk]]))
    return np.concatenate(out) if out else np.zeros((0, encoder.dim), np.float32)


def build_text_buffer(encoder: TextEncoder, n_states: int = 40_000, seed: int = 0) -> ReplayBuffer:
    """Pre-encode ``n_states`` uniform road states and their three successors' text observations."""
    rng = np.random.default_rng(seed + 1000)
    s = _uniform_states(n_states, rng)
    z = _encode_states(encoder, s)
    zs, acts, lns, zns, dones = [], [], [], [], []
    for a in range(3):
        nxt = D.step(s, a)
        ln = D.margin(nxt)
        zs.append(z)
        acts.append(np.full(n_states, a))
        lns.append(ln.astype(np.float32))
        zns.append(_encode_states(encoder, nxt))
        dones.append(ln < 0)
    return ReplayBuffer(Transitions(np.concatenate(zs), np.concatenate(acts), np.concatenate(lns),
                                    np.concatenate(zns), np.concatenate(dones)))


def train_text_latent(encoder: TextEncoder, iterations: int = 20_000, n_states: int = 40_000, seed: int = 0,
                      progress: bool = False, callback=None, **config: Any) -> QModel:
    t0, c0 = time.perf_counter(), time.process_time()
    buf = build_text_buffer(encoder, n_states, seed)
    t_enc, c_enc = time.perf_counter() - t0, time.process_time() - c0
    if progress:
        print(f"  encoded {4 * n_states} observations with {encoder.name} in {t_enc:.1f}s", flush=True)
    cfg = DDQNConfig(iterations=iterations, seed=seed, **config)
    m = train_ddqn(buf, encoder.dim, 3, cfg, progress=progress, callback=callback)
    m.meta.update({"kind": "text-latent", "encoder": encoder.name, "n_states": n_states,
                   "encode_seconds": t_enc, "encode_cpu_seconds": c_enc})
    m.seconds += t_enc
    m.meta["cpu_seconds"] += c_enc
    m.meta["wall_seconds"] = m.seconds
    return m


class ExactQ:
    """The exact grid value as a Q-function over true states (an oracle filter)."""

    def __init__(self, grid):
        self.grid = grid

    def q_values(self, states: np.ndarray) -> np.ndarray:
        return self.grid.q_values(states)


class MyopicQ:
    """Myopic baseline: ``Q(s, a) = l(f(s, a))``, the margin one step ahead (no look-ahead)."""

    def q_values(self, states: np.ndarray) -> np.ndarray:
        s = np.atleast_2d(np.asarray(states, dtype=float))
        return np.column_stack([D.margin(D.step(s, a)) for a in range(3)])


class TextStateAdapter:
    """Encoder that turns observation texts back into true states (for oracle / myopic filters on text)."""

    dim = 3
    name = "parsed-state"

    def encode(self, texts: Sequence[Any]) -> np.ndarray:
        rows = [t if not isinstance(t, str) else D.state_from_observation(t) for t in texts]
        return np.atleast_2d(np.asarray(rows, dtype=float))


class _IdentityState:
    dim = 3
    name = "state"

    def encode(self, states: Any) -> np.ndarray:
        s = np.atleast_2d(np.asarray(states, dtype=float))
        if s.shape[1] != 3:
            raise InputError("driving states are [p_x, p_y, theta]")
        return s


def make_filter(kind: str, model: QModel | None = None, encoder: TextEncoder | None = None, grid=None,
                epsilon: float = 0.0, on_text: bool = True) -> SafetyFilter:
    """Build a driving filter: ``privileged`` (model on true states), ``reguard`` (model + text encoder),
    ``exact`` (grid), ``myopic`` (one-step margin). ``on_text``: privileged/exact/myopic filters accept
    observation texts and parse the state from them (else they take states)."""
    state_enc = TextStateAdapter() if on_text else _IdentityState()
    if kind == "reguard":
        if model is None or encoder is None:
            raise InputError("a reguard filter needs a trained model and its text encoder")
        return SafetyFilter(model, encoder, D.ACTIONS, D.parse_action, epsilon, name="reguard")
    if kind == "privileged":
        if model is None:
            raise InputError("a privileged filter needs a trained model")

        class _Priv:
            meta = model.meta

            def q_values(self, states):
                return model.q_values(StateEncoder().encode(states))

        return SafetyFilter(_Priv(), state_enc, D.ACTIONS, D.parse_action, epsilon, name="privileged")
    if kind == "exact":
        if grid is None:
            raise InputError("an exact filter needs the value grid")
        f = SafetyFilter(ExactQ(grid), state_enc, D.ACTIONS, D.parse_action, max(epsilon, grid.tol), name="exact")
        f.value_threshold = grid.tol  # safe means V > tol
        return f
    if kind == "myopic":
        return SafetyFilter(MyopicQ(), state_enc, D.ACTIONS, D.parse_action, epsilon, name="myopic")
    raise InputError(f"unknown driving filter {kind!r}")
