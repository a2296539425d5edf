"""Kernel-averager fitted Q-iteration (Eq. 5): hand-worked fixed point, exact tabular iteration (k = 1),
the k-NN average by hand, the gamma-contraction it promises, bad input, and save/load."""

from __future__ import annotations

import numpy as np
import pytest

from agentguard.control.ddqn import Transitions
from agentguard.control.kernel_fqi import KernelFQIConfig, KernelQ, kernel_fitted_q_iteration, nearest_anchors
from agentguard.core.errors import InputError

# the two-state system of test_fqi: A=(1,0), B=(0,1); l(A)=4, l(B)=2, failure l=-1 (terminal)
#   A --a0--> B      A --a1--> failure
#   B --a0--> B      B --a1--> A
A, B, F = np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.zeros(2)
DATA = Transitions(z=np.array([A, A, B, B], np.float32), a=np.array([0, 1, 0, 1]),
                   l_next=np.array([2.0, -1.0, 2.0, 4.0], np.float32),
                   z_next=np.array([B, F, B, A], np.float32), done=np.array([False, True, False, False]))
IDX = np.array([0, 0, 1, 1])


def _fixed(gamma: float, **kw) -> KernelFQIConfig:
    return KernelFQIConfig(gamma_start=gamma, gamma_end=gamma, tol=1e-12, **kw)


def test_hand_worked_fixed_point_k1():
    # worked by hand at gamma = 0.5 (see test_fqi): Q(A) = (2, -1), Q(B) = (2, 3)
    m = kernel_fitted_q_iteration(np.array([A, B]), IDX, DATA, 2, _fixed(0.5, k=1))
    np.testing.assert_allclose(m.table, [[2.0, -1.0], [2.0, 3.0]], atol=1e-9)
    np.testing.assert_allclose(m.q_values(np.array([A, B])), m.table)
    assert m.meta["converged"]


def test_chain_to_failure_by_hand():
    # s0 --> s1 (l = 2), s1 --> failure (l = -1); one action: Q(s1) = -1, Q(s0) = (1 - g) 2 + g min(2, -1) = 2 - 3g
    z = np.array([[0.0], [1.0]], np.float32)
    data = Transitions(z, np.array([0, 0]), np.array([2.0, -1.0]), np.array([[1.0], [0.0]], np.float32),
                       np.array([False, True]))
    m = kernel_fitted_q_iteration(z, np.array([0, 1]), data, 1, _fixed(0.9, k=1))
    np.testing.assert_allclose(m.table[:, 0], [2 - 3 * 0.9, -1.0], atol=1e-9)


def test_k1_on_exact_anchors_equals_tabular_iteration():
    """Random deterministic system of 8 states whose successors are anchors: kernel FQI with k = 1 is exact
    Eq. 5 value iteration on the table (an independent loop written out here)."""
    rng = np.random.default_rng(5)
    n, gamma = 8, 0.9
    margin = rng.uniform(-1, 3, n)
    succ = rng.integers(0, n, size=(n, 3))
    pts = rng.normal(size=(n, 4)).astype(np.float32)
    rows = [(s, a) for s in range(n) for a in range(3)]
    ln = np.array([margin[succ[s, a]] for s, a in rows])
    done = ln < 0
    data = Transitions(pts[[s for s, _ in rows]], np.array([a for _, a in rows]), ln,
                       np.array([pts[succ[s, a]] for s, a in rows], np.float32), done)
    q = np.zeros((n, 3))
    for _ in range(2000):
        v = q.max(1)
        q = np.array([[margin[succ[s, a]] if margin[succ[s, a]] < 0 else
                       (1 - gamma) * margin[succ[s, a]] + gamma * min(margin[succ[s, a]], v[succ[s, a]])
                       for a in range(3)] for s in range(n)])
    m = kernel_fitted_q_iteration(pts, np.array([s for s, _ in rows]), data, 3, _fixed(gamma, k=1))
    np.testing.assert_allclose(m.table, q, atol=1e-9)


def test_q_is_the_mean_of_the_k_nearest_rows():
    anchors = np.array([[0.0], [1.0], [2.0], [10.0]], np.float32)
    table = np.array([[1.0, 0.0], [3.0, 2.0], [5.0, -4.0], [100.0, 100.0]])
    q = KernelQ(anchors, table, k=2)
    np.testing.assert_allclose(q.q_values(np.array([[0.4], [1.9]])), [[2.0, 1.0], [4.0, -1.0]])
    assert nearest_anchors(anchors, np.array([[1.4]]), 3).tolist() == [[1, 2, 0]]


def test_each_iteration_is_a_gamma_contraction():
    rng = np.random.default_rng(0)
    n = 40
    z = rng.normal(size=(n, 3)).astype(np.float32)
    rows = np.repeat(np.arange(n), 2)
    ln = rng.uniform(-0.5, 2.0, 2 * n)
    data = Transitions(z[rows], np.tile([0, 1], n), ln, rng.normal(size=(2 * n, 3)).astype(np.float32), ln < 0)
    m = kernel_fitted_q_iteration(z, rows, data, 2, _fixed(0.8, k=4))
    changes = [h["sup_change"] for h in m.history]
    assert m.meta["converged"]
    # the sup-norm change shrinks at least by gamma per iteration: after 50 more, by 0.8 ** 50
    for a, b in zip(changes, changes[1:]):
        assert b <= a * 0.8 ** 49 + 1e-12


def test_bad_input_is_refused():
    with pytest.raises(InputError):  # gamma = 1 has no contraction guarantee
        kernel_fitted_q_iteration(np.array([A, B]), IDX, DATA, 2, KernelFQIConfig(gamma_end=1.0))
    with pytest.raises(InputError):  # a (state, action) pair without its transition
        kernel_fitted_q_iteration(np.array([A, B]), np.array([0, 0, 1, 0]), DATA, 2, _fixed(0.5, k=1))
    q = KernelQ(np.array([A, B]), np.zeros((2, 2)), k=1)
    with pytest.raises(InputError):
        q.q_values(np.zeros((1, 3)))
    with pytest.raises(InputError):
        q.q_values(np.array([[np.nan, 0.0]]))
    with pytest.raises(InputError):
        KernelQ(np.array([A, B]), np.zeros((2, 2)), k=3)


def test_save_load_round_trip_keeps_array_meta(tmp_path):
    m = kernel_fitted_q_iteration(np.array([A, B]), IDX, DATA, 2, _fixed(0.5, k=1))
    m.meta["proj_components"] = np.arange(6, dtype=np.float32).reshape(3, 2)
    path = str(tmp_path / "kq.npz")
    m.save(path)
    back = KernelQ.load(path)
    np.testing.assert_allclose(back.q_values(np.array([A, B])), m.q_values(np.array([A, B])))
    np.testing.assert_array_equal(back.meta["proj_components"], m.meta["proj_components"])
    assert back.meta["algorithm"] == "kernel-averager-fitted-q-iteration" and back.k == 1
    (tmp_path / "bad.npz").write_bytes(b"not a model")
    with pytest.raises(InputError):
        KernelQ.load(str(tmp_path / "bad.npz"))
