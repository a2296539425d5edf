"""The PAC stopping rule and the learner on inputs nobody showed us: the amplification factor B against its
definition by dense matrix powers, the requirement at extreme (epsilon, delta) and bad arguments, and Eq. 1
against exact Fractions on hypothesis paths with one-state traces, never-left states and self-loops only;
paths whose lengths or indices a cast to int would silently misread."""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.core.errors import InputError
from agentguard.predictive.learn import DTMCLearner, count_transitions
from agentguard.predictive.pac import amplification_factor, pac_report, prob01, required_count

from .test_guard_edge import exact_chains


def _definition_B(P: np.ndarray, target: np.ndarray) -> float:
    """``min_m m / cond_m`` with ``cond_m = min_{i in S?} P_i(leave S? within m steps)`` by dense powers."""
    no, yes = prob01(sp.csr_matrix(P), target)
    unc = np.flatnonzero(~(no | yes))
    if unc.size == 0:
        return 1.0
    Q = P[np.ix_(unc, unc)]
    best, Qm = math.inf, np.eye(unc.size)
    for m in range(1, 20_000):
        Qm = Qm @ Q
        cond = float((1.0 - Qm.sum(axis=1)).min())
        if cond > 0:
            best = min(best, m / cond)
        if m >= best:
            return best
    raise AssertionError("B not reached")


@settings(max_examples=60, deadline=None)
@given(exact_chains())
def test_amplification_factor_matches_its_definition(chain):
    """Including absorbing states, self-loop-only chains (B = 1: nothing uncertain) and unreachable targets."""
    rows, unsafe = chain
    n = len(rows)
    P = np.zeros((n, n))
    for i, r in enumerate(rows):
        for j, p in r.items():
            P[i, j] = float(p)
    B, info = amplification_factor(sp.csr_matrix(P), unsafe)
    assert B >= 1.0
    assert B == pytest.approx(_definition_B(P, unsafe), rel=1e-9)
    if not unsafe.any() or all(r == {i: 1} for i, r in enumerate(rows)):
        assert B == 1.0 and info["uncertain_states"] == 0


@pytest.mark.parametrize("eps,dp,B", [(1e-12, 0.05, 1.0), (0.05, 1e-300, 1.0), (0.999, 0.999, 1.0), (0.05, 0.05, 1e6)])
def test_requirements_at_extreme_parameters_are_finite_and_ordered(eps, dp, B):
    rc = np.array([3.0, 7.0, 0.0])
    req = {v: required_count(rc, 10.0, eps, dp, B, v) for v in ("line11", "appendix", "conservative")}
    assert all(math.isfinite(r) for r in req.values())
    assert req["conservative"] == max(req["line11"], req["appendix"]) >= 0
    smaller = required_count(rc, 10.0, min(0.999, eps * 2), dp, B, "appendix")
    assert smaller <= req["appendix"]  # a looser epsilon never needs more samples


@pytest.mark.parametrize("args", [
    (0.0, 0.1, 1.0), (1.0, 0.1, 1.0), (math.nan, 0.1, 1.0), (0.1, 0.0, 1.0), (0.1, 1.0, 1.0),
    (0.1, math.nan, 1.0), (0.1, 0.1, 0.5), (0.1, 0.1, math.nan), (0.1, 0.1, math.inf),
])
def test_required_count_refuses_arguments_outside_the_bound(args):
    """eps = 0 divided by zero; B = NaN returned NaN, and ``n_p >= nan`` is False for ever."""
    with pytest.raises(InputError) as e:
        required_count(np.array([1.0, 1.0]), 2.0, *args)
    assert "\n" not in str(e.value)
    with pytest.raises(InputError):
        required_count(np.array([1.0, 1.0]), math.nan, 0.1, 0.1, 1.0)


def test_pac_report_on_a_chain_that_never_leaves_its_states():
    """Self-loops only: every row is determined by the valid mask, so the rule holds with no sample."""
    n = 3
    P = sp.identity(n, format="csr")
    rep = pac_report(sp.csr_matrix((n, n)), P, np.eye(n, dtype=bool), np.array([0, 0, 1], bool), 0.01, 0.01,
                     ["a", "b", "c"])
    assert rep.done and all(rep.determined) and rep.B == 1.0 and rep.missing == 0


@st.composite
def path_sets(draw):
    names = ["s0", "s1", "s2", "s3"]
    return draw(st.lists(st.lists(st.sampled_from(names), min_size=1, max_size=6), min_size=1, max_size=8))


@settings(max_examples=80, deadline=None)
@given(path_sets(), st.sampled_from([0, 1, Fraction(1, 2)]))
def test_eq1_against_exact_fractions_on_short_and_one_state_paths(paths, alpha):
    learner = DTMCLearner(alpha=alpha).add_paths(paths)
    states = learner.states
    counts = Counter((a, b) for p in paths for a, b in zip(p, p[1:]))
    P = learner.matrix().toarray()
    k = len(states)  # valid = "any": every learned state is a valid successor
    for i, s in enumerate(states):
        n_i = sum(counts[(s, t)] for t in states)
        for j, t in enumerate(states):
            if n_i + k * alpha == 0:  # never left and alpha = 0: the alpha -> 0+ limit, uniform
                want = Fraction(1, k)
            else:
                want = (counts[(s, t)] + Fraction(alpha)) / (n_i + k * Fraction(alpha))
            assert P[i, j] == pytest.approx(float(want), abs=1e-12), (s, t)
    learner.model().validate()


def test_an_empty_path_names_its_position():
    with pytest.raises(InputError, match="path 1 is empty"):
        DTMCLearner().add_paths([["a", "b"], []])


@pytest.mark.parametrize("flat,lengths,match", [
    ([0, 1, 2], [3, -1, 1], "lengths must be >= 0"),     # counted 0->1 only, silently
    ([0.5, 1.7], [2], "state indices"),                  # truncated to 0->1
    ([0, 1], [1.5, 0.5], "path lengths"),
    ([0, float("nan")], [2], "state indices"),
])
def test_paths_a_cast_to_int_would_misread_are_refused(flat, lengths, match):
    with pytest.raises(InputError, match=match):
        count_transitions(np.array(flat), np.array(lengths), 3)
    learner = DTMCLearner(states=["a", "b", "c"])
    with pytest.raises(InputError, match=match if match != "lengths must be >= 0" else "at least one state"):
        learner.add_index_paths(np.array(flat), np.array(lengths))


@pytest.mark.parametrize("counts", [[float("nan")], [-1.0], [float("inf")]])
def test_add_counts_refuses_counts_that_are_not_counts(counts):
    with pytest.raises(InputError, match="non-negative counts"):
        DTMCLearner().add_counts(["a"], ["b"], counts, {"a": 1}, 1)


def test_very_large_counts_keep_eq1_exact_enough_and_the_rule_holds():
    learner = DTMCLearner(alpha=1).add_counts(["a", "a", "b"], ["a", "b", "b"], [3e15, 1e15, 5.0], {"a": 1}, 1)
    P = learner.matrix().toarray()
    assert P[0].tolist() == pytest.approx([0.75, 0.25], abs=1e-12) and P.sum(axis=1).tolist() == [1.0, 1.0]
    rep = learner.pac_report()
    assert rep.holds[0] and math.isfinite(rep.required[0])


def test_counts_outside_0_to_n_p_are_refused_not_a_negative_requirement():
    # session 26: n_pq/n_p outside [0, 1] made the bracket of line 11 negative, so a state with 5
    # samples "needed" -1320 and held; a negative count in pac_report's matrix did the same
    for rc, n_p in (([10.0, 20.0], 5.0), ([-10.0, 15.0], 5.0), ([1.0, math.nan], 5.0), ([1.0, 2.0], math.inf)):
        with pytest.raises(InputError):
            required_count(np.array(rc), n_p, 0.1, 0.1, 1.0)
    P = sp.csr_matrix(np.array([[0.5, 0.5, 0], [0, 1, 0], [0, 0, 1.0]]))
    names, valid, target = ["a", "b", "c"], np.ones((3, 3), bool), np.array([0, 0, 1], bool)
    for bad in (np.array([[-5, 100, 100], [0, 0, 0], [0, 0, 0]], float),
                np.array([[math.nan, 1, 1], [0, 0, 0], [0, 0, 0]]), np.ones((2, 2))):
        with pytest.raises(InputError):
            pac_report(sp.csr_matrix(bad), P, valid, target, 0.3, 0.1, names)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 10_000), min_size=2, max_size=6), st.floats(0.01, 0.5), st.floats(0.001, 0.5),
       st.floats(1.0, 20.0))
def test_requirements_follow_line_11_and_the_appendix_literally(counts, eps, dp, B):
    # oracle: the printed formulas, term by term (Pro2Guard Alg. 1 line 11; appendix H* with
    # eps' = eps / (11/10 B)), against required_count's vectorised ones
    n = float(sum(counts))
    if n == 0:
        assert required_count(np.array(counts, float), n, eps, dp, B) == math.inf
        return
    f = (11 / 10 * B) ** 2
    line11 = f * 2 / eps ** 2 * math.log(2 / dp) * (0.25 - (max(abs(0.5 - c / n) for c in counts) - 2 / 3 * eps) ** 2)
    e1 = eps / (11 / 10 * B)
    app = max(2 / e1 ** 2 * math.log(2 / dp) * (0.25 - max(0.0, abs(0.5 - c / n) - 2 / 3 * e1) ** 2) for c in counts)
    rc = np.array(counts, float)
    assert required_count(rc, n, eps, dp, B, "line11") == pytest.approx(line11, rel=1e-12, abs=1e-9)
    assert required_count(rc, n, eps, dp, B, "appendix") == pytest.approx(app, rel=1e-12, abs=1e-9)
    assert required_count(rc, n, eps, dp, B) == pytest.approx(max(line11, app), rel=1e-12, abs=1e-9)
    assert min(line11, app) >= 0  # valid counts never give a negative requirement
