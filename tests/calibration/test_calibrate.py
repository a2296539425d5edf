"""Unit tests of agentguard.calibration: thresholds (hand-worked and brute-force oracles), bounds,
lifecycle, bad input, the streaming monitor, metrics."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom

from agentguard.calibration import (
    Sequences,
    ThresholdCalibrator,
    ThresholdMonitor,
    calibrate_threshold,
    monitor_metrics,
    stop_at_alarm,
)
from agentguard.calibration.bounds import binomial_pvalue, hb_pvalue, max_losses, min_n_for_guarantee
from agentguard.calibration.calibrate import crc_max_losses
from agentguard.calibration.monitor import first_alarm_steps
from agentguard.core import Decision, GuaranteeError, InputError, LifecycleError, Step
from agentguard.core.types import Context


# ----------------------------------------------------------------------------------- CRC, by hand
def test_crc_hand_worked_false_alarm():
    # nine safe minima 0.1..0.9, alpha = 0.2: (k+1)/(n+1) <= 0.2 -> k = 1, lambda = m_(2) = 0.2
    m = np.arange(1, 10) / 10
    c = calibrate_threshold(m, risk="false_alarm", method="crc", alpha=0.2)
    assert c.max_losses == 1 and c.threshold == pytest.approx(0.2)
    assert c.empirical_risk == pytest.approx(1 / 9)     # only 0.1 < 0.2 is flagged
    # any larger threshold flags two: (2 + 1) / 10 > 0.2
    assert (np.sum(m < np.nextafter(0.2, 1)) + 1) / 10 > 0.2


def test_crc_hand_worked_missed_detection():
    # nine unsafe minima 0.1..0.9, alpha = 0.2: at most k = 1 missed; smallest lambda just above m_(8) = 0.8
    m = np.arange(1, 10) / 10
    c = calibrate_threshold(m, risk="missed_detection", method="crc", alpha=0.2)
    assert c.max_losses == 1
    assert 0.8 < c.threshold < 0.8 + 1e-12
    assert np.sum(m >= c.threshold) == 1                   # only 0.9 is missed
    assert np.sum(m >= 0.8) == 2                            # lambda = 0.8 itself would miss two


def _brute_force(m: np.ndarray, risk: str, admissible) -> float:
    """Largest (false alarm) / smallest (missed detection) threshold among all distinct cut points."""
    vals = np.unique(m)
    cands = np.concatenate([[-np.inf], vals, np.nextafter(vals, np.inf), [np.inf]])
    ok = [lam for lam in cands if admissible(int(np.sum(m < lam) if risk == "false_alarm" else np.sum(m >= lam)))]
    return max(ok) if risk == "false_alarm" else min(ok)


@pytest.mark.parametrize("risk", ["false_alarm", "missed_detection"])
@pytest.mark.parametrize("method", ["crc", "ucb"])
def test_closed_form_equals_brute_force_with_ties(risk, method):
    rng = np.random.default_rng(1)
    for trial in range(30):
        n = int(rng.integers(30, 200))
        m = np.round(rng.beta(4, 2, n), 1 if trial % 2 else 3)   # heavy ties on odd trials
        a = float(rng.choice([0.05, 0.1, 0.2, 0.3]))
        if method == "crc":
            adm = lambda k: (k + 1) / (n + 1) <= a
        else:
            adm = lambda k: hb_pvalue(k, n, a) <= 0.1
        if not adm(0):
            continue
        c = calibrate_threshold(m, risk=risk, method=method, alpha=a, delta=0.1)
        assert c.threshold == _brute_force(m, risk, adm)


def test_crc_matches_the_papers_grid_search_up_to_the_grid():
    # the authors' code searches lambda on linspace(0, 1, 10001); the closed form is the exact sup,
    # so the grid answer is the largest grid point not above it.
    rng = np.random.default_rng(2)
    grid = np.linspace(0, 1, 10001)
    for _ in range(20):
        m = rng.uniform(size=300)
        a = 0.1
        counts = np.searchsorted(np.sort(m), grid, side="left")
        grid_lam = grid[(counts + 1) / (len(m) + 1) <= a].max()
        lam = calibrate_threshold(m, alpha=a).threshold
        assert grid_lam <= lam and not ((grid > grid_lam) & (grid <= lam)).any()


def test_crc_max_losses_formula():
    assert crc_max_losses(9, 0.2) == 1
    assert crc_max_losses(19, 0.05) == 0
    assert crc_max_losses(18, 0.05) == -1
    assert min_n_for_guarantee(0.05, None, "crc") == 19


# -------------------------------------------------------------------------------------- bounds
def test_hb_pvalue_by_hand():
    n, k, a = 100, 4, 0.1
    r = k / n
    h = r * math.log(r / a) + (1 - r) * math.log((1 - r) / (1 - a))
    bent = math.e * sum(math.comb(n, j) * a**j * (1 - a) ** (n - j) for j in range(k + 1))
    assert float(hb_pvalue(k, n, a)) == pytest.approx(min(math.exp(-n * h), bent), rel=1e-10)
    # at k = 0 the Hoeffding term is (1 - a)^n
    assert float(hb_pvalue(0, n, a)) == pytest.approx((1 - a) ** n, rel=1e-10)
    # r >= alpha: Hoeffding term is 1
    assert float(hb_pvalue(20, n, a)) == pytest.approx(min(1.0, math.e * binom.cdf(20, n, a)))


def test_not_the_swapped_notebook_bentkus_term():
    # the authors' notebook uses e * P(Bin(n, r) >= ceil(n alpha)); the correct term is e * P(Bin(n, alpha) <= n r)
    n, k, a = 200, 10, 0.1
    swapped = math.e * binom.sf(math.ceil(n * a) - 1, n, k / n)
    correct = math.e * binom.cdf(k, n, a)
    assert not math.isclose(swapped, correct, rel_tol=1e-3)
    assert float(hb_pvalue(k, n, a)) <= correct + 1e-15


def test_binomial_pvalue_is_tighter_than_hb():
    n, a = 500, 0.1
    k = np.arange(0, 80)
    assert (binomial_pvalue(k, n, a) <= hb_pvalue(k, n, a) + 1e-15).all()
    assert max_losses(n, a, 0.1, "binomial") >= max_losses(n, a, 0.1, "hb")


@pytest.mark.parametrize("bound", ["hb", "binomial"])
def test_max_losses_bisection_equals_scan(bound):
    for n in (1, 5, 22, 23, 100, 1000, 4321):
        for a in (0.05, 0.1, 0.3):
            p = (hb_pvalue if bound == "hb" else binomial_pvalue)(np.arange(n + 1), n, a)
            ok = np.flatnonzero(p <= 0.1)
            assert max_losses(n, a, 0.1, bound) == (ok.max() if ok.size else -1)


def test_ucb_minimum_sample_size():
    # (1 - 0.1)^n <= 0.1  <=>  n >= 21.85 -> 22
    assert min_n_for_guarantee(0.1, 0.1, "ucb") == 22
    assert max_losses(21, 0.1, 0.1) == -1 and max_losses(22, 0.1, 0.1) == 0


# ------------------------------------------------------------------- lifecycle and bad input
def _toy(n=200, seed=0):
    rng = np.random.default_rng(seed)
    lens = rng.integers(1, 8, n)
    labels = (rng.uniform(size=n) < 0.6).astype(int)
    seqs = [rng.beta(5 if y else 2, 2, L) for y, L in zip(labels, lens)]
    return seqs, labels


def test_lifecycle_order_is_enforced():
    cal = ThresholdCalibrator("false_alarm", "crc", alpha=0.1)
    with pytest.raises(LifecycleError):
        cal.monitor()
    with pytest.raises(LifecycleError):
        _ = cal.threshold_
    seqs, labels = _toy()
    cal.calibrate(seqs, labels)
    assert np.isfinite(cal.threshold_) and not cal.trivial_
    assert cal.n_calibration_ == int(np.sum(labels == 1))
    mon = cal.monitor()
    assert isinstance(mon, ThresholdMonitor) and mon.threshold == cal.threshold_
    assert "threshold_=" in repr(cal)


@pytest.mark.parametrize("alpha", [0, 1, -0.1, 1.5, float("nan"), "x"])
def test_alpha_outside_unit_interval(alpha):
    with pytest.raises(InputError, match="alpha"):
        ThresholdCalibrator(alpha=alpha)


def test_bad_parameters():
    with pytest.raises(InputError, match="delta"):
        ThresholdCalibrator(method="ucb", delta=1.0)
    with pytest.raises(InputError, match="risk"):
        ThresholdCalibrator(risk="false_positive")
    with pytest.raises(InputError, match="method"):
        ThresholdCalibrator(method="grid")
    with pytest.raises(InputError, match="bound"):
        ThresholdCalibrator(method="ucb", bound="wsr")


def test_bad_sequences():
    with pytest.raises(InputError, match="NaN"):
        Sequences.from_lists([[0.5, float("nan")], [0.2]], [1, 0])
    with pytest.raises(InputError, match="empty"):
        Sequences.from_lists([[0.5], []], [1, 0])
    with pytest.raises(InputError, match="0 or 1"):
        Sequences.from_lists([[0.5], [0.3]], [1, 2])
    with pytest.raises(InputError, match="labels"):
        Sequences.from_lists([[0.5], [0.3]], [1])
    with pytest.raises(InputError, match="no sequences"):
        Sequences.from_lists([], [])
    with pytest.raises(InputError, match="different labels"):
        Sequences.from_flat(np.array(["a", "a"]), np.array([1, 2]), np.array([0.1, 0.2]), np.array([1, 0]))


def test_too_few_calibration_sequences():
    seqs, labels = [[0.9]] * 10 + [[0.1]] * 3, [1] * 10 + [0] * 3
    with pytest.raises(GuaranteeError, match="need at least 19 safe sequences, got 10"):
        ThresholdCalibrator("false_alarm", "crc", alpha=0.05).calibrate(seqs, labels)
    with pytest.raises(GuaranteeError, match="need at least 22 unsafe sequences, got 3"):
        ThresholdCalibrator("missed_detection", "ucb", alpha=0.1, delta=0.1).calibrate(seqs, labels)
    # explicit trivial monitors: flag nothing for false alarm, everything for missed detection
    fa = ThresholdCalibrator("false_alarm", "crc", alpha=0.05, on_infeasible="trivial").calibrate(seqs, labels)
    assert fa.trivial_ and fa.threshold_ == -math.inf and fa.monitor().run([0.0, -5.0]).allowed
    md = ThresholdCalibrator("missed_detection", "ucb", alpha=0.1, on_infeasible="trivial").calibrate(seqs, labels)
    assert md.trivial_ and md.threshold_ == math.inf and not md.monitor().run([1e9]).allowed


# ------------------------------------------------------------------------------------- monitor
def test_threshold_monitor_streaming_verdicts():
    mon = ThresholdMonitor(0.5, name="m")
    v1 = mon.update(0.9)
    assert v1.decision is Decision.ALLOW and v1.numbers["step"] == 1
    v2 = mon.update(0.4)
    assert v2.decision is Decision.HALT
    assert v2.numbers == {"step": 2.0, "score": 0.4, "threshold": 0.5}
    assert mon.update(0.99) is v2           # latched
    mon.reset()
    assert mon.update(0.5).allowed          # not strictly below
    with pytest.raises(InputError, match="NaN"):
        mon.update(float("nan"))
    rej = ThresholdMonitor(0.5, decision="reject")
    assert rej.update(0.1).decision is Decision.REJECT
    with pytest.raises(InputError):
        ThresholdMonitor(0.5, decision="allow")


def test_threshold_monitor_as_guard():
    mon = ThresholdMonitor(0.5, signal="p_safe")
    a, b = Context(run_id="a"), Context(run_id="b")
    assert mon.check(a, Step(signals={"p_safe": 0.8})).allowed
    assert mon.check(b, {"p_safe": 0.9}).allowed
    v = mon.check(a, {"p_safe": 0.2})
    assert v.decision is Decision.HALT and v.numbers["step"] == 2
    assert mon.check(a, {"p_safe": 0.99}).decision is Decision.HALT      # run a stays halted
    assert mon.check(b, {"p_safe": 0.7}).allowed                          # run b is independent
    mon.end_run("a")
    assert mon.check(a, {"p_safe": 0.99}).allowed
    from agentguard.core import GuardStack
    assert GuardStack([mon]).check(b, {"p_safe": 0.1}).decision is Decision.HALT
    unreadable = ThresholdMonitor(0.5, signal="p_safe").check(Context(), Step(signals={}))
    assert unreadable.decision is Decision.HALT and "no signal 'p_safe'" in unreadable.reason


def test_stop_at_alarm_stops_and_closes_the_generator():
    pulled, closed = [], []

    def gen():
        try:
            for s in [0.9, 0.8, 0.3, 0.95, 0.99]:
                pulled.append(s)
                yield s
        finally:
            closed.append(True)

    stream = stop_at_alarm(gen(), ThresholdMonitor(0.5))
    assert list(stream) == [0.9, 0.8, 0.3]
    assert pulled == [0.9, 0.8, 0.3] and closed == [True]
    assert stream.cut and stream.verdict.numbers["step"] == 3
    withheld = stop_at_alarm(iter([0.9, 0.1, 0.9]), ThresholdMonitor(0.5), include_alarm_item=False)
    assert list(withheld) == [0.9]


def test_vectorised_alarms_equal_streaming():
    seqs, labels = _toy(300, 3)
    data = Sequences.from_lists(seqs, labels)
    for lam in (0.2, 0.5, 0.7):
        steps = first_alarm_steps(data.scores, data.starts, data.lengths, lam)
        mon = ThresholdMonitor(lam)
        for i, s in enumerate(seqs):
            v = mon.run(s)
            assert steps[i] == (0 if v.allowed else int(v.numbers["step"]))


# ------------------------------------------------------------------------------------- metrics
def test_metrics_by_hand():
    # safe: flagged, not flagged; unsafe: flagged at 1 of 4, at 3 of 3, not flagged
    alarm = np.array([2, 0, 1, 3, 0])
    lens = np.array([5, 5, 4, 3, 6])
    y = np.array([1, 1, 0, 0, 0])
    m = monitor_metrics(alarm, lens, y)
    assert m["false_alarm_rate"] == 0.5
    assert m["power"] == pytest.approx(2 / 3)
    assert m["missed_detection_rate"] == pytest.approx(1 / 3)
    assert m["detection_delay"] == pytest.approx((1 / 4 + 3 / 3) / 2)
    assert math.isnan(monitor_metrics(np.array([0]), np.array([2]), np.array([0]))["detection_delay"])


def test_sequences_subset_and_minima():
    data = Sequences.from_lists([[0.5, 0.2, 0.9], [0.7], [0.4, 0.6]], [1, 0, 1], ids=["a", "b", "c"])
    assert data.minima().tolist() == [0.2, 0.7, 0.4]
    sub = data.subset(np.array([2, 0]))
    assert sub.sequence(0).tolist() == [0.4, 0.6] and sub.sequence(1).tolist() == [0.5, 0.2, 0.9]
    assert sub.ids.tolist() == ["c", "a"] and sub.labels.tolist() == [1, 1]
    assert data.step_index().tolist() == [1, 2, 3, 1, 1, 2]
