"""The e-valuator baselines of Appendix C (calibration.evaluator)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agentguard.calibration import EValuator, Sequences
from agentguard.calibration.evaluator import fit_logistic, fit_step_models, pac_threshold
from agentguard.core import Decision, GuaranteeError, InputError, LifecycleError


def _synthetic(n=600, seed=0) -> Sequences:
    rng = np.random.default_rng(seed)
    labels = (rng.uniform(size=n) < 0.55).astype(int)
    lens = rng.integers(1, 9, n)
    seqs = [np.clip(rng.normal(0.7 if y else 0.45, 0.15, L), 0, 1) for y, L in zip(labels, lens)]
    return Sequences.from_lists(seqs, labels)


def test_fit_logistic_matches_sklearn():
    sk = pytest.importorskip("sklearn.linear_model")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = (X @ [1.0, -2.0, 0.5] + rng.normal(size=300) > 0).astype(float)
    w, b = fit_logistic(X, y)
    ref = sk.LogisticRegression(max_iter=1000, tol=1e-10).fit(X, y)
    np.testing.assert_allclose(w, ref.coef_[0], atol=1e-4)
    assert b == pytest.approx(ref.intercept_[0], abs=1e-4)


def test_e_values_follow_the_bayes_rule_formula():
    data = _synthetic()
    models = fit_step_models(data)
    ev = models.e_values(data)
    # recompute M_t at step 2 by hand for the first sequence that reaches step 2
    i = int(np.flatnonzero(data.lengths >= 2)[0])
    x = data.sequence(i)[:2]
    z = ((x - models.mu[2]) / models.sd[2]) @ models.w[2] + models.b[2]
    p1 = 1 / (1 + math.exp(-z))
    n1 = int((data.labels == 1).sum())
    expected = ((1 - p1) / p1) * (n1 / (data.n - n1))
    assert ev[data.starts[i] + 1] == pytest.approx(expected, rel=1e-9)


def test_steps_without_a_model_carry_the_last_e_value():
    # one long unsafe sequence: steps 9.. have too few sequences -> no model -> M_t is carried
    data = _synthetic()
    models = fit_step_models(data, min_per_class=5)
    T = int(data.lengths.max())
    long = Sequences.from_lists([np.full(T + 5, 0.5)], [0])
    ev = models.e_values(long)
    last = max(models.steps)
    assert np.all(ev[last - 1:] == ev[last - 1])


@pytest.mark.parametrize("variant", ["anytime", "pac"])
def test_streaming_e_valuator_equals_vectorised(variant):
    data = _synthetic()
    cal, test = data.split(300, np.random.default_rng(1))
    e = EValuator(variant, alpha=0.2, delta=0.1).calibrate(cal)
    steps = e.alarm_steps(test)
    mon = e.monitor()
    for i in range(test.n):
        mon.reset()
        fired = 0
        for s in test.sequence(i):
            v = mon.update(s)
            if v.decision is not Decision.ALLOW:
                fired = int(v.numbers["step"])
                break
        assert fired == steps[i]
    assert steps.any()
    if variant == "anytime":
        assert e.threshold_ == pytest.approx(5.0)


def test_e_valuator_lifecycle_and_errors():
    with pytest.raises(LifecycleError):
        EValuator("anytime").monitor()
    with pytest.raises(InputError):
        EValuator("bayes")
    few = Sequences.from_lists([[0.9]] * 3 + [[0.1]] * 3, [1, 1, 1, 0, 0, 0])
    with pytest.raises(GuaranteeError, match="at least 5"):
        EValuator("anytime").calibrate(few)


def test_pac_threshold_is_the_e_valuator_order_statistic():
    # the e-valuator code's loop: first k with binom.sf(k-1, n, 1-alpha) <= delta -> sorted[k-1]
    from scipy.stats import binom
    rng = np.random.default_rng(3)
    for n in (30, 100, 257):
        x = rng.exponential(size=n)
        xs = np.sort(x)
        ref = math.inf
        for k in range(1, n + 1):
            if binom.sf(k - 1, n, 0.9) <= 0.1:
                ref = xs[k - 1]
                break
        assert pac_threshold(x, 0.1, 0.1) == ref
    assert pac_threshold(np.ones(10), 0.1, 0.1) == math.inf   # too few: (0.9)^10 > 0.1


def test_pac_too_few_held_out_safe_sequences():
    data = _synthetic(n=40, seed=4)
    with pytest.raises(GuaranteeError, match="held-out safe"):
        EValuator("pac", alpha=0.05, delta=0.1).calibrate(data)
    e = EValuator("pac", alpha=0.05, delta=0.1, on_infeasible="trivial").calibrate(data)
    assert e.trivial_ and e.threshold_ == math.inf and not e.alarm_steps(data).any()


# --- red team: a score the e-value model cannot turn into a number ------------------------------------
def _models():
    from agentguard.calibration.evaluator import StepModels

    m = StepModels()
    m.mu = {1: np.zeros(1), 2: np.zeros(2)}
    m.sd = {1: np.ones(1), 2: np.ones(2)}
    m.w = {1: np.array([0.0]), 2: np.array([1.0, -1.0])}  # opposite weights: -inf - (-inf) is NaN
    m.b = {1: 0.0, 2: 0.0}
    return m


@pytest.mark.parametrize("scores", [[-math.inf], [0.5, -math.inf], [-math.inf, -math.inf]])
def test_an_undefined_e_value_alarms_instead_of_allowing(scores):
    """Attack: a -inf score (a number the monitor reads). Before: log M_t was NaN (0 * inf at step 1,
    inf - inf at step 2; NaN > threshold is False, so the step and every later one were ALLOWed) or
    -CLIP ("certainly safe": -inf times a negative weight). Now: the alarm at that step, whatever the
    threshold (a +inf threshold included)."""
    from agentguard.calibration import EValuatorMonitor
    from agentguard.core import Context

    for thr in (10.0, math.inf):
        mon = EValuatorMonitor(_models(), thr)
        verdicts = [mon.check(Context(run_id="r"), s) for s in [*scores, 0.5]]
        first = scores.index(-math.inf)
        assert [v.blocks for v in verdicts[:first]] == [False] * first, thr
        assert verdicts[first].blocks and verdicts[-1].blocks and "not finite" in verdicts[first].reason


def test_a_model_that_gives_nan_alarms():
    """A step model with a NaN parameter (a degenerate fit) gives log M_t = NaN on any finite score:
    the alarm, not an ALLOW (NaN > threshold is False)."""
    from agentguard.calibration import EValuatorMonitor
    from agentguard.core import Context

    m = _models()
    m.w[1] = np.array([math.nan])
    v = EValuatorMonitor(m, 10.0).check(Context(run_id="r"), 0.5)
    assert v.blocks and "undefined" in v.reason


def test_pac_evaluator_on_one_sequence_says_why_it_cannot_split() -> None:
    """Session 21: one calibration sequence left the calibration half empty, and the error was the
    misleading 'no sequences given' (from an empty subset)."""
    one = Sequences.from_lists([[0.5, 0.4]], [1])
    with pytest.raises(InputError, match="splits its calibration data in two"):
        EValuator("pac", 0.5, 0.1).calibrate(one)
