"""The PAC stopping rule (Algorithm 1 line 11 of Pro2Guard) and its empirical guarantee."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from agentguard import InputError
from agentguard.predictive.learn import DTMCLearner, count_transitions, sample_paths
from agentguard.predictive.pac import amplification_factor, prob01, required_count
from agentguard.predictive.pac_validation import simulate_guarantee


def dense_reach(P, target):
    """Private dense oracle for P[F target] (tests only)."""
    A = sp.csr_matrix(P).toarray()
    target = np.asarray(target, bool)
    p0, p1 = prob01(sp.csr_matrix(A), target)
    x = np.zeros(len(A))
    x[p1] = 1.0
    u = ~(p0 | p1)
    if u.any():
        x[u] = np.linalg.solve(np.eye(u.sum()) - A[np.ix_(u, u)], A[np.ix_(u, p1)].sum(axis=1))
    return x


# ground truth: 0 start, 3 unsafe, 4 finish; 2 -> 3 is valid but has true probability 0
TRUTH = np.array([
    [0.2, 0.5, 0.3, 0.0, 0.0],
    [0.0, 0.2, 0.0, 0.3, 0.5],
    [0.0, 0.4, 0.0, 0.0, 0.6],
    [0.0, 0.0, 0.0, 1.0, 0.0],
    [0.0, 0.0, 0.0, 0.0, 1.0],
])
VALID = TRUTH > 0
VALID[2, 3] = True
UNSAFE = np.array([0, 0, 0, 1, 0], bool)


def test_ground_truth_reachability_by_hand():
    # x1 = 0.3 + 0.2 x1 = 0.375; x2 = 0.4 x1 = 0.15; x0 = (0.5 x1 + 0.3 x2) / 0.8 = 0.290625
    np.testing.assert_allclose(dense_reach(TRUTH, UNSAFE), [0.290625, 0.375, 0.15, 1.0, 0.0], atol=1e-12)


def test_prob01_graph_sets():
    p0, p1 = prob01(sp.csr_matrix(TRUTH), UNSAFE)
    assert p0.tolist() == [False, False, False, False, True]
    assert p1.tolist() == [False, False, False, True, False]


def test_amplification_factor_by_hand():
    # S? = {0}: 0 stays w.p. 1/2, so cond_m = 1 - 2^-m and m / cond_m is 2, 8/3, 24/7, ...: B = 2
    P = sp.csr_matrix(np.array([[0.5, 0.25, 0.25], [0, 1, 0], [0, 0, 1.0]]))
    B, info = amplification_factor(P, np.array([0, 1, 0], bool))
    assert B == pytest.approx(2.0) and info["best_m"] == 1 and info["uncertain_states"] == 1
    # S? = {0, 1}, 0 -> 1 surely, 1 leaves surely: cond_1 = 0, cond_2 = 1: B = 2
    P = sp.csr_matrix(np.array([[0, 1, 0, 0], [0, 0, 0.5, 0.5], [0, 0, 1, 0], [0, 0, 0, 1.0]]))
    B, info = amplification_factor(P, np.array([0, 0, 1, 0], bool))
    assert B == pytest.approx(2.0) and info["best_m"] == 2
    # nothing uncertain: B = 1
    assert amplification_factor(sp.identity(2, format="csr"), np.array([1, 0], bool))[0] == 1.0


def test_required_count_formulas_by_hand():
    row, n, eps, dp, B = np.array([30.0, 70.0, 0.0]), 100.0, 0.1, 0.05, 1.5
    f = (1.1 * B) ** 2
    line11 = f * 2 / eps**2 * math.log(2 / dp) * (0.25 - (0.5 - 2 / 3 * eps) ** 2)  # max_q |1/2 - 0| = 1/2
    assert required_count(row, n, eps, dp, B, "line11") == pytest.approx(line11)
    et = eps / (1.1 * B)  # appendix: H at the successor nearest 1/2 (0.3 or 0.7: |.| = 0.2), error eps/(1.1B)
    appendix = 2 / et**2 * math.log(2 / dp) * (0.25 - max(0.0, 0.2 - 2 / 3 * et) ** 2)
    assert required_count(row, n, eps, dp, B, "appendix") == pytest.approx(appendix)
    assert required_count(row, n, eps, dp, B) == pytest.approx(max(line11, appendix))
    assert required_count(row, 0, eps, dp, B) == math.inf
    with pytest.raises(InputError):
        required_count(row, n, eps, dp, B, "nope")


def test_learner_done_is_a_real_stopping_rule():
    rng = np.random.default_rng(3)
    names = [str(i) for i in range(5)]
    learner = DTMCLearner(alpha=1, epsilon=0.2, delta=0.2, valid=VALID, states=names, labels={"unsafe": {"3"}})
    assert not learner.done  # nothing learned
    learner.add_index_paths(*sample_paths(TRUTH, 0, 5, rng))
    rep = learner.pac_report()
    assert not learner.done and not rep.done and rep.missing > 0
    assert rep.determined == [False, False, False, True, True]  # absorbing rows are fixed by valid
    steps = 0
    while not learner.done:
        learner.add_index_paths(*sample_paths(TRUTH, 0, 20, rng))
        steps += 1
    rep = learner.pac_report()
    assert rep.done and all(rep.holds)
    for c, r, d in zip(rep.counts, rep.required, rep.determined):
        assert d or c >= r
    # one batch earlier the rule did not hold for some state (it stopped at the first sufficient batch)
    assert steps > 1
    d = rep.to_dict()
    assert d["done"] and d["states"][0]["required"] >= 1 and d["B"] >= 1


def test_sample_paths_shape_and_absorption():
    rng = np.random.default_rng(0)
    flat, lengths = sample_paths(TRUTH, 0, 1000, rng)
    assert flat.size == lengths.sum() and lengths.min() >= 2
    ends = flat[np.cumsum(lengths) - 1]
    assert set(np.unique(ends)) <= {3, 4}
    C = count_transitions(flat, lengths, 5).toarray()
    freq = C / C.sum(axis=1, keepdims=True).clip(1)
    assert abs(freq[0, 1] - 0.5) < 0.05 and C[2, 3] == 0


@pytest.mark.statistical
def test_pac_guarantee_holds_in_simulation():
    """Small version of benchmarks/learn_pac_validation.py: failures <= delta * repetitions."""
    eps, delta, reps = 0.2, 0.2, 30
    res = simulate_guarantee(TRUTH, 0, UNSAFE, VALID, eps, delta, reps, seed=11)  # checker.reach
    assert res["max_traces_hit"] == 0
    assert res["failure_rate_start"] <= delta
    assert res["failure_rate_all_states"] <= delta
    # control: the same experiment stopped after 10 traces regardless of the rule fails far more often,
    # so the check above has the power to catch a rule that stops too early
    ctrl = simulate_guarantee(TRUTH, 0, UNSAFE, VALID, eps, delta, reps, seed=12, max_traces=10)
    assert ctrl["max_traces_hit"] == reps and ctrl["failure_rate_all_states"] > delta
