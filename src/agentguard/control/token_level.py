"""Token-level safety Q-values and inference-time blending (section 4 of the ReGuard paper).

At token step k of physical step t the language model's logits are read as Q-values, one per token
(each token is an action). The allowed tokens are restricted to the base model's top-p set

    V' = top-p[ softmax(Q_b(z, .)) ]            (the minimal set of tokens with mass >= p)

and at inference the safety Q-values are blended with the base logits (Eq. 4)::

    pi(a | z) proportional to exp( (Q_b(z, a) + beta * Q(z, a)) / T ),   a in V'

With ``beta = 0``, ``T = 1`` and ``p = 1`` this is exactly the base model's next-token distribution
(tested with the local gemma-3-270m); with ``p < 1`` it is the base model's top-p distribution.

Token-level Bellman targets (Appendix A.1): non-EOS tokens carry the previous state's margin and
``gamma = 1``; the EOS token ends the physical step and receives ``l(s_{t+1})`` with the discounted
target of Eq. 5 (:func:`token_target`).

:class:`TokenQ` reads Q-values from a causal LM's logits: the Q-model is the base LM plus a trainable
low-rank correction of its last hidden state (a LoRA-style adapter before the LM head, zero at init,
so an untrained TokenQ reproduces the base logits). Training it by DDQN needs one LM forward pass per
transition, which is hours on a 2-core CPU; only the mechanics are exercised here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core.errors import InputError, require

__all__ = ["TokenQ", "blend_distribution", "sample_blended", "token_target", "top_p_indices"]


def top_p_indices(base_logits: Any, p: float) -> Any:
    """Indices of the minimal set of tokens whose base probability mass reaches ``p`` (sorted by prob).

    ``p >= 1`` keeps every token.
    """
    torch = require("torch", "control")
    if not 0.0 < p <= 1.0:
        raise InputError(f"top-p must be in (0, 1], got {p}")
    logits = torch.as_tensor(base_logits).float().reshape(-1)
    if p >= 1.0:
        return torch.arange(logits.numel())
    probs = torch.softmax(logits, dim=-1)
    sp, order = torch.sort(probs, descending=True)
    cum = torch.cumsum(sp, dim=0)
    k = int(torch.searchsorted(cum, torch.tensor(p)).item()) + 1  # first index where mass >= p
    return order[: min(k, logits.numel())]


def blend_distribution(base_logits: Any, q_values: Any | None = None, beta: float = 0.0, temperature: float = 1.0,
                       top_p: float = 1.0) -> Any:
    """Eq. 4 over the full vocabulary: probabilities (zero outside V'), shape like ``base_logits``.

    ``q_values``: safety Q-values for every token (same shape as ``base_logits``) or None (treated as 0).
    """
    torch = require("torch", "control")
    if temperature <= 0:
        raise InputError("temperature must be positive")
    qb = torch.as_tensor(base_logits).float().reshape(-1)
    keep = top_p_indices(qb, top_p)
    blended = qb.clone()
    if q_values is not None and beta != 0.0:
        q = torch.as_tensor(q_values).float().reshape(-1)
        if q.shape != qb.shape:
            raise InputError("q_values must have the same shape as base_logits")
        blended = blended + beta * q
    masked = torch.full_like(blended, float("-inf"))
    masked[keep] = blended[keep] / temperature
    return torch.softmax(masked, dim=-1)


def sample_blended(base_logits: Any, q_values: Any | None, beta: float, temperature: float, top_p: float,
                   generator: Any = None) -> int:
    torch = require("torch", "control")
    probs = blend_distribution(base_logits, q_values, beta, temperature, top_p)
    return int(torch.multinomial(probs, 1, generator=generator).item())


def token_target(l_prev: Any, l_next: Any, q_next_max: Any, is_eos: Any, failed: Any, gamma: float) -> Any:
    """Token-level safety target: non-EOS ``min(l(s_t), max Q(z_{t,k+1}))`` (gamma = 1, margin of the
    previous state); EOS: Eq. 5 with ``l(s_{t+1})``, and ``l(s_{t+1})`` alone when ``s_{t+1}`` fails."""
    torch = require("torch", "control")
    l_prev, l_next, qn = (torch.as_tensor(x).float() for x in (l_prev, l_next, q_next_max))
    is_eos, failed = torch.as_tensor(is_eos).bool(), torch.as_tensor(failed).bool()
    inner = torch.minimum(l_prev, qn)
    eos = (1 - gamma) * l_next + gamma * torch.minimum(l_next, qn)
    eos = torch.where(failed, l_next, eos)
    return torch.where(is_eos, eos, inner)


@dataclass
class TokenQ:
    """Q-values read from a causal LM's logits, with a low-rank trainable correction (zero at init).

    ``q_and_base(prompt) -> (q_logits, base_logits)`` over the whole vocabulary for the next token;
    ``q_values_top_p(prompt, p) -> (token_ids, q)`` restricted to the base model's top-p set.
    """

    model: Any
    tokenizer: Any
    rank: int = 8

    def __post_init__(self) -> None:
        torch = require("torch", "control")
        cfg = getattr(self.model.config, "text_config", self.model.config)
        h = int(cfg.hidden_size)
        g = torch.Generator().manual_seed(0)
        self.A = torch.nn.Parameter(torch.randn(self.rank, h, generator=g) / h ** 0.5)
        self.B = torch.nn.Parameter(torch.zeros(h, self.rank))  # LoRA: B = 0 so Q starts as the base logits
        self._head = self.model.get_output_embeddings()

    def parameters(self) -> list[Any]:
        return [self.A, self.B]

    def _hidden_and_base(self, prompt: str):
        torch = require("torch", "control")
        ids = self.tokenizer(prompt, return_tensors="pt")
        with torch.no_grad():
            out = self.model(**ids, output_hidden_states=True)
        return out.hidden_states[-1][0, -1], out.logits[0, -1]

    def q_and_base(self, prompt: str):
        h, base = self._hidden_and_base(prompt)
        delta = self.B @ (self.A @ h)
        # the LM head is linear, so head(h + delta) = base + head(delta) (exact for models without a final
        # logit soft-cap, such as gemma-3; with a soft-cap this is its first-order version)
        q = base + self._head(delta[None])[0]
        return q, base

    def q_values_top_p(self, prompt: str, p: float = 0.9):
        q, base = self.q_and_base(prompt)
        keep = top_p_indices(base.detach(), p)
        return keep, q[keep]

    def token_texts(self, ids: Sequence[int]) -> list[str]:
        return [self.tokenizer.decode([int(i)]) for i in ids]


def action_token_q(tokenizer: Any, q_actions: Sequence[float], actions: Sequence[str], vocab_size: int,
                   other: float | None = None) -> Any:
    """Spread action-level Q-values onto the vocabulary: every token that decodes to an action's name
    (e.g. ``"A"`` or ``" A"``) gets that action's Q; every other token gets ``other`` (default: the
    smallest action Q minus 1, so blending never prefers text that is not an action).

    With a learned safety Q (for example ReGuard's), ``blend_distribution(base, q, beta, T, p)`` is
    Eq. 4 for a single-token (K = 1) answer: the base model's choice distribution tilted towards the
    actions the safety value prefers.
    """
    torch = require("torch", "control")
    q = torch.as_tensor(list(q_actions), dtype=torch.float32)
    fill = float(q.min()) - 1.0 if other is None else float(other)
    out = torch.full((vocab_size,), fill)
    names = [a.strip() for a in actions]
    for i, name in enumerate(names):
        for variant in (name, " " + name):
            ids = tokenizer.encode(variant, add_special_tokens=False)
            if len(ids) == 1:
                out[ids[0]] = q[i]
    return out
