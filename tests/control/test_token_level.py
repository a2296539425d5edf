"""Token-level variant (section 4): top-p vocabulary, Eq. 4 blending, token targets, gemma-3-270m."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from agentguard.control.token_level import (
    TokenQ,
    blend_distribution,
    token_target,
    top_p_indices,
)
from agentguard.core import InputError


def test_top_p_is_minimal_set():
    logits = torch.log(torch.tensor([0.5, 0.3, 0.15, 0.05]))
    assert sorted(top_p_indices(logits, 0.5).tolist()) == [0]
    assert sorted(top_p_indices(logits, 0.79).tolist()) == [0, 1]
    assert sorted(top_p_indices(logits, 0.9).tolist()) == [0, 1, 2]
    assert len(top_p_indices(logits, 1.0)) == 4
    with pytest.raises(InputError):
        top_p_indices(logits, 0.0)


def test_blending_hand_worked():
    qb = torch.tensor([1.0, 0.0, -1.0])
    q = torch.tensor([0.0, 1.0, 0.0])
    p = blend_distribution(qb, q, beta=2.0, temperature=0.5)
    expect = torch.softmax((qb + 2.0 * q) / 0.5, dim=0)
    assert torch.allclose(p, expect)
    # beta = 0, T = 1, p = 1: the base distribution
    assert torch.allclose(blend_distribution(qb, q, beta=0.0), torch.softmax(qb, 0))
    # restricted to top-p: zero outside, renormalised inside
    p9 = blend_distribution(qb, None, top_p=0.7)
    assert p9[2] == 0 and torch.isclose(p9.sum(), torch.tensor(1.0))


def test_token_target():
    # non-EOS: min(l(s_t), Q');  EOS: (1-g) l(s+) + g min(l(s+), Q');  failed EOS: l(s+)
    y = token_target([0.4, 0.4, 0.4], [0.2, 0.2, -0.1], [0.3, 0.3, 0.3], [False, True, True], [False, False, True], 0.9)
    assert torch.allclose(y, torch.tensor([0.3, 0.1 * 0.2 + 0.9 * 0.2, -0.1]))


@pytest.mark.slow
def test_beta_zero_reproduces_gemma(gemma):
    model, tok = gemma
    from agentguard.envs import driving as D

    prompt = D.observation_text([0.5, 1.5, 0.0]) + "\n" + D.question_text() + "\nAnswer:"
    tq = TokenQ(model, tok)
    q, base = tq.q_and_base(prompt)
    ids = tok(prompt, return_tensors="pt")
    with torch.no_grad():
        ref = torch.softmax(model(**ids).logits[0, -1].float(), dim=-1)
    # an untrained TokenQ (LoRA B = 0) reads exactly the base logits
    assert torch.allclose(q.detach(), base)
    # Eq. 4 with beta = 0, T = 1, p = 1 is the base model's next-token distribution
    assert torch.allclose(blend_distribution(base, q.detach(), beta=0.0), ref, atol=1e-6)
    # beta = 0 with top-p = 0.9: the base distribution restricted to V' and renormalised
    keep, qv = tq.q_values_top_p(prompt, 0.9)
    p9 = blend_distribution(base, q.detach(), beta=0.0, top_p=0.9)
    assert torch.allclose(p9[keep], ref[keep] / ref[keep].sum(), atol=1e-6)
    assert float(ref[keep].sum()) >= 0.9 and len(qv) == len(keep)
    # a non-zero beta with a Q that prefers one allowed token moves mass towards it
    bonus = torch.zeros_like(base)
    bonus[keep[-1]] = 1.0
    assert blend_distribution(base, bonus, beta=5.0, top_p=0.9)[keep[-1]] > p9[keep[-1]]


@pytest.mark.slow
def test_blending_with_action_q_steers_gemma_to_the_safe_letter(gemma):
    """Eq. 4 with a safety Q over the answer letters: beta = 0 keeps gemma's choice, a large beta moves
    the mass to the letter with the highest Q (the fallback)."""
    from agentguard.control.token_level import action_token_q
    from agentguard.envs import driving as D

    model, tok = gemma
    prompt = D.observation_text([0.2, 1.0, 0.0]) + "\n" + D.question_text() + "\nAnswer:"
    ids = tok(prompt, return_tensors="pt")
    with torch.no_grad():
        base = model(**ids).logits[0, -1].float()
    q = action_token_q(tok, [0.16, -0.02, 0.20], D.ACTIONS, base.numel())  # C is the safest choice
    letter = {a: tok.encode(" " + a, add_special_tokens=False)[0] for a in D.ACTIONS}
    p0 = blend_distribution(base, q, beta=0.0)
    p1 = blend_distribution(base, q, beta=200.0)
    assert torch.allclose(p0, torch.softmax(base, 0), atol=1e-6)
    assert p0[letter["C"]] < 0.5 and p1[letter["C"]] > 0.9  # gemma alone prefers " A" (measured: 0.31 vs 0.08)
    assert p1[letter["B"]] < 0.01 < p0[letter["B"]]
