"""Calibration on inputs nobody showed us: the sample-size boundary (the count the error names is exactly the
first one accepted), ties and all-equal minima against a brute-force search, +inf scores (a missed-detection
threshold of +inf used to miss every such sequence while reporting k = 1), one-class calibration sets, bad
alpha/delta, the streaming rule on variable-length sequences, and the promised rates simulated at the
smallest admissible n, where CRC's bound is tight."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard import Decision
from agentguard.calibration import ThresholdCalibrator, ThresholdMonitor, calibrate_threshold
from agentguard.calibration.bounds import max_losses, min_n_for_guarantee
from agentguard.calibration.calibrate import crc_max_losses
from agentguard.calibration.data import Sequences
from agentguard.calibration.evaluator import pac_threshold
from agentguard.calibration.monitor import first_alarm_steps
from agentguard.core.errors import GuaranteeError, InputError
from agentguard.core.types import Context

RISKS = ("false_alarm", "missed_detection")


@settings(max_examples=150, deadline=None)
@given(st.floats(0.002, 0.998), st.floats(0.001, 0.9), st.sampled_from(["crc", "ucb"]),
       st.sampled_from(["hb", "binomial"]), st.sampled_from(RISKS))
def test_the_sample_size_named_is_exactly_the_first_accepted(alpha, delta, method, bound, risk):
    need = min_n_for_guarantee(alpha, delta if method == "ucb" else None, method, bound)
    k = (lambda n: crc_max_losses(n, alpha)) if method == "crc" else (lambda n: max_losses(n, alpha, delta, bound))
    assert k(need) >= 0 and (need == 1 or k(need - 1) < 0)
    if need > 1 and need < 5000:
        with pytest.raises(GuaranteeError, match=f"need at least {need} ") as e:
            calibrate_threshold(np.zeros(need - 1), risk=risk, method=method, alpha=alpha, delta=delta, bound=bound)
        assert "\n" not in str(e.value)
        t = calibrate_threshold(np.zeros(need - 1), risk=risk, method=method, alpha=alpha, delta=delta,
                                bound=bound, on_infeasible="trivial")
        assert t.trivial and t.threshold == (-math.inf if risk == "false_alarm" else math.inf)
    if need < 5000:
        assert not calibrate_threshold(np.zeros(need), risk=risk, method=method, alpha=alpha, delta=delta,
                                       bound=bound).trivial


def test_rounding_at_the_boundary_alpha_0999_delta_0001():
    """(1 - 0.999) rounds above 0.001, so n = 1 is refused; the error used to ask for 1 sequence."""
    assert min_n_for_guarantee(0.999, 0.001, "ucb") == 2
    with pytest.raises(GuaranteeError, match="need at least 2 safe sequences, got 1"):
        calibrate_threshold([0.5], method="ucb", alpha=0.999, delta=0.001)


def _brute(m: np.ndarray, k: int, risk: str) -> float:
    """The extreme threshold admitting at most k losses, by trying every candidate."""
    if risk == "false_alarm":
        cands = sorted(set(m.tolist()) | {math.inf})
        return max(c for c in cands if np.sum(m < c) <= k)
    cands = sorted({float(np.nextafter(x, np.inf)) for x in m} | {-math.inf})
    return min(c for c in cands if np.sum(m >= c) <= k)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(-3, 3), min_size=1, max_size=40), st.floats(0.02, 0.9), st.sampled_from(RISKS),
       st.sampled_from(["crc", "ucb"]), st.booleans())
def test_ties_and_equal_minima_give_the_brute_force_threshold(values, alpha, risk, method, neg_inf):
    """Heavy ties (7 values), all-equal sets, -inf minima (allowed: below every finite threshold)."""
    m = np.asarray(values, dtype=float)
    if neg_inf:
        m[::3] = -np.inf
    c = calibrate_threshold(m, risk=risk, method=method, alpha=alpha, delta=0.2, on_infeasible="trivial")
    if c.trivial:
        return
    assert c.threshold == _brute(m, c.max_losses, risk)
    losses = np.sum(m < c.threshold) if risk == "false_alarm" else np.sum(m >= c.threshold)
    assert losses <= c.max_losses and c.empirical_risk == losses / m.size


@pytest.mark.parametrize("risk", RISKS)
def test_plus_inf_minima_are_refused(risk):
    """Before: missed_detection on [inf] * 20 gave threshold inf, max_losses 1 and empirical risk 1.0 (all
    missed, since no score is below +inf). +inf is below no threshold: not a score."""
    with pytest.raises(InputError, match=r"\+inf") as e:
        calibrate_threshold(np.full(20, np.inf), risk=risk, alpha=0.1)
    assert "\n" not in str(e.value)
    with pytest.raises(InputError, match=r"\+inf"):
        Sequences.from_lists([[0.5, np.inf], [0.2]], [1, 0])


def test_a_plus_inf_score_at_run_time_fails_closed_even_for_the_alarm_at_once_monitor():
    for thr in (math.inf, 0.5, -math.inf):
        mon = ThresholdMonitor(thr)
        assert mon.check(Context(run_id="r"), math.inf).decision == Decision.HALT
        with pytest.raises(InputError, match=r"\+inf"):
            ThresholdMonitor(thr).update(math.inf)
    assert ThresholdMonitor(math.inf).check(Context(run_id="r"), -math.inf).decision == Decision.HALT
    assert ThresholdMonitor(-math.inf).check(Context(run_id="r"), -math.inf).decision == Decision.ALLOW


@pytest.mark.parametrize("alpha", [0, 1, -0.1, 1.5, float("nan"), "x", None])
def test_alpha_outside_the_open_unit_interval_is_refused(alpha):
    with pytest.raises(InputError, match="alpha"):
        calibrate_threshold([0.1, 0.2], alpha=alpha)
    with pytest.raises(InputError, match="delta"):
        calibrate_threshold([0.1, 0.2], method="ucb", alpha=0.5, delta=alpha)


@pytest.mark.parametrize("risk,labels,cls", [("missed_detection", [1, 1, 1], "unsafe"),
                                              ("false_alarm", [0, 0, 0], "safe")])
def test_a_calibration_set_with_the_other_class_only_is_refused(risk, labels, cls):
    with pytest.raises(GuaranteeError, match=f"need at least 9 {cls} sequences, got 0"):
        ThresholdCalibrator(risk=risk, alpha=0.1).calibrate([[0.1], [0.2, 0.3], [0.4]], labels)


def test_nan_maxima_are_refused_by_the_pac_threshold():
    """Sorted last, NaN could be the chosen order statistic: ``M_t > nan`` never alarms."""
    with pytest.raises(InputError, match="NaN"):
        pac_threshold(np.array([0.1, np.nan, 0.3]), 0.5, 0.5)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.sampled_from([-math.inf, -1.0, 0.0, 0.25, 0.5, 1.0, 3.0]), min_size=1, max_size=6),
                min_size=1, max_size=8),
       st.sampled_from([-math.inf, -1.0, 0.0, 0.25, 0.5, 0.75, math.inf]))
def test_vectorised_and_streaming_rules_agree_on_variable_lengths(seqs, thr):
    data = Sequences.from_lists(seqs, [1] * len(seqs))
    steps = first_alarm_steps(data.scores, data.starts, data.lengths, thr)
    for s, got in zip(seqs, steps):
        mon = ThresholdMonitor(thr)
        v = mon.run(s)
        want = next((i + 1 for i, x in enumerate(s) if x < thr), 0)
        assert got == want and (v.decision == Decision.HALT) == (want > 0)


# --- the promised rates at the smallest admissible n (small sizes; Monte-Carlo error stated) ---------------
def _risk(lam: np.ndarray, risk: str, discrete: bool) -> np.ndarray:
    """True risk of threshold lam for minima ~ U(0,1) (continuous) or uniform on {0, .1, .., .9} (ties)."""
    if discrete:
        below = np.mean(np.arange(10)[None, :] / 10 < lam[:, None], axis=1)  # P(M < lam) = #{v < lam} / 10
    else:
        below = np.clip(lam, 0, 1)
    return below if risk == "false_alarm" else 1 - below


def _minima(rng, shape, discrete: bool) -> np.ndarray:
    return rng.integers(0, 10, size=shape) / 10 if discrete else rng.uniform(size=shape)


@pytest.mark.statistical
@pytest.mark.parametrize("risk", RISKS)
@pytest.mark.parametrize("discrete", [False, True])
@pytest.mark.parametrize("alpha", [0.2, 0.1])
def test_crc_rate_at_the_smallest_n(risk, discrete, alpha):
    """E[R(lambda)] <= alpha (Eq. 3) at n = 1/alpha - 1, where the continuous case is tight (= alpha)."""
    rng = np.random.default_rng(1)
    n = min_n_for_guarantee(alpha, None, "crc")
    draws = 6000
    lam = np.array([calibrate_threshold(m, risk=risk, alpha=alpha).threshold
                    for m in _minima(rng, (draws, n), discrete)])
    r = _risk(lam, risk, discrete)
    se = r.std(ddof=1) / math.sqrt(draws)
    assert r.mean() <= alpha + 4 * se, (r.mean(), se)
    if not discrete:
        assert r.mean() == pytest.approx(alpha, abs=5 * se)  # tight: the simulation can see a violation


@pytest.mark.statistical
@pytest.mark.parametrize("risk", RISKS)
@pytest.mark.parametrize("bound", ["hb", "binomial"])
def test_ucb_rate_at_the_smallest_n(risk, bound):
    """P(R(lambda) > alpha) <= delta (Eq. 5) at the smallest n that certifies anything."""
    rng = np.random.default_rng(2)
    alpha, delta, draws = 0.2, 0.2, 4000
    n = min_n_for_guarantee(alpha, delta, "ucb", bound)
    lam = np.array([calibrate_threshold(m, risk=risk, method="ucb", alpha=alpha, delta=delta, bound=bound).threshold
                    for m in _minima(rng, (draws, n), False)])
    viol = np.mean(_risk(lam, risk, False) > alpha)
    assert viol <= delta + 4 * math.sqrt(delta * (1 - delta) / draws), viol


def test_a_duplicated_trajectory_is_refused():
    """The same run twice (a trace file appended twice) would count twice towards n; the bound assumes
    distinct exchangeable sequences, so selectively duplicated runs can move the threshold anywhere."""
    from agentguard.core.types import Step, Trace

    with pytest.raises(InputError, match="appears twice") as e:
        Sequences.from_lists([[0.1], [0.2], [0.1]], [1, 1, 1], ids=["a", "b", "a"])
    assert "\n" not in str(e.value)
    t = Trace(steps=[Step(signals={"score": 0.4})], labels={"unsafe": False}, run_id="r1")
    with pytest.raises(InputError, match="'r1' appears twice"):
        Sequences.from_traces([t, t])
    with pytest.raises(InputError, match="ids for"):
        Sequences.from_lists([[0.1], [0.2]], [1, 1], ids=["a"])
    assert Sequences.from_lists([[0.1], [0.2]], [1, 1], ids=["a", "b"]).n == 2


@pytest.mark.parametrize("alpha,delta", [(0.0, 0.1), (1.0, 0.1), (0.1, 0.0), (0.1, float("nan"))])
def test_the_pac_threshold_refuses_alpha_and_delta_outside_the_open_interval(alpha, delta):
    with pytest.raises(InputError):
        pac_threshold(np.array([0.1, 0.2]), alpha, delta)


# --- red team: the CRC inequality at the rounding boundary --------------------------------------------
from fractions import Fraction as _F  # noqa: E402

from agentguard.calibration.bounds import exact_level, min_n_for_guarantee as _min_n  # noqa: E402
from agentguard.calibration.calibrate import crc_max_losses as _crc_k  # noqa: E402


def test_crc_never_admits_a_loss_count_whose_bound_exceeds_alpha():
    """Attack: alpha a hair below a grid point. Before: a relative slack of 1e-12 admitted k = 2 for
    n = 9, alpha = 0.3 - 1e-13, i.e. (k + 1)/(n + 1) = 0.3 > alpha. Now: k = 1. Decimal alphas are
    read as written (0.3 admits k = 2 at n = 9)."""
    assert _crc_k(9, 0.3 - 1e-13) == 1 and _crc_k(9, 0.3) == 2 and _crc_k(9, 0.1) == 0 and _crc_k(8, 0.1) == -1


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10**6), st.floats(1e-9, 1 - 1e-9))
def test_crc_k_is_the_largest_admissible_exactly(n, alpha):
    a = exact_level(alpha)
    k = _crc_k(n, alpha)
    assert k == -1 or _F(k + 1, n + 1) <= a
    assert k == n or _F(k + 2, n + 1) > a  # the next one is not admissible
    m = _min_n(alpha, None, "crc")
    assert _crc_k(m, alpha) >= 0 and (m == 1 or _crc_k(m - 1, alpha) == -1)
