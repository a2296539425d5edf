"""Calibration data a user never meant (session 21 red team): each is refused with one line, or the
calibrated threshold keeps its promise (checked against the exact risk of a discrete distribution).

Holes found and fixed:
* ``Sequences.from_traces`` read a label with ``bool()``: ``{"unsafe": null}`` and ``{"unsafe": []}``
  made the run *safe*, ``"false"``/``"0"``/``"no"`` made it unsafe; now only a Boolean (or 0/1) is
  a label. Its signals were read with ``float()``: text the run-time monitor refuses was calibrated
  on, and ``None`` or an object crashed with TypeError; now the monitor's own reader.
* ``Sequences.from_lists`` and ``calibrate_threshold`` read text scores ("0.5") and Booleans as
  numbers and crashed (ValueError/TypeError) on other text or complex numbers.
* ``load_signals`` read the first of two ``solved`` columns and merged the rows without an id into
  one sequence ``nan``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.calibration.calibrate import ThresholdCalibrator, calibrate_threshold
from agentguard.calibration.data import Sequences, load_signals
from agentguard.core.errors import GuaranteeError, InputError
from agentguard.core.types import Step, Trace


def _trace(label: object, scores: list, rid: str = "r") -> Trace:
    return Trace([Step(state=None, signals={"score": s}) for s in scores], {"unsafe": label}, rid)


@pytest.mark.parametrize("label", [None, [], {}, "false", "true", "0", "1", "no", 2, -1, 0.5, float("nan"), 1.0])
def test_a_label_that_is_not_a_boolean_is_refused(label: object) -> None:
    with pytest.raises(InputError, match="not true/false"):
        Sequences.from_traces([_trace(label, [0.5])])


@pytest.mark.parametrize("label,safe", [(True, 0), (False, 1), (np.bool_(True), 0), (1, 0), (0, 1)])
def test_boolean_labels_are_read(label: object, safe: int) -> None:
    assert Sequences.from_traces([_trace(label, [0.5])]).labels.tolist() == [safe]


@pytest.mark.parametrize("score", [None, "0.5", "nan", "x", True, {"a": 1}, [0.5], float("nan"), math.inf])
def test_a_signal_the_monitor_refuses_is_refused_at_calibration(score: object) -> None:
    with pytest.raises(InputError, match="run 'r' step 1"):
        Sequences.from_traces([_trace(False, [0.5, score])])


@pytest.mark.parametrize("scores", [[["0.5"]], [[True]], [["x"]], [[None]], [[1j]], [[0.1, [0.2, 0.3]]]])
def test_lists_of_non_numbers_are_one_line_errors(scores: list) -> None:
    with pytest.raises(InputError, match="must be numbers"):
        ThresholdCalibrator(alpha=0.5).calibrate(scores, [1] * len(scores))


@pytest.mark.parametrize("minima", [["0.1", "0.2"], [True, False], [1j, 2]])
def test_minima_must_be_numbers(minima: list) -> None:
    with pytest.raises(InputError, match="must be numbers"):
        calibrate_threshold(minima, alpha=0.5)


H = "uq_problem_idx,num_steps,judge_probability,solved\n"


def test_a_column_given_twice_is_refused(tmp_path) -> None:
    p = tmp_path / "s.csv"
    p.write_text("uq_problem_idx,num_steps,judge_probability,solved,solved\n1,1,0.5,1,0\n")
    with pytest.raises(InputError, match="solved twice"):
        load_signals(p)


def test_a_row_without_an_id_is_refused(tmp_path) -> None:
    p = tmp_path / "s.csv"
    p.write_text(H + "1,1,0.5,1\n,1,0.4,1\n")
    with pytest.raises(InputError, match="line 3 has no uq_problem_idx"):
        load_signals(p)


@pytest.mark.parametrize("alpha", [0, 1, -0.1, 1.5, float("nan"), math.inf, True, None])
def test_alpha_outside_the_open_unit_interval_is_refused(alpha: object) -> None:
    with pytest.raises(InputError):
        calibrate_threshold([0.1, 0.2, 0.3], alpha=alpha)  # type: ignore[arg-type]


@pytest.mark.parametrize("n", [0, 1, 2])
def test_tiny_calibration_sets_refuse_or_certify(n: int) -> None:
    """CRC certifies k = floor(alpha (n+1)) - 1 >= 0 losses, else refuses with the size needed."""
    for alpha in (0.3, 0.5, 0.9, 1e-12):
        if math.floor(alpha * (n + 1)) - 1 < 0:
            with pytest.raises(GuaranteeError, match="need at least"):
                calibrate_threshold([0.5] * n, alpha=alpha)
        else:
            assert calibrate_threshold([0.5] * n, alpha=alpha).max_losses >= 0


def _true_risk(vals: np.ndarray, probs: np.ndarray, thr: float, risk: str) -> float:
    return float(probs[vals < thr].sum() if risk == "false_alarm" else probs[vals >= thr].sum())


@settings(max_examples=25, deadline=None)
@given(support=st.lists(st.sampled_from([-math.inf, -1.0, 0.0, 0.25, 0.5, 1.0]), min_size=1, max_size=4, unique=True),
       weights=st.lists(st.integers(1, 5), min_size=4, max_size=4), n=st.integers(1, 12),
       risk=st.sampled_from(["false_alarm", "missed_detection"]),
       rule=st.sampled_from([("crc", 0.3, None), ("crc", 0.6, None), ("ucb", 0.4, 0.2), ("ucb", 0.7, 0.3)]),
       seed=st.integers(0, 2**31))
def test_thresholds_on_tied_and_infinite_scores_keep_the_promise(support, weights, n, risk, rule, seed) -> None:
    """Oracle: the exact risk of the threshold under the discrete distribution the minima are drawn
    from (ties everywhere, -inf included), over 400 calibration draws; CRC: mean risk <= alpha
    (refused draws count as risk 0, the monitor is not deployed), UCB: P(risk > alpha) <= delta
    (plus three standard errors of the simulation)."""
    method, alpha, delta = rule
    vals = np.array(sorted(support))
    probs = np.array(weights[: len(vals)], float)
    probs /= probs.sum()
    rng = np.random.default_rng(seed)
    risks = []
    for _ in range(400):
        m = rng.choice(vals, size=n, p=probs)
        try:
            c = calibrate_threshold(m, risk=risk, method=method, alpha=alpha, delta=delta)
        except GuaranteeError:
            risks.append(0.0)
            continue
        risks.append(_true_risk(vals, probs, c.threshold, risk))
    r = np.array(risks)
    if method == "crc":
        assert r.mean() <= alpha + 3 * r.std() / math.sqrt(r.size) + 1e-12
    else:
        assert (r > alpha).mean() <= delta + 3 * math.sqrt(delta * (1 - delta) / r.size)


# --- session 26 (s26-mon): the arrays of a Sequences built directly ---------------------------------

def _flat(labels: object) -> Sequences:
    n = 40
    return Sequences(np.arange(n, dtype=float) / n, np.arange(n), np.ones(n, dtype=np.int64), labels)


@pytest.mark.parametrize("labels", [np.array([2] * 20 + [1] * 20), np.array([0.5] * 20 + [1.0] * 20),
                                    np.array([-1] * 20 + [1] * 20), np.array(["1"] * 40),
                                    np.array([None] * 20 + [1] * 20, dtype=object)])
def test_a_label_neither_safe_nor_unsafe_is_refused_by_the_constructor(labels):
    # before: Sequences(...) kept a label 2 (or 0.5, -1) and the calibrator, selecting labels == 1
    # (false alarm) or == 0 (missed detection), silently calibrated on the other 20 sequences only;
    # text "1" labels dropped every sequence from both classes
    with pytest.raises(InputError, match="labels"):
        _flat(labels)


def test_arrays_given_as_lists_or_booleans_are_read_and_other_types_refused():
    d = _flat([True] * 40)  # lists and Boolean labels are read, as from_lists reads them
    assert d.labels.dtype == np.int8 and d.labels.tolist() == [1] * 40
    cal = ThresholdCalibrator(alpha=0.2).calibrate(d)
    assert cal.n_calibration_ == 40
    with pytest.raises(InputError, match="scores must be numbers"):
        Sequences(np.array(["0.1"] * 3), np.arange(3), np.ones(3, dtype=np.int64), np.ones(3, dtype=np.int8))
    with pytest.raises(InputError, match="starts must be integers"):
        Sequences(np.zeros(3), np.arange(3) + 0.5, np.ones(3, dtype=np.int64), np.ones(3, dtype=np.int8))
    with pytest.raises(InputError, match="1-d"):
        Sequences(np.zeros((3, 1)), np.arange(3), np.ones(3, dtype=np.int64), np.ones(3, dtype=np.int8))


def test_minima_of_two_dimensions_are_refused_not_flattened_into_a_larger_n():
    # before: a (30, 2) array counted as n = 60 sequences (k = 5 losses admitted at alpha = 0.1)
    with pytest.raises(InputError, match="1-d"):
        calibrate_threshold(np.zeros((30, 2)), alpha=0.1)
