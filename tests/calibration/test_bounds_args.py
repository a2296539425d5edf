"""The public bounds of :mod:`agentguard.calibration.bounds` on arguments outside their domain (session
26 red team): every one is an InputError at the function itself, never a permissive count.

Before: ``max_losses(30, 0.1, delta=1.5)`` returned 30 (every loss admitted), ``crc_max_losses(9,
1.5)`` returned 9, ``hb_pvalue(0, 0, 0.1)`` was NaN, ``max_losses(30.5, ...)`` answered, a negative
loss count had p-value 0 and ``calibrate_threshold(alpha="0.1")`` read the text.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from agentguard.calibration.bounds import binomial_pvalue, hb_pvalue, max_losses, min_n_for_guarantee, pvalue
from agentguard.calibration.calibrate import calibrate_threshold, crc_max_losses
from agentguard.core.errors import InputError

BAD_LEVELS = [0.0, 1.0, 1.5, -0.1, math.nan, math.inf, True, "0.1", None, np.array([0.1])]


@pytest.mark.parametrize("level", BAD_LEVELS)
def test_levels_outside_the_open_unit_interval_are_refused_everywhere(level):
    with pytest.raises((InputError, TypeError)):  # TypeError: an array is unhashable for the memo
        max_losses(30, 0.1, level)
    for f in (lambda: max_losses(30, level, 0.1), lambda: crc_max_losses(9, level),
              lambda: hb_pvalue(0, 30, level), lambda: binomial_pvalue(0, 30, level),
              lambda: min_n_for_guarantee(level, 0.1, "ucb"), lambda: min_n_for_guarantee(0.1, level, "ucb"),
              lambda: min_n_for_guarantee(level, None, "crc"), lambda: calibrate_threshold(np.zeros(50), alpha=level)):
        with pytest.raises(InputError):
            f()


@pytest.mark.parametrize("n", [30.5, True, -1, "30"])
def test_a_count_of_draws_that_is_not_a_whole_number_is_refused(n):
    for f in (lambda: max_losses(n, 0.1, 0.1), lambda: crc_max_losses(n, 0.1), lambda: hb_pvalue(0, n, 0.1)):
        with pytest.raises(InputError):
            f()


def test_no_draws_certify_nothing_and_loss_counts_must_lie_in_0_to_n():
    assert max_losses(0, 0.1, 0.1) == -1 and crc_max_losses(0, 0.5) == -1
    with pytest.raises(InputError):
        hb_pvalue(0, 0, 0.1)  # was NaN
    for k in (-1, 31, 1.5, math.nan, np.array([0, -2])):
        with pytest.raises(InputError):
            pvalue(k, 30, 0.1, "binomial")
        with pytest.raises(InputError):
            hb_pvalue(k, 30, 0.1)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 400), st.sampled_from([0.01, 0.05, 0.1, 0.2, 0.3, 0.5]),
       st.sampled_from([0.01, 0.05, 0.1, 0.2]))
def test_max_losses_binomial_is_the_exact_binomial_tail_inverse(n, alpha, delta):
    # oracle: scipy's binomial CDF scanned over every k (UCB of Eq. 5-6 with the exact tail)
    ks = np.arange(n + 1)
    ok = np.flatnonzero(binom.cdf(ks, n, alpha) <= delta)
    assert max_losses(n, alpha, delta, "binomial") == (int(ok.max()) if ok.size else -1)
    # HB is never below the exact tail, so it never admits more losses
    assert max_losses(n, alpha, delta, "hb") <= max_losses(n, alpha, delta, "binomial")
