"""The safety Bellman backups of ReGuard (Eq. 3 and Eq. 5) against an independent oracle on random finite
deterministic systems, and the filter built on them.

Oracle: with deterministic transitions the undiscounted safety value is a bottleneck path problem,
``V*(s) = max over action sequences of min_t l(s_t)`` (a failure ends the path), computed here by brute force
over every stationary policy (a maximin path can be taken as a lasso, so stationary policies suffice).
Checked: the Eq. 3 iteration from the optimistic start reaches V* (the greatest fixed point); the Eq. 5
(discounted) fixed point lies in ``[V*, V* + (1 - gamma) (n + 1) (max l - min l)]`` and equals Eq. 3 at
gamma = 1; gamma outside [0, 1] (NaN included) is refused; a filter using Q* never lets a state with
V* > 0 reach a failure.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.control.bellman import discounted_safety_target, safety_backup
from agentguard.core.errors import InputError


@st.composite
def systems(draw):
    n = draw(st.integers(1, 6))
    k = draw(st.integers(1, 3))
    succ = np.array(draw(st.lists(st.lists(st.integers(0, n - 1), min_size=k, max_size=k), min_size=n, max_size=n)))
    margin = np.array(draw(st.lists(st.integers(-2, 3), min_size=n, max_size=n)), dtype=float)
    return succ, margin


def brute_force_value(succ: np.ndarray, margin: np.ndarray) -> np.ndarray:
    """max over stationary policies of the min margin along the (lasso) path after the start state."""
    n, k = succ.shape
    best = np.full(n, -np.inf)
    for pol in itertools.product(range(k), repeat=n):
        for s0 in range(n):
            s, seen, low = s0, set(), np.inf
            while True:
                s = succ[s, pol[s]]
                low = min(low, margin[s])
                if margin[s] < 0 or s in seen:
                    break
                seen.add(s)
            best[s0] = max(best[s0], low)
    return best


def iterate(succ: np.ndarray, margin: np.ndarray, gamma: float | None, sweeps: int) -> np.ndarray:
    """Tabular Q over (state, action) from the optimistic start Q_0 = l(s+), by the library's backups."""
    l_next = margin[succ]
    done = l_next < 0
    q = l_next.copy()
    for _ in range(sweeps):
        v_next = q.max(axis=1)[succ]
        q = np.where(done, l_next, safety_backup(l_next, v_next)) if gamma is None else \
            discounted_safety_target(l_next, v_next, done, gamma)
    return q


@settings(max_examples=80, deadline=None)
@given(systems())
def test_undiscounted_backup_reaches_the_brute_force_value(system):
    succ, margin = system
    n = len(margin)
    q = iterate(succ, margin, None, n + 2)
    np.testing.assert_array_equal(q.max(axis=1), brute_force_value(succ, margin))
    np.testing.assert_array_equal(iterate(succ, margin, 1.0, n + 2), q)  # Eq. 5 at gamma = 1 is Eq. 3


@settings(max_examples=60, deadline=None)
@given(systems(), st.sampled_from([0.9, 0.99]))
def test_discounted_fixed_point_is_an_optimistic_approximation_of_the_value(system, gamma):
    succ, margin = system
    n = len(margin)
    v_star = brute_force_value(succ, margin)
    q = iterate(succ, margin, gamma, int(30 / (1 - gamma)))
    v = q.max(axis=1)
    spread = margin.max() - margin.min()
    assert np.all(v >= v_star - 1e-9)
    assert np.all(v <= v_star + (1 - gamma) * (n + 1) * spread + 1e-9), (v, v_star)


@settings(max_examples=60, deadline=None)
@given(systems())
def test_a_filter_on_the_exact_q_keeps_every_safe_state_safe(system):
    """Least-restrictive switching on Q*: from V*(s) > 0, any proposals, the executed path never fails."""
    from agentguard.control import SafetyFilter

    succ, margin = system
    n, k = succ.shape
    q = iterate(succ, margin, None, n + 2)
    filt = SafetyFilter(_TableQ(q), _Index(), [str(a) for a in range(k)])
    rng = np.random.default_rng(0)
    for s in np.flatnonzero(q.max(axis=1) > 0):
        for _ in range(3):
            cur = int(s)
            for _ in range(2 * n + 2):
                proposed = rng.integers(0, k, size=1)
                _, executed = filt.decide_batch(q[[cur]], proposed)
                cur = int(succ[cur, executed[0]])
                assert margin[cur] > 0


class _TableQ:
    def __init__(self, q):
        self.q = q

    def q_values(self, z):
        return self.q[np.asarray(z, int).ravel()]


class _Index:
    def encode(self, xs):
        return np.asarray(xs, int).reshape(-1, 1)


@pytest.mark.parametrize("gamma", [-0.1, 1.1, float("nan"), float("inf")])
def test_gamma_outside_the_unit_interval_is_refused(gamma):
    with pytest.raises(InputError, match="gamma"):
        discounted_safety_target(np.zeros(2), np.zeros(2), np.zeros(2, bool), gamma)


def test_gamma_zero_is_the_one_step_margin_and_failures_keep_their_margin():
    l_next, q_next = np.array([2.0, -1.0, 0.5]), np.array([-5.0, 4.0, 3.0])
    done = l_next < 0
    np.testing.assert_array_equal(discounted_safety_target(l_next, q_next, done, 0.0), l_next)
    np.testing.assert_array_equal(discounted_safety_target(l_next, q_next, done, 1.0), [-5.0, -1.0, 0.5])
