"""The exact all-splits mean of :mod:`agentguard.bench.calibration_exact` against brute-force enumeration."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from agentguard.bench.calibration_exact import conditional_expected_risk, split_expected_risk, split_violation_probability
from agentguard.calibration.calibrate import ThresholdCalibrator, crc_max_losses
from agentguard.calibration.data import Sequences
from agentguard.calibration.metrics import monitor_metrics
from agentguard.core.errors import InputError


def _data(n: int, seed: int, ties: bool) -> Sequences:
    rng = np.random.default_rng(seed)
    scores, labels = [], []
    for i in range(n):
        length = int(rng.integers(1, 4))
        s = rng.uniform(0, 1, length)
        if ties:                      # few distinct values: many tied minima across and within classes
            s = np.round(s * 3) / 3
        scores.append(s.tolist())
        labels.append(int(rng.random() < 0.6))
    return Sequences.from_lists(scores, labels)


def _brute_force(data: Sequences, n_cal: int, risk: str, method: str, alpha: float, delta: float,
                 bound: str, violations: bool = False) -> float:
    """Mean over every split of the protocol's own test risk (calibrate, alarm, metrics), or the share
    of splits whose test risk exceeds alpha."""
    key = "false_alarm_rate" if risk == "false_alarm" else "missed_detection_rate"
    vals = []
    for cal_idx in itertools.combinations(range(data.n), n_cal):
        mask = np.zeros(data.n, bool)
        mask[list(cal_idx)] = True
        cal, test = data.subset(np.flatnonzero(mask)), data.subset(np.flatnonzero(~mask))
        c = ThresholdCalibrator(risk, method, alpha, delta, bound=bound, on_infeasible="trivial").calibrate(cal)
        r = monitor_metrics(c.alarm_steps(test), test.lengths, test.labels)[key]
        if not math.isnan(r):
            vals.append(r > alpha if violations else r)
    return float(np.mean(vals))


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("risk", ["false_alarm", "missed_detection"])
@pytest.mark.parametrize("method,bound,alphas", [("crc", "hb", (0.1, 0.2, 0.35, 0.6)),
                                                 ("ucb", "hb", (0.5, 0.7, 0.9)),
                                                 ("ucb", "binomial", (0.5, 0.7))])
def test_exact_mean_equals_enumeration_of_every_split(ties, risk, method, bound, alphas):
    data = _data(12, seed=3 if ties else 4, ties=ties)
    n_cal = 6                                   # C(12, 6) = 924 splits, all enumerated
    for a in alphas:
        want = _brute_force(data, n_cal, risk, method, a, 0.2, bound)
        got = split_expected_risk(data, risk=risk, method=method, alpha=a, delta=0.2, bound=bound,
                                  cal_frac=n_cal / 12, tol=0.0)["mean"]
        assert got == pytest.approx(want, abs=1e-12), (risk, method, a)


@pytest.mark.parametrize("risk", ["false_alarm", "missed_detection"])
@pytest.mark.parametrize("method,alphas", [("crc", (0.1, 0.25, 0.4)), ("ucb", (0.5, 0.7, 0.9))])
def test_violation_share_equals_enumeration_distinct_and_bounds_it_with_ties(risk, method, alphas):
    for ties in (False, True):
        data = _data(12, seed=3 if ties else 4, ties=ties)
        for a in alphas:
            want = _brute_force(data, 6, risk, method, a, 0.2, "hb", violations=True)
            got = split_violation_probability(data, risk=risk, method=method, alpha=a, delta=0.2,
                                              cal_frac=0.5, tol=0.0)
            assert got["exact"] is (not ties)
            if ties:
                assert got["p"] >= want - 1e-12, (risk, method, a)
            else:
                assert got["p"] == pytest.approx(want, abs=1e-12), (risk, method, a)


def test_distinct_minima_give_the_crc_value():
    z = np.random.default_rng(0).permutation(200).astype(float)
    for n_s, a in [(20, 0.1), (50, 0.3), (100, 0.05), (199, 0.2)]:
        k = crc_max_losses(n_s, a)
        assert conditional_expected_risk(z, n_s, k) == pytest.approx((k + 1) / (n_s + 1), abs=1e-12)
        assert (k + 1) / (n_s + 1) <= a


def test_ties_make_crc_conservative():
    z = np.repeat(np.arange(10.0), 20)          # 200 minima in 10 tie groups
    for n_s in (30, 80):
        k = crc_max_losses(n_s, 0.2)
        assert conditional_expected_risk(z, n_s, k) < (k + 1) / (n_s + 1)


def test_bad_input_is_named():
    data = _data(12, 0, False)
    with pytest.raises(InputError, match="cal_frac"):
        split_expected_risk(data, cal_frac=1.5)
    with pytest.raises(InputError, match="method"):
        split_expected_risk(data, method="grid")
    with pytest.raises(InputError, match="n_s"):
        conditional_expected_risk(np.arange(5.0), 5, 1)


def test_crc_exact_mean_never_exceeds_alpha_on_random_data_sets():
    """Eq. 3 for the finite protocol, on 40 random data sets (ties, class balance and sizes vary)."""
    rng = np.random.default_rng(7)
    for trial in range(40):
        n = int(rng.integers(20, 400))
        labels = (rng.random(n) < rng.uniform(0.2, 0.8)).astype(int)
        decimals = int(rng.integers(1, 4))
        scores = [np.round(rng.beta(3, 2, int(rng.integers(1, 5))), decimals).tolist() for _ in range(n)]
        data = Sequences.from_lists(scores, labels.tolist())
        for risk in ("false_alarm", "missed_detection"):
            if not (labels == (1 if risk == "false_alarm" else 0)).any():
                continue
            for a in (0.05, 0.1, 0.2, 0.3):
                got = split_expected_risk(data, risk=risk, method="crc", alpha=a, cal_frac=0.3)["mean"]
                assert got <= a + 1e-12, (trial, risk, a, got)


@pytest.mark.parametrize("name", ["math", "gsm8k", "hotpotqa"])
def test_issue4_exact_mean_false_alarm_at_most_alpha_on_the_evaluator_data(data_dir, name):
    """The must-show of issue 4, measured without split noise: over all calibration/test splits of the
    protocol (20 % calibration), the mean test false alarm (and missed detection) rate of CRC and UCB
    is at most alpha for alpha = 0.05 ... 0.3."""
    from agentguard.calibration.data import load_signals

    data = load_signals(data_dir / "evaluator" / f"{name}_w_scores_compressed.csv.gz")
    for risk in ("false_alarm", "missed_detection"):
        for method in ("crc", "ucb"):
            for a in (0.05, 0.1, 0.15, 0.2, 0.25, 0.3):
                got = split_expected_risk(data, risk=risk, method=method, alpha=a, delta=0.1, cal_frac=0.2)
                assert got["mean"] <= a, (risk, method, a, got)
                assert got["skipped"] < 1e-12
