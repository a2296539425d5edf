"""A DTMC built in code (not read from a file, which validates) that is not a DTMC (session 26 red team).

Before, the guard, :func:`safety_values` and :func:`checker.check` solved the reachability system on
whatever matrix they got: a row ``[1.2, 0.3, -0.5]`` (sums to 1, a 0.5 step into ``unsafe`` written
negative) read P_safe = 1 and allowed; a row summing to 1.9 read P_safe = 0.9; a NaN entry answered;
three states named ``["a"]`` left two of them to the unseen policy; a label given as indices ``[0, 2, 5]``
was cast to ``[F, T, T]``. Now each is a ModelError at construction (:meth:`DTMC.validate`).
"""

from __future__ import annotations

import numpy as np
import pytest

from agentguard.core.errors import ModelError
from agentguard.predictive import DTMC, ProactiveGuard
from agentguard.predictive.checker import check
from agentguard.predictive.guard import reach_probability, safety_values

NAMES = ["00", "01", "11"]
UNSAFE = {"unsafe": [False, False, True]}


@pytest.mark.parametrize("row", [[1.2, 0.3, -0.5], [0.9, 0.9, 0.1], [0.5, 0.0, 0.1], [0.5, np.nan, 0.5],
                                 [0.5, np.inf, 0.5]])
def test_a_row_that_is_not_a_distribution_is_refused_by_every_entry_point(row):
    P = np.array([row, [0, 1, 0], [0, 0, 1]], dtype=float)
    model = DTMC(P, labels=UNSAFE, state_names=NAMES)
    for f in (lambda: ProactiveGuard(model, threshold=0.5), lambda: safety_values(model),
              lambda: reach_probability(model, np.array([False, False, True])),
              lambda: check(model, 'P=? [ F "unsafe" ]'),
              lambda: ProactiveGuard(model, threshold=0.5, values=[0.0, 1.0, 0.0])):  # values given: still checked
        with pytest.raises(ModelError):
            f()


def test_state_names_and_labels_must_describe_every_state():
    P = np.eye(3)
    with pytest.raises(ModelError, match="state names"):
        ProactiveGuard(DTMC(P, labels=UNSAFE, state_names=["a"]), threshold=0.5)
    with pytest.raises(ModelError, match="Boolean vector"):
        DTMC(P, labels={"unsafe": [0, 2, 5]}, state_names=NAMES)
    with pytest.raises(ModelError, match="Boolean vector"):
        DTMC(P, labels={"unsafe": ["yes", "no", "no"]}, state_names=NAMES)
    m = DTMC(P, labels={"unsafe": [0, 0, 1]}, state_names=NAMES)  # 0/1 is a Boolean vector
    assert m.labels["unsafe"].tolist() == [False, False, True]


def test_a_valid_model_built_in_code_still_gives_the_exact_values():
    # 0 -> 1 (safe, absorbing) w.p. 3/4, 0 -> 2 (unsafe) w.p. 1/4: P_safe = (3/4, 1, 0)
    P = np.array([[0, 0.75, 0.25], [0, 1, 0], [0, 0, 1]])
    g = ProactiveGuard(DTMC(P, labels=UNSAFE, state_names=NAMES), threshold=0.8)
    assert g.values_.tolist() == [0.75, 1.0, 0.0]
