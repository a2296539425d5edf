"""Text-only ReGuard for Agentic Commerce (issue 16): a critic over gemma-3-270m's view of the cart page.

The guard's input is ``E(o)`` for the accessibility-tree text ``o`` of the cart page
(:func:`agentguard.envs.commerce.render_tree`), where ``E`` is the first 4 decoder layers of gemma-3-270m
with the token states averaged over 16 equal windows of token positions (``gemma-L4-w16``, the driving
recipe, :class:`~agentguard.control.encoders.HiddenStateEncoder`), then a whitened PCA fitted on the
unlabelled training latents (:class:`~agentguard.control.encoders.ProjectedEncoder`, k chosen on
validation carts). No number is parsed from the page anywhere on this path (compare
:class:`~agentguard.bench.commerce.CommerceNumbersEncoder`, used only in the rows named "privileged" and
"text + parsed numbers").

Training (:func:`train_critic`): fitted Q-iteration (:func:`agentguard.control.fqi.fitted_q_iteration`) on
the Eq. 5 target with the commerce convention of :mod:`agentguard.bench.commerce`: the margin
``(BUDGET - total) / BUDGET`` is observed only at checkout (``l+ = NON_TERMINAL_L`` on other clicks) and
``gamma = 1``, so the target is ``l+`` at checkout and ``max_a+ Q(z+, a+)`` otherwise. The privileged
critic (the true cart's numbers) and the text + parsed numbers critic are trained by the same function,
schedule and network on the *same* states and actions.

States (:func:`training_states`): chains of random clicks from seeded carts (prefix-stable in ``n``); each
state carries three actions: checkout (terminal, nothing to encode), the chain's next click (its successor
is the next state of the chain) and one other random click (one more page to encode), so a state costs
about two gemma encodings instead of twelve.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..control.ddqn import QModel, Transitions, f1_score
from ..control.encoders import ConcatEncoder, ProjectedEncoder
from ..control.filter import SafetyFilter
from ..core.errors import InputError
from ..envs import commerce as C

__all__ = [
    "CommerceNumbersEncoder",
    "CommerceStateEncoder",
    "ENCODER",
    "NON_TERMINAL_L",
    "cache_folder",
    "cart_encoder",
    "encode_sorted",
    "eval_states",
    "text_encoder",
    "text_filter",
    "train_critic",
    "training_states",
    "transitions",
    "value_scores",
]

NON_TERMINAL_L = 10.0  # stands for "no margin observed yet": min(10, Q) = Q since |Q| <= ~1


def _features(prices: Sequence[float], k: int, bundles: Sequence[tuple[int, int, float]] | None = None) -> list[float]:
    """22 numbers; with ``bundles`` (active (row i, row j, discount) triples) 42: per row also the
    discount of its bundle / $50 and its partner's row number / 10, and the total includes the discounts."""
    row = [0.0] * C.MAX_ITEMS
    mask = [0.0] * C.MAX_ITEMS
    for i, p in enumerate(prices):
        row[i] = p / C.BUDGET
        mask[i] = 1.0
    if bundles is None:
        return row + mask + [k / C.ACTIONS_BEFORE_CHECKOUT, sum(prices) / (2 * C.BUDGET)]
    disc = [0.0] * C.MAX_ITEMS
    partner = [0.0] * C.MAX_ITEMS
    for i, j, d in bundles:
        disc[i] = disc[j] = d / C.BUDGET
        partner[i], partner[j] = (j + 1) / C.MAX_ITEMS, (i + 1) / C.MAX_ITEMS
    total = sum(prices) - sum(d for _, _, d in bundles)
    return row + mask + disc + partner + [k / C.ACTIONS_BEFORE_CHECKOUT, total / (2 * C.BUDGET)]


class CommerceNumbersEncoder:
    """The 22 numbers of a cart page text (42 with ``bundles``: bundle rows parsed too; ParseError on text
    that is not a cart page). Parsed numbers: only the rows named "privileged" or "text + parsed numbers"."""

    def __init__(self, bundles: bool = False):
        self.bundles = bundles
        self.dim = (4 if bundles else 2) * C.MAX_ITEMS + 2
        self.name = "commerce-numbers" + ("-bundles" if bundles else "")

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        rows = [_features(*C.parse_cart_text(t), C.parse_bundle_rows(t) if self.bundles else None)
                for t in ([texts] if isinstance(texts, str) else texts)]
        return np.asarray(rows, np.float32).reshape(-1, self.dim)


class CommerceStateEncoder:
    """Privileged latent: the same numbers from :class:`~agentguard.envs.commerce.Cart` objects."""

    def __init__(self, bundles: bool = False):
        self.bundles = bundles
        self.dim = (4 if bundles else 2) * C.MAX_ITEMS + 2
        self.name = "commerce-state" + ("-bundles" if bundles else "")

    def encode(self, carts: Sequence[Any]) -> np.ndarray:
        rows = []
        for c in carts:
            if isinstance(c, str):
                rows.append(_features(*C.parse_cart_text(c), C.parse_bundle_rows(c) if self.bundles else None))
            elif isinstance(c, C.Cart):
                rows.append(_features(c.prices, c.actions_left, C.bundle_rows(c) if self.bundles else None))
            else:
                raise InputError(f"a commerce latent needs a Cart or a cart page, got {type(c).__name__}")
        return np.asarray(rows, np.float32).reshape(-1, self.dim)


class _Scaled:
    """Q-values in dollars of margin (the network learns margin / BUDGET)."""

    def __init__(self, q):
        self.q = q

    def q_values(self, z):
        return self.q.q_values(z) * C.BUDGET


ENCODER = "gemma-L4-w16"


def cache_folder(bundles: bool = False) -> Path:
    """``$AGENTGUARD_CACHE/control/encodings/commerce[-bundles]`` (one file per task, so two tasks can be
    encoded by two processes without overwriting each other's cache)."""
    from .driving import cache_root

    return cache_root() / "control" / "encodings" / ("commerce-bundles" if bundles else "commerce")


def text_encoder(threads: int | None = 2, batch_size: int = 8, cache: bool = True, bundles: bool = False) -> Any:
    """gemma-L4-w16 over the page text, cached on disk keyed by the text (its own folder: the driving
    cache of the same encoder is large)."""
    from ..envs.driving.text_latent import latent_encoder

    return latent_encoder(ENCODER, cache=cache_folder(bundles) if cache else None, threads=threads,
                          batch_size=batch_size)


def encode_sorted(encoder: Any, texts: Sequence[str], chunk: int = 64) -> np.ndarray:
    """Encode in chunks of texts sorted by length (less right padding per batch), in the input order."""
    texts = list(texts)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = np.zeros((len(texts), encoder.dim), np.float32)
    for s in range(0, len(order), chunk):
        idx = order[s:s + chunk]
        out[idx] = encoder.encode([texts[i] for i in idx])
    return out


def training_states(n: int, seed: int = 0, bundles: bool = False, noop: bool = False) -> tuple[list[C.Cart], np.ndarray]:
    """``n`` cart states on chains of random row clicks from seeded carts (1-10 items, 5 clicks), and for
    each its actions as a row of ``acts`` (n, 11), -1 = not taken: checkout, the chain's next click, one
    other click in 1..10, and, where they cost no encoding, every other click: all of them at the last
    click (every successor is terminal) and, with ``noop``, the clicks on empty rows (they share one
    successor page). Prefix-stable in n."""
    rng = np.random.default_rng(seed + 4000)
    carts: list[C.Cart] = []
    acts: list[list[int]] = []
    while len(carts) < n:
        c = C.random_cart(rng, 1, C.MAX_ITEMS, C.ACTIONS_BEFORE_CHECKOUT, bundles=bundles)
        done = False
        while not done and len(carts) < n:
            a = int(rng.integers(1, max(1, len(c.items)) + 1))
            b = int(rng.choice([x for x in range(1, C.N_ACTIONS) if x != a]))
            row = [0, a, b]
            if c.actions_left == 1:
                rest = [x for x in range(1, C.N_ACTIONS) if x not in row]
            else:
                rest = [x for x in range(len(c.items) + 1, C.N_ACTIONS) if x not in row] if noop else []
            carts.append(c)
            acts.append(row + rest + [-1] * (C.N_ACTIONS - len(row) - len(rest)))
            c, done = C.step(c, a)
    return carts, np.asarray(acts, int)


def eval_states(n: int, seed: int = 0, bundles: bool = False) -> list[C.Cart]:
    """Scored states: the first ``n`` of the bench's value-F1 draw (1-10 items, 1-5 clicks left); seed+1
    gives the validation draw (k of the PCA is chosen there, never on the scored states)."""
    rng = np.random.default_rng(seed + 11)
    return [C.random_cart(rng, 1, C.MAX_ITEMS, int(rng.integers(1, C.ACTIONS_BEFORE_CHECKOUT + 1)),
                          bundles=bundles) for _ in range(n)]


def transitions(encode: Callable[[list[C.Cart]], np.ndarray], carts: list[C.Cart], acts: np.ndarray) -> Transitions:
    """``(z, a, l+, z+, done)`` for every state and its actions (``acts[i, j]``, -1 = none; laid out
    action column by column and column 0 present for every state, so ``z[:len(carts)]`` are the states
    once); ``l+`` is the scaled margin when the order is placed and NON_TERMINAL_L otherwise; successors
    that end the episode are never encoded (the target is ``l+`` there)."""
    z = encode(carts)
    if (acts[:, 0] < 0).any():
        raise InputError("every state needs its first action")
    zs, aa, ls, zns, ds = [], [], [], [], []
    for j in range(acts.shape[1]):
        rows = np.flatnonzero(acts[:, j] >= 0)
        nxt, ln, dn = [], [], []
        for i in rows:
            c2, d = C.step(carts[i], int(acts[i, j]))
            nxt.append(c2)
            dn.append(d)
            ln.append(c2.margin / C.BUDGET if d else NON_TERMINAL_L)
        done = np.asarray(dn, bool)
        zn = np.zeros((len(rows), z.shape[1]), np.float32)
        live = [c2 for c2, d in zip(nxt, dn) if not d]
        if live:
            zn[~done] = encode(live)
        zs.append(z[rows])
        aa.append(acts[rows, j])
        ls.append(np.asarray(ln, np.float32))
        zns.append(zn)
        ds.append(done)
    return Transitions(np.concatenate(zs), np.concatenate(aa), np.concatenate(ls), np.concatenate(zns),
                       np.concatenate(ds))


def _numbers(bundles: bool) -> CommerceStateEncoder:
    return CommerceStateEncoder(bundles=bundles)


def cart_encoder(kind: str, bundles: bool = False, text: Any = None) -> tuple[Callable, Any]:
    """(encode carts, the encoder of page texts the deployed filter uses) for ``kind`` in ``privileged``
    (the true cart), ``text`` (gemma only) or ``text+numbers`` (gemma + numbers parsed from the page)."""
    if kind == "privileged":
        enc = _numbers(bundles)
        return enc.encode, CommerceNumbersEncoder(bundles)
    if kind not in ("text", "text+numbers"):
        raise InputError(f"unknown commerce critic input {kind!r}; use privileged, text or text+numbers")
    text = text if text is not None else text_encoder(bundles=bundles)
    page = text if kind == "text" else ConcatEncoder([text, CommerceNumbersEncoder(bundles)])
    return (lambda cs: encode_sorted(page, [C.render_tree(c) for c in cs])), page


def train_critic(kind: str, carts: list[C.Cart], acts: np.ndarray, pca: int = 64, config: Any = None,
                 bundles: bool = False, text: Any = None) -> QModel:
    """FQI on the Eq. 5 target (gamma = 1, see the module docstring) over ``kind``'s latent of the given
    states. Text latents are projected on ``pca`` whitened principal components fitted on the training
    states' latents (no labels); the map is stored in the model's meta (``pca=0``: none). For
    ``text+numbers`` only the gemma part is projected and the parsed numbers are appended as they are (a
    PCA of the concatenation would drown 22 numbers among 10,240 hidden features)."""
    from ..control.fqi import FQIConfig, fitted_q_iteration

    encode, page = cart_encoder(kind, bundles, text)
    t0 = time.perf_counter()
    data = transitions(encode, carts, acts)
    t_enc = time.perf_counter() - t0
    stats: dict = {}
    if kind != "privileged" and pca:
        n = len(carts)
        gem = page.encoders[0] if isinstance(page, ConcatEncoder) else page
        d = gem.dim
        proj = ProjectedEncoder.fit(gem, data.z[:n, :d], pca)  # the states once (column 0), no labels

        def tf(z):
            return np.concatenate([proj.transform(z[:, :d]), z[:, d:]], axis=1).astype(np.float32)

        zn = np.where(data.done[:, None], 0.0, tf(data.z_next)).astype(np.float32)
        data = Transitions(tf(data.z), data.a, data.l_next, zn, data.done)
        stats = proj.state()
    cfg = config or FQIConfig(gamma_start=1.0, gamma_end=1.0)
    m = fitted_q_iteration(data, data.z.shape[1], C.N_ACTIONS, cfg)
    m.meta.update({"kind": kind, "encoder": page.name, "n_states": len(carts), "bundles": bundles,
                   "n_transitions": len(data.a), "encode_seconds": t_enc, "train_seconds": m.seconds, **stats})
    return m


def text_filter(model: QModel, page: Any, name: str) -> SafetyFilter:
    """The commerce filter over page texts (re-applies a stored PCA map), Q in dollars, epsilon 0."""
    m = model.meta
    if "proj_components" in m:
        def proj(e):
            return ProjectedEncoder(e, m["proj_mean"], m["proj_std"], m["proj_components"], m["proj_scale"])

        page = ConcatEncoder([proj(page.encoders[0]), *page.encoders[1:]]) if isinstance(page, ConcatEncoder) \
            else proj(page)
    return SafetyFilter(_Scaled(model), page, [str(i) for i in range(C.N_ACTIONS)], C.parse_action, 0.0, name=name)


def value_scores(q_max: np.ndarray, carts: list[C.Cart], epsilon: float = 0.0) -> dict:
    """Value F1 (safe class), unsafe-class F1 and balanced accuracy of ``max_a Q > epsilon`` against the
    exact value (backward induction, bundles included) of the carts."""
    truth = np.array([C.exact_value(c, c.actions_left) >= 0 for c in carts])
    pred = np.asarray(q_max) > epsilon
    bal = 0.5 * (float(pred[truth].mean()) if truth.any() else 0.0) + 0.5 * (
        float((~pred[~truth]).mean()) if (~truth).any() else 0.0)
    return {"value_f1": f1_score(pred, truth), "value_f1_unsafe": f1_score(~pred, ~truth),
            "balanced_accuracy": bal, "safe_fraction": float(truth.mean()), "n": len(carts)}
