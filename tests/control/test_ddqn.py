"""DDQN on the discounted safety target (control.ddqn): learns a chain's signs, deterministic, saves
and loads; a tiny privileged run feeds the filter."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from agentguard.control.ddqn import DDQNConfig, QModel, Transitions, train_ddqn
from agentguard.core import Context, Decision, InputError
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


def test_ddqn_learns_chain_signs():
    cfg = DDQNConfig(hidden=(32, 32), iterations=1500, batch_size=64, tau=0.05, lr_start=3e-3, gamma_start=0.9,
                     gamma_end=0.9, seed=1)
    m = train_ddqn(Chain(), 1, 2, cfg)
    x = np.array([[0.2], [0.4], [0.6], [0.8], [1.0]], np.float32)
    q = m.q_values(x)
    assert q[0, 0] < 0 < q[0, 1]  # at 0.2: left fails, right is safe
    assert np.all(q[1:, 0] > 0) and np.all(q[:, 1] > 0)
    assert m.meta["cpu_seconds"] > 0 and len(m.history) >= 1


def test_ddqn_deterministic_and_save_load(tmp_path):
    cfg = DDQNConfig(hidden=(16,), iterations=50, batch_size=32, seed=3)
    a, b = train_ddqn(Chain(), 1, 2, cfg), train_ddqn(Chain(), 1, 2, cfg)
    x = np.linspace(0, 1, 7, dtype=np.float32)[:, None]
    np.testing.assert_array_equal(a.q_values(x), b.q_values(x))
    a.save(str(tmp_path / "q.pt"))
    c = QModel.load(str(tmp_path / "q.pt"))
    np.testing.assert_array_equal(a.q_values(x), c.q_values(x))
    with pytest.raises(InputError):
        c.q_values(np.zeros((1, 3)))
    with pytest.raises(InputError):
        QModel.load(str(tmp_path / "missing.pt"))


def test_privileged_tiny_run_and_filter():
    from agentguard.envs.driving.guard import make_filter, train_privileged

    m = train_privileged(150, seed=0, batch_size=64)
    f = make_filter("privileged", m)
    v = f.certify(Context(state=D.observation_text([0.5, 1.5, 0.0])), "A")
    assert v.decision in (Decision.ALLOW, Decision.RECOVER) and {"q_A", "q_B", "q_C"} <= set(v.numbers)
