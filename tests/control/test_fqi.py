"""Fitted Q-iteration on the Eq. 5 target: the target against a hand-worked example, convergence to the
hand-worked fixed point of a two-state system, and agreement with exact tabular iteration."""

from __future__ import annotations

import numpy as np
import pytest

from agentguard.control.ddqn import Transitions
from agentguard.control.fqi import FQIConfig, fitted_q_iteration, fqi_targets
from agentguard.core.errors import InputError

# Two states A=(1,0), B=(0,1), margins l(A)=4, l(B)=2; failure has l=-1 (terminal).
#   A --a0--> B      A --a1--> failure
#   B --a0--> B      B --a1--> A
A, B, F = np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.zeros(2)
DATA = Transitions(z=np.array([A, A, B, B], np.float32), a=np.array([0, 1, 0, 1]),
                   l_next=np.array([2.0, -1.0, 2.0, 4.0], np.float32),
                   z_next=np.array([B, F, B, A], np.float32), done=np.array([False, True, False, False]))


def test_first_target_by_hand():
    # Q_0 = 0 everywhere, gamma = 0.5: y = 0.5 l + 0.5 min(l, 0), or l at the failure
    y = fqi_targets(np.zeros((4, 2)), DATA, 0.5)
    assert y.tolist() == [1.0, -1.0, 1.0, 2.0]


def test_target_uses_max_over_next_actions_and_min_with_margin():
    q_next = np.array([[0.0, 3.0], [9.0, 9.0], [1.0, -5.0], [10.0, 0.0]])
    y = fqi_targets(q_next, DATA, 0.5)
    # row 0: 0.5*2 + 0.5*min(2, 3) = 2; row 1: terminal -> -1; row 2: 0.5*2 + 0.5*min(2, 1) = 1.5;
    # row 3: 0.5*4 + 0.5*min(4, 10) = 4
    assert y.tolist() == [2.0, -1.0, 1.5, 4.0]


def test_target_rejects_bad_shape():
    with pytest.raises(InputError):
        fqi_targets(np.zeros((3, 2)), DATA, 0.5)


def test_converges_to_hand_worked_fixed_point():
    # Fixed point of Eq. 5 at gamma = 0.5 (worked by hand): V(B) >= 2 gives Q(B,a0) = 1 + 1 = 2,
    # Q(A,a0) = 2, V(A) = 2, Q(B,a1) = 2 + 0.5 min(4, 2) = 3 = V(B) (consistent), Q(A,a1) = -1.
    pytest.importorskip("torch")
    cfg = FQIConfig(hidden=(16,), iterations=40, epochs=60, lr=1e-2, gamma_start=0.5, gamma_end=0.5)
    m = fitted_q_iteration(DATA, 2, 2, cfg)
    q = m.q_values(np.array([A, B]))
    np.testing.assert_allclose(q, [[2.0, -1.0], [2.0, 3.0]], atol=0.05)
    assert m.meta["algorithm"] == "fitted-q-iteration"


def test_agrees_with_exact_tabular_iteration_on_a_random_chain():
    """Random deterministic system of 6 one-hot states: FQI's network matches exact Eq. 5 value iteration."""
    pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    n, gamma = 6, 0.8
    margin = rng.uniform(-1, 3, n)
    succ = rng.integers(0, n, size=(n, 2))
    eye = np.eye(n, dtype=np.float32)
    rows = [(s, a) for s in range(n) for a in range(2)]
    ln = np.array([margin[succ[s, a]] for s, a in rows], np.float32)
    done = ln < 0
    data = Transitions(np.array([eye[s] for s, _ in rows]), np.array([a for _, a in rows]), ln,
                       np.array([eye[succ[s, a]] * (not d) for (s, a), d in zip(rows, done)], np.float32), done)
    q = np.zeros((n, 2))
    for _ in range(200):  # exact Eq. 5 value iteration (contraction at gamma < 1)
        v = q.max(1)
        q = np.array([[margin[succ[s, a]] if margin[succ[s, a]] < 0 else
                       (1 - gamma) * margin[succ[s, a]] + gamma * min(margin[succ[s, a]], v[succ[s, a]])
                       for a in range(2)] for s in range(n)])
    m = fitted_q_iteration(data, n, 2, FQIConfig(hidden=(32,), iterations=40, epochs=80, lr=1e-2,
                                                 gamma_start=gamma, gamma_end=gamma))
    np.testing.assert_allclose(m.q_values(eye), q, atol=0.08)


def test_gamma_schedule_anneals_to_end():
    cfg = FQIConfig(gamma_start=0.9, gamma_end=0.999, gamma_period=10)
    assert cfg.gamma(0) == pytest.approx(0.9)
    assert cfg.gamma(10) == pytest.approx(0.95)
    assert cfg.gamma(1000) == pytest.approx(0.999)
