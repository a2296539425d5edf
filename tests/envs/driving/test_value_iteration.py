"""Exact value iteration (envs.driving.value_iteration) and the Bellman targets it rests on."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agentguard.control.bellman import discounted_safety_target, safety_backup
from agentguard.envs.driving.value_iteration import exhaustive_can_survive, solve_driving, validate
from agentguard.envs import driving as D


@pytest.fixture(scope="module")
def grid():
    return solve_driving(resolution=0.1, n_theta=32)


def test_bellman_targets_hand_worked():
    # (1 - 0.9) * 0.5 + 0.9 * min(0.5, 0.2) = 0.05 + 0.18
    y = discounted_safety_target(np.array([0.5, 0.5, -0.1]), np.array([0.2, 0.9, 0.7]), np.array([False, False, True]), 0.9)
    np.testing.assert_allclose(y, [0.23, 0.5, -0.1])
    assert safety_backup(0.3, 0.7) == 0.3
    torch = pytest.importorskip("torch")
    yt = discounted_safety_target(torch.tensor([0.5, 0.5, -0.1]), torch.tensor([0.2, 0.9, 0.7]),
                                  torch.tensor([False, False, True]), 0.9)
    np.testing.assert_allclose(yt.numpy(), [0.23, 0.5, -0.1], rtol=1e-6)


def test_value_iteration_is_a_fixed_point(grid):
    assert grid.meta["converged"]
    nodes = grid.node_states().reshape(-1, 3)
    v = grid.values.reshape(-1)
    assert np.all(v <= D.margin(nodes) + 1e-12)  # V <= l
    # Bellman residual at nodes whose successors stay inside the grid
    rng = np.random.default_rng(0)
    idx = rng.choice(len(nodes), 3000, replace=False)
    s = nodes[idx]
    inside = np.all([(D.step(s, a)[:, 0] < grid.xs[-1]) & (D.step(s, a)[:, 1] < grid.ys[-1])
                     & (D.step(s, a)[:, 0] > grid.xs[0]) & (D.step(s, a)[:, 1] > grid.ys[0]) for a in range(3)], axis=0)
    back = np.minimum(D.margin(s), grid.q_values(s).max(1))
    np.testing.assert_allclose(back[inside], v[idx][inside], atol=1e-6)
    # the grid reaches beyond the walls
    assert grid.xs[0] < 0 and grid.ys[0] < 0 and grid.ys[-1] > D.ROAD_WIDTH


def test_exact_safe_set_obvious_states(grid):
    # in the middle of the road heading along it, far from obstacles: safe
    assert grid.safe(np.array([[0.3, 2.5, 0.0]]))[0]
    # touching the right edge heading straight into it: no action avoids failure
    s = np.array([0.6, 0.05, -math.pi / 2])
    assert not grid.safe(s[None])[0]
    assert exhaustive_can_survive(s, depth=6) is False


@pytest.mark.statistical
def test_exact_safe_set_validated_by_rollouts_and_search(grid):
    rep = validate(grid, n=40, seed=1, steps=80, depth=10)
    assert rep["safe_rollout_ok"] == 1.0  # the implied fallback keeps every labelled-safe state safe
    assert rep["unsafe_certified"] + rep["unsafe_undecided"] >= 0.95
    assert rep["unsafe_counterexamples"] <= 2
