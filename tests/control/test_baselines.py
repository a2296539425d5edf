"""The one-step classifier baseline (control.baselines)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from agentguard.control.baselines import train_one_step_classifier
from agentguard.control.ddqn import Transitions, f1_score
from agentguard.envs.driving.encoders import StateEncoder
from agentguard.control.filter import SafetyFilter
from agentguard.core import Context, Decision
from agentguard.envs import driving as D



class Chain:
    """x in {0, .2, ..., 1}; left/right by 0.2 (clipped at 1); l(x) = x - 0.1, so only x = 0 fails.

    Exact: Q(x, right) > 0 everywhere; Q(0.2, left) = l(0) = -0.1 < 0; Q(x >= 0.4, left) > 0.
    """

    def sample(self, n, rng):
        x = rng.integers(1, 6, n) * 0.2
        a = rng.integers(0, 2, n)
        xn = np.clip(x + np.where(a == 1, 0.2, -0.2), 0, 1)
        ln = xn - 0.1
        return Transitions(x[:, None].astype(np.float32), a, ln.astype(np.float32), xn[:, None].astype(np.float32),
                           ln < 0)


def test_one_step_classifier_and_stop():
    rng = np.random.default_rng(0)
    s = D.sample_initial_states(1500, seed=1, box=((0.0, 4.5), (0.0, 3.0), (-3.1, 3.1)))
    a = rng.integers(0, 3, len(s))
    safe = D.margin(D.step(s, a)) >= 0
    z = StateEncoder().encode(s)
    c = train_one_step_classifier(z, a, safe, 3, epochs=20)
    q = c.q_values(z)
    assert q.shape == (1500, 3) and np.all(np.abs(q) <= 0.5)
    pred = q[np.arange(1500), a] > 0
    balanced = 0.5 * (pred[safe].mean() + (~pred[~safe]).mean())
    assert balanced > 0.7, balanced

    class Never:
        def q_values(self, z):
            return -np.ones((len(z), 3))

    f = SafetyFilter(Never(), StateEncoder(), D.ACTIONS, D.parse_action, 0.0, intervention="stop")
    v = f.certify(Context(state=[1.0, 1.0, 0.0]), "B")
    assert v.decision is Decision.HALT and v.action is None
    assert f1_score(np.array([1, 0, 1], bool), np.array([1, 1, 0], bool)) == pytest.approx(0.5)
