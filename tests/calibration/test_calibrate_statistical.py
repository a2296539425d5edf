"""Statistical validity of the calibrated thresholds on synthetic data where the true risk is known.

Safe and unsafe sequences have lengths L ~ Uniform{1..10} and i.i.d. scores, so the per-sequence
minimum M has a closed-form law:
  continuous scores U(0,1):             P(M < lam) = 1 - E[(1 - lam)^L]
  discrete scores on {0, .05, .., 1}:  P(M < lam) = 1 - E[(#{v >= lam} / 21)^L]   (heavy ties)
Over many calibration draws: CRC's mean true risk <= alpha (Eq. 3), UCB's frequency of true risk >
alpha <= delta (Eq. 5), for both risks. Each check is also run on an uncorrected threshold, to show
the test would catch a violation.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from agentguard.calibration import calibrate_threshold
from agentguard.calibration.evaluator import pac_threshold

pytestmark = pytest.mark.statistical

LENGTHS = np.arange(1, 11)
VALUES = np.linspace(0, 1, 21)


def _p_min_below(lam: float, discrete: bool) -> float:
    """P(M < lam) for the synthetic model."""
    if discrete:
        frac = np.mean(VALUES >= lam)
    else:
        frac = 1.0 - min(max(lam, 0.0), 1.0)
    return float(1.0 - np.mean(frac ** LENGTHS))


def _draw_minima(rng, size, discrete: bool) -> np.ndarray:
    L = rng.integers(1, 11, size=size)
    if discrete:
        # min of L uniform draws on 21 values: index = min of L uniform integers
        u = rng.uniform(size=size)
        # P(min index >= j) = ((21 - j)/21)^L ; invert the survival function
        j = np.floor(21 - 21 * u ** (1.0 / L)).clip(0, 20)
        return VALUES[j.astype(int)]
    return 1.0 - rng.uniform(size=size) ** (1.0 / L)


def _true_risk(lam: float, risk: str, discrete: bool) -> float:
    p = _p_min_below(lam, discrete)
    return p if risk == "false_alarm" else 1.0 - p


def test_synthetic_law_is_right():
    rng = np.random.default_rng(0)
    for discrete in (False, True):
        m = _draw_minima(rng, 200_000, discrete)
        for lam in (0.05, 0.2, 0.5):
            assert np.mean(m < lam) == pytest.approx(_p_min_below(lam, discrete), abs=0.005)


@pytest.mark.parametrize("discrete", [False, True])
@pytest.mark.parametrize("risk", ["false_alarm", "missed_detection"])
def test_crc_controls_the_risk_in_expectation(risk, discrete):
    rng = np.random.default_rng(11)
    R, n, alpha = 3000, 60, 0.1
    risks = np.empty(R)
    naive = np.empty(R)
    for r in range(R):
        m = _draw_minima(rng, n, discrete)
        lam = calibrate_threshold(m, risk=risk, method="crc", alpha=alpha).threshold
        risks[r] = _true_risk(lam, risk, discrete)
        # uncorrected empirical version: k = floor(alpha n) losses, no +1 / (n+1)
        k = int(math.floor(alpha * n))
        s = np.sort(m)
        lam_naive = s[k] if risk == "false_alarm" else np.nextafter(s[n - k - 1], np.inf)
        naive[r] = _true_risk(lam_naive, risk, discrete)
    se = risks.std() / math.sqrt(R)
    assert risks.mean() <= alpha + 3 * se
    if not discrete:  # CRC is tight for continuous scores: E[R] >= alpha - 1/(n+1)
        assert risks.mean() >= alpha - 1 / (n + 1) - 3 * se
        assert naive.mean() > alpha + 3 * naive.std() / math.sqrt(R)  # the check has power


@pytest.mark.parametrize("bound", ["hb", "binomial"])
@pytest.mark.parametrize("discrete", [False, True])
@pytest.mark.parametrize("risk", ["false_alarm", "missed_detection"])
def test_ucb_violation_frequency_at_most_delta(risk, discrete, bound):
    rng = np.random.default_rng(12)
    R, n, alpha, delta = 1500, 150, 0.1, 0.1
    viol = np.empty(R, dtype=bool)
    for r in range(R):
        m = _draw_minima(rng, n, discrete)
        lam = calibrate_threshold(m, risk=risk, method="ucb", alpha=alpha, delta=delta, bound=bound).threshold
        viol[r] = _true_risk(lam, risk, discrete) > alpha
    freq = viol.mean()
    assert freq <= delta + 3 * math.sqrt(delta * (1 - delta) / R)


def test_uncorrected_threshold_violates_often():
    # the same harness flags a threshold set at the plain empirical alpha-quantile
    rng = np.random.default_rng(13)
    R, n, alpha = 1000, 150, 0.1
    viol = 0
    for _ in range(R):
        m = np.sort(_draw_minima(rng, n, False))
        viol += _true_risk(m[int(alpha * n)], "false_alarm", False) > alpha
    assert viol / R > 0.3


def test_pac_threshold_bounds_the_quantile_with_probability_1_minus_delta():
    # maxima ~ U(0,1): the (1 - alpha) quantile is 1 - alpha; violation when the threshold is below it
    rng = np.random.default_rng(14)
    R, n, alpha, delta = 4000, 100, 0.1, 0.1
    thr = np.array([pac_threshold(rng.uniform(size=n), alpha, delta) for _ in range(R)])
    freq = np.mean(thr < 1 - alpha)
    assert freq <= delta + 3 * math.sqrt(delta * (1 - delta) / R)


# --- red team: a score law the calibration was not tuned on, end to end through the stream monitor ----
ATOM, P_ATOM = 0.5, 0.6  # 60 % of the scores sit exactly on one value (the threshold lands on the atom)


def _atom_scores(rng, L: int) -> np.ndarray:
    """Scores of one sequence: ATOM with probability P_ATOM, else standard Cauchy (heavy tails, far
    outside [0, 1])."""
    return np.where(rng.uniform(size=L) < P_ATOM, ATOM, rng.standard_cauchy(size=L))


def _atom_p_min_below(lam: float) -> float:
    """P(min of L scores < lam), L ~ U{1..5}, exactly: P(score >= lam) = P_ATOM [ATOM >= lam] +
    (1 - P_ATOM) (1/2 - atan(lam)/pi)."""
    q = P_ATOM * (ATOM >= lam) + (1 - P_ATOM) * (0.5 - math.atan(lam) / math.pi) if math.isfinite(lam) else \
        (0.0 if lam == math.inf else 1.0)
    return float(1.0 - np.mean(q ** np.arange(1, 6)))


@pytest.mark.parametrize("method", ["crc", "ucb"])
def test_the_promise_holds_on_an_atom_plus_cauchy_law_through_the_stream_monitor(method):
    """Safe sequences only (false alarm). CRC: mean true risk <= alpha; UCB: P(true risk > alpha) <=
    delta; the true risk of each calibrated threshold is exact (closed form above), and on every
    draw the stream monitor's verdicts on fresh sequences are Eq. 1 (alarm iff a score < lambda)."""
    from agentguard.calibration import ThresholdCalibrator
    from agentguard.core import Context

    rng = np.random.default_rng(20261126)
    R, n, alpha, delta = 800, 40, 0.1, 0.2
    risks = np.empty(R)
    for r in range(R):
        seqs = [_atom_scores(rng, int(L)) for L in rng.integers(1, 6, size=n)]
        cal = ThresholdCalibrator("false_alarm", method, alpha, delta, on_infeasible="trivial").calibrate(
            seqs, [1] * n)
        lam = cal.threshold_
        risks[r] = _atom_p_min_below(lam)
        if r < 20:  # the streaming path decides as the closed form assumes
            mon = cal.monitor()
            for i in range(10):
                s = _atom_scores(rng, int(rng.integers(1, 6)))
                alarmed = any(mon.check(Context(run_id=f"{r}-{i}"), float(x)).blocks for x in s)
                assert alarmed == bool((s < lam).any())
    if method == "crc":
        assert risks.mean() <= alpha + 3 * risks.std() / math.sqrt(R)
    else:
        assert (risks > alpha).mean() <= delta + 3 * math.sqrt(delta * (1 - delta) / R)
