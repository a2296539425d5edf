"""The critic over text actions (agentguard.control.advice): data checks and the Eq. 5 fixed point on a chain."""

from __future__ import annotations

import numpy as np
import pytest

from agentguard.control.advice import AdviceTransitions, fit_advice_critic
from agentguard.control.fqi import FQIConfig
from agentguard.core.errors import InputError

pytest.importorskip("torch")


def _chain() -> AdviceTransitions:
    """x0 --(either sentence, l=0.5)--> x1; at x1 sentence 0 fails (l=-1), sentence 1 stays at x1 (l=1)."""
    x = np.array([[1.0, 0.0], [0.0, 1.0]], np.float32)
    bank = np.array([[1.0, 0.0, 0.3], [0.0, 1.0, -0.3]], np.float32)
    return AdviceTransitions(x=x, bank=bank, nxt=np.array([[1, 1], [1, 1]]), x_next=x,
                             l_next=np.array([[0.5, 0.5], [-1.0, 1.0]], np.float32),
                             done=np.array([[False, False], [True, False]]))


@pytest.mark.parametrize("architecture", ["factored", "bilinear", "concat"])
def test_fixed_point_of_eq5_on_a_chain(architecture):
    # hand-worked fixed point (the same for every gamma < 1 here):
    # Q(x1, fail) = -1, Q(x1, stay) = 1, Q(x0, .) = min(0.5, 1) = 0.5
    cfg = FQIConfig(hidden=(32,), iterations=30, epochs=30, lr=1e-2, gamma_start=0.5, gamma_end=0.9)
    critic = fit_advice_critic(_chain(), cfg, architecture=architecture, effects=4)
    q = critic.q_all(_chain().x, _chain().bank)
    assert np.allclose(q, [[0.5, 0.5], [-1.0, 1.0]], atol=0.08), q
    assert critic.q(_chain().x[1:], _chain().bank[1:])[0] == pytest.approx(q[1, 1], abs=1e-6)


def test_transitions_are_checked():
    d = _chain()
    with pytest.raises(InputError):
        AdviceTransitions(x=d.x, bank=d.bank, nxt=d.nxt[:1], x_next=d.x_next, l_next=d.l_next, done=d.done)
    with pytest.raises(InputError):
        AdviceTransitions(x=d.x, bank=d.bank, nxt=d.nxt + 5, x_next=d.x_next, l_next=d.l_next, done=d.done)
    with pytest.raises(InputError):
        fit_advice_critic(d, FQIConfig(iterations=0))
    with pytest.raises(InputError):
        fit_advice_critic(d, FQIConfig(iterations=1, epochs=1), architecture="attention")


def test_save_and_load_round_trip(tmp_path):
    from agentguard.control.advice import AdviceCritic

    critic = fit_advice_critic(_chain(), FQIConfig(hidden=(8,), iterations=2, epochs=2), temperature=0.5)
    critic.save(str(tmp_path / "c.pt"))
    back = AdviceCritic.load(str(tmp_path / "c.pt"))
    assert np.array_equal(back.q_all(_chain().x, _chain().bank), critic.q_all(_chain().x, _chain().bank))
    assert back.meta["temperature"] == 0.5
