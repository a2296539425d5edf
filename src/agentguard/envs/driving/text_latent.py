"""The text-only ReGuard latent for Agentic Driving: a language model's view of the observation text.

The guard's input is ``E(o)`` for the Appendix C observation text ``o``, where ``E`` is a language model
(gemma-3-270m hidden states, :class:`~agentguard.control.encoders.HiddenStateEncoder`) or a sentence
embedder (WordLlama, MiniLM), followed by a fixed per-feature standardisation fitted on the training
latents. No number is parsed from the text anywhere on this path (compare
:class:`~agentguard.envs.driving.encoders.DrivingNumbersEncoder`, which the benchmarks use only in the
row named "text + parsed numbers").

- :func:`latent_encoder` builds a text-only encoder by name (``gemma-L<k>-<last|mean>``,
  ``wordllama-<dim>``, ``minilm``), optionally with a disk cache keyed by the text;
- :func:`training_states` draws prefix-stable uniform road states (the first ``n`` of a larger draw are
  the draw of ``n``, so learning curves over ``n`` reuse the cached encodings);
- :func:`transitions_for` builds the exploring-starts transitions of those states (all three actions;
  failed successors are terminal, so their text is never encoded);
- :func:`train_on_states` trains the Eq. 5 DDQN on a latent of a fixed state set (text-only or the
  privileged state, so both can be compared on the *same* states and budget);
- :func:`probe_sweep` scores candidate latents by a ridge probe of the exact safe set on a held-out split
  (used to pick gemma's layer and pooling before any DDQN run).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...control.ddqn import DDQNConfig, QModel, ReplayBuffer, Transitions, f1_score, train_ddqn
from ...control.encoders import (
    CachedEncoder,
    ProjectedEncoder,
    StandardizedEncoder,
    TextEncoder,
    WordLlamaEncoder,
)
from ...control.filter import SafetyFilter
from ...core.errors import InputError
from . import dynamics as D
from .encoders import StateEncoder

__all__ = [
    "input_map_state",
    "latent_encoder",
    "probe_sweep",
    "standardized",
    "text_only_filter",
    "train_fqi_on_states",
    "train_kernel_fqi_on_states",
    "train_on_states",
    "training_states",
    "transitions_for",
]

_BOX = ((0.0, D.GOAL_X + 1.0), (0.0, D.ROAD_WIDTH), (-np.pi, np.pi))


def latent_encoder(kind: str, cache: str | Path | None = None, threads: int | None = 1,
                   batch_size: int = 16) -> TextEncoder:
    """A text-only encoder: ``gemma-L<k>-<pool>`` (gemma-3-270m, first k layers), ``wordllama-<dim>``,
    ``minilm``. With ``cache`` (a folder) the encoder is wrapped in a :class:`CachedEncoder`."""
    enc: TextEncoder
    if kind.startswith("gemma-L"):
        try:
            layer_s, pool = kind[len("gemma-L"):].split("-")
            layer = int(layer_s)
        except ValueError:
            raise InputError(f"gemma encoder is 'gemma-L<layer>-<last|mean>', got {kind!r}") from None
        from ...control.encoders import HiddenStateEncoder
        from ...llm.local import load_gemma

        model, tok = load_gemma()
        enc = HiddenStateEncoder(model, tok, layer=layer, pool=pool, name=kind, batch_size=batch_size,
                                 threads=threads)
    elif kind.startswith("wordllama"):
        enc = WordLlamaEncoder(int(kind.split("-")[1]) if "-" in kind else 64)
    elif kind == "minilm":
        from ...control.encoders import MiniLMEncoder

        enc = MiniLMEncoder()
    else:
        raise InputError(f"unknown text-only encoder {kind!r}; use gemma-L<k>-<last|mean>, wordllama-<dim>, minilm")
    return CachedEncoder(enc, cache) if cache is not None else enc


def training_states(n: int, seed: int = 0, box=_BOX) -> np.ndarray:
    """``n`` uniform states on the road (a little beyond the goal), every heading; prefix-stable in n."""
    rng = np.random.default_rng(seed + 1000)
    u = rng.uniform(size=(n, 3))
    lo = np.array([b[0] for b in box])
    hi = np.array([b[1] for b in box])
    return lo + u * (hi - lo)


def _encode(encoder: Any, states: np.ndarray, chunk: int = 256) -> np.ndarray:
    if isinstance(encoder, StateEncoder):
        return encoder.encode(states)
    out = [encoder.encode([D.observation_text(s) for s in states[i:i + chunk]]) for i in range(0, len(states), chunk)]
    return np.concatenate(out) if out else np.zeros((0, encoder.dim), np.float32)


def transitions_for(encoder: Any, states: np.ndarray) -> Transitions:
    """All three actions of every state: z = E(o(s)), l+ = l(f(s, a)), z+ = E(o(f(s, a))) (zeros where
    the successor failed: the Eq. 5 target is l+ there and never reads z+)."""
    z = _encode(encoder, states)
    zs, acts, lns, zns, dones = [], [], [], [], []
    for a in range(3):
        nxt = D.step(states, a)
        ln = D.margin(nxt)
        done = ln < 0
        zn = np.zeros_like(z)
        if (~done).any():
            zn[~done] = _encode(encoder, nxt[~done])
        zs.append(z)
        acts.append(np.full(len(states), a))
        lns.append(ln.astype(np.float32))
        zns.append(zn)
        dones.append(done)
    return Transitions(np.concatenate(zs), np.concatenate(acts), np.concatenate(lns), np.concatenate(zns),
                       np.concatenate(dones))


def standardized(t: Transitions, encoder: Any, pca: int = 0, slow: int = 0) -> tuple[Transitions, Any]:
    """Fit the per-feature standardisation (or, with ``pca=k``, the whitened projection on the first k
    principal components, :class:`ProjectedEncoder`; with ``slow=m`` as well, the ``m`` slow features of
    that projection over the non-terminal transitions, :meth:`ProjectedEncoder.fit_slow`) on the training
    latents (no labels) and apply it to z and z+."""
    states = t.z[: len(t.z) // 3]
    std: Any
    if slow:
        std = ProjectedEncoder.fit_slow(encoder, states, (t.z[~t.done], t.z_next[~t.done]), pca, slow)
    elif pca:
        std = ProjectedEncoder.fit(encoder, states, pca)
    else:
        std = StandardizedEncoder(encoder).fit(t.z)
    zn = np.where(t.done[:, None], 0.0, std.transform(t.z_next)).astype(np.float32)
    return Transitions(std.transform(t.z), t.a, t.l_next, zn, t.done), std


def input_map_state(enc: Any) -> dict:
    """What :func:`text_only_filter` needs to rebuild the critic's input map from a model's meta."""
    if isinstance(enc, ProjectedEncoder):
        return enc.state()
    return {"input_mean": enc.mean.tolist(), "input_std": enc.std.tolist()}


def train_on_states(encoder: Any, states: np.ndarray, iterations: int, seed: int = 0,
                    progress: bool = False, callback=None, log_every: int = 1000, **config: Any) -> tuple[QModel, Any]:
    """Encode the transitions of ``states`` and train the Eq. 5 DDQN on them (same target, network and
    schedule as the privileged guard). Returns the model and the (standardised) encoder of its input.
    ``encoder`` is a text encoder or :class:`StateEncoder` (privileged latent of the same states)."""
    t0, c0 = time.perf_counter(), time.process_time()
    raw = transitions_for(encoder, states)
    t_enc, c_enc = time.perf_counter() - t0, time.process_time() - c0
    if isinstance(encoder, StateEncoder):
        data, enc = raw, encoder
    else:
        data, enc = standardized(raw, encoder)
    stats = ({"input_mean": enc.mean.tolist(), "input_std": enc.std.tolist()}
             if isinstance(enc, StandardizedEncoder) else {})

    def cb(it: int, model: QModel) -> dict:  # the model's input scaling is known before the first callback
        model.meta.update(stats)
        return callback(it, model) if callback is not None else {}

    cfg = DDQNConfig(iterations=iterations, seed=seed, **config)
    m = train_ddqn(ReplayBuffer(data), encoder.dim, 3, cfg, progress=progress, callback=cb, log_every=log_every)
    m.meta.update({"kind": "privileged-fixed-states" if isinstance(encoder, StateEncoder) else "text-only",
                   "encoder": encoder.name, "n_states": len(states),
                   "encode_seconds": t_enc, "encode_cpu_seconds": c_enc, "train_seconds": m.seconds})
    m.meta.update(stats)
    return m, enc


def _critic_inputs(encoder: Any, states: np.ndarray, pca: int, slow: int = 0) -> tuple[Transitions, dict, float]:
    """The transitions of ``states`` on the critic's input (the true state, or the text latent through its
    PCA map fitted on the training latents), the input map to store in the model's meta, encoding seconds."""
    t0 = time.perf_counter()
    raw = transitions_for(encoder, states)
    t_enc = time.perf_counter() - t0
    if isinstance(encoder, StateEncoder):
        return raw, {}, t_enc
    data, std = standardized(raw, encoder, pca=pca, slow=slow)
    return data, input_map_state(std), t_enc


def train_fqi_on_states(encoder: Any, states: np.ndarray, pca: int = 128, config: Any = None,
                        callback=None) -> QModel:
    """The text-only critic of ``benchmarks/control_driving_fqi.py``: encode the transitions of ``states``,
    project the latents on their first ``pca`` whitened principal components (fitted on the training
    latents, no labels; ``pca=0``: per-feature standardisation) and run fitted Q-iteration on the Eq. 5
    target (:func:`agentguard.control.fqi.fitted_q_iteration`). The input map is stored in the model's meta
    so :func:`text_only_filter` rebuilds it. A :class:`StateEncoder` gives the privileged critic of the
    same states (no input map)."""
    from ...control.fqi import FQIConfig, fitted_q_iteration

    data, stats, t_enc = _critic_inputs(encoder, states, pca)

    def cb(k: int, m: QModel) -> dict:
        m.meta.update(stats)
        return callback(k, m) if callback is not None else {}

    m = fitted_q_iteration(data, data.z.shape[1], 3, config or FQIConfig(), callback=cb)
    m.meta.update({"kind": "text-only" if stats else "privileged-fixed-states", "encoder": encoder.name,
                   "n_states": len(states), "encode_seconds": t_enc, "train_seconds": m.seconds, **stats})
    return m


def train_kernel_fqi_on_states(encoder: Any, states: np.ndarray, pca: int = 128, config: Any = None,
                               slow: int = 0) -> Any:
    """The kernel-averager critic (:func:`agentguard.control.kernel_fqi.kernel_fitted_q_iteration`, Eq. 5)
    over the encoded ``states``: anchors are the training latents (whitened PCA ``pca`` of a text latent,
    fitted on the training latents without labels, then with ``slow=m`` its ``m`` slow features over the
    transitions, :func:`standardized`; the true state for a :class:`StateEncoder`), one transition per state
    and action (:func:`transitions_for`). The input map is stored in the model's meta so
    :func:`text_only_filter` rebuilds it."""
    from ...control.kernel_fqi import KernelFQIConfig, kernel_fitted_q_iteration

    data, stats, t_enc = _critic_inputs(encoder, states, pca, slow)
    n = len(states)
    m = kernel_fitted_q_iteration(data.z[:n], np.tile(np.arange(n), 3), data, 3, config or KernelFQIConfig())
    m.meta.update({"kind": "text-only" if stats else "privileged-fixed-states", "encoder": encoder.name,
                   "n_states": n, "encode_seconds": t_enc, "train_seconds": m.seconds, "pca": pca if stats else 0,
                   "slow": slow if stats else 0, **stats})
    return m


def text_only_filter(model: QModel, encoder: TextEncoder, epsilon: float = 0.1, name: str = "reguard") -> SafetyFilter:
    """The ReGuard filter over a text-only latent (re-applies the model's stored input map)."""
    if "proj_components" in model.meta:
        m = model.meta
        encoder = ProjectedEncoder(encoder, m["proj_mean"], m["proj_std"], m["proj_components"], m["proj_scale"])
    elif "input_mean" in model.meta:
        encoder = StandardizedEncoder(encoder, model.meta["input_mean"], model.meta["input_std"])
    return SafetyFilter(model, encoder, D.ACTIONS, D.parse_action, epsilon, name=name)


def _ridge_f1(ztr: np.ndarray, ytr: np.ndarray, zva: np.ndarray, yva: np.ndarray,
              alphas: Sequence[float] = (0.1, 1.0, 10.0, 100.0)) -> dict:
    """Ridge regression of +-1 safe labels on standardised latents; F1 of the sign on the held-out split
    (alpha chosen on a 4:1 split of the training part, never on the held-out one)."""
    mu, sd = ztr.mean(0), ztr.std(0) + 1e-6
    a, b = (ztr - mu) / sd, (zva - mu) / sd
    y = np.where(ytr, 1.0, -1.0)

    def fit(x, t, alpha):
        xb = np.column_stack([x, np.ones(len(x))])
        reg = alpha * np.eye(xb.shape[1])
        reg[-1, -1] = 0
        return np.linalg.solve(xb.T @ xb + reg, xb.T @ t)

    def pred(x, w):
        return np.column_stack([x, np.ones(len(x))]) @ w > 0

    k = int(0.8 * len(a))
    best = max(alphas, key=lambda al: f1_score(pred(a[k:], fit(a[:k], y[:k], al)), ytr[k:]) or 0.0)
    w = fit(a, y, best)
    return {"probe_f1": f1_score(pred(b, w), yva), "alpha": best}


def probe_sweep(hidden: dict[str, tuple[np.ndarray, np.ndarray]], ytr: np.ndarray, yva: np.ndarray) -> dict:
    """``{name: (z_train, z_val)}`` -> ``{name: {"probe_f1", "alpha"}}`` (see :func:`_ridge_f1`)."""
    return {k: _ridge_f1(ztr, ytr, zva, yva) for k, (ztr, zva) in hidden.items()}
