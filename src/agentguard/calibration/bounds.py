"""Upper confidence bounds (as p-values) for a mean of 0/1 losses, and their closed-form inversion.

The UCB monitor (Eq. 5-6 of the online-safety-monitoring paper) needs, for each candidate threshold,
a valid p-value for the null hypothesis ``H0: R(lambda) > alpha`` from ``k`` losses among ``n``
calibration sequences. Two are provided:

* ``"hb"``, Hoeffding-Bentkus as in Bates et al. (2021, "Distribution-free, risk-controlling
  prediction sets", Prop. 3 / Learn-then-Test Eq. 9), with ``r = k / n``::

      p_HB = min( exp(-n h(min(r, alpha), alpha)),  e * P(Bin(n, alpha) <= ceil(n r)) )
      h(a, b) = a log(a / b) + (1 - a) log((1 - a) / (1 - b))

  (the binomial has ``n`` trials and success probability ``alpha``: the authors' notebook uses
  ``P(Bin(n, r) >= ceil(n alpha))``, with the arguments swapped, which is not the Bentkus bound).
* ``"binomial"``, the exact binomial tail ``P(Bin(n, alpha) <= k)``, valid because each 0/1 loss is
  Bernoulli; it is never larger than either term of HB, so it is the tightest valid choice here.

Both p-values are non-decreasing in ``k``, so the largest admissible loss count
``k* = max{k : p(k) <= delta}`` is found by bisection (``max_losses``) and the threshold follows by
sorting, with no grid.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

import numpy as np
from scipy.stats import binom

from ..core.errors import InputError
from .data import check_alpha

__all__ = ["BOUNDS", "binomial_pvalue", "check_draws", "exact_level", "hb_pvalue", "max_losses", "min_n_for_guarantee", "pvalue"]

BOUNDS = ("hb", "binomial")


def h1(a: np.ndarray | float, b: float) -> np.ndarray:
    """``h(a, b) = a log(a/b) + (1-a) log((1-a)/(1-b))`` (the Bernoulli KL divergence), with 0 log 0 = 0."""
    a = np.asarray(a, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = np.where(a > 0, a * np.log(np.where(a > 0, a, 1.0) / b), 0.0)
        t2 = np.where(a < 1, (1 - a) * np.log(np.where(a < 1, 1 - a, 1.0) / (1 - b)), 0.0)
    return t1 + t2


def check_draws(n: int, minimum: int = 1) -> int:
    """A number of calibration draws: an integer >= ``minimum`` (not a Boolean, not 30.5)."""
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < minimum:
        raise InputError(f"the number of calibration draws must be an integer >= {minimum}, got {n!r}")
    return int(n)


def _losses(k: np.ndarray | int, n: int) -> np.ndarray:
    """Loss counts as floats, each a whole number in 0..n (a negative count had p-value 0)."""
    a = np.asarray(k)
    if a.size and (a.dtype.kind not in "iuf"):
        raise InputError(f"loss counts must be integers, got {a.dtype} values")
    a = a.astype(float)
    if a.size and not (np.all(a >= 0) and np.all(a <= n) and np.all(a == np.floor(a))):  # NaN fails a >= 0
        raise InputError(f"loss counts must be whole numbers in 0..{n}")
    return a


def hb_pvalue(k: np.ndarray | int, n: int, alpha: float) -> np.ndarray:
    """Hoeffding-Bentkus p-value of ``H0: R > alpha`` after ``k`` losses in ``n`` draws (Bates et al. 2021).

    ``n >= 1`` draws, ``k`` whole numbers in ``0..n``, ``alpha`` in (0, 1); anything else is an InputError."""
    n = check_draws(n)
    alpha = check_alpha(alpha, "alpha")
    k = _losses(k, n)
    r = k / n
    hoeffding = np.exp(-n * h1(np.minimum(r, alpha), alpha))
    bentkus = math.e * binom.cdf(np.ceil(n * r - 1e-9), n, alpha)
    return np.minimum(hoeffding, bentkus)


def binomial_pvalue(k: np.ndarray | int, n: int, alpha: float) -> np.ndarray:
    """Exact p-value ``P(Bin(n, alpha) <= k)`` of ``H0: R > alpha`` for 0/1 losses (arguments as
    :func:`hb_pvalue`)."""
    n = check_draws(n)
    return binom.cdf(_losses(k, n), n, check_alpha(alpha, "alpha"))


def pvalue(k: np.ndarray | int, n: int, alpha: float, bound: str = "hb") -> np.ndarray:
    if bound == "hb":
        return hb_pvalue(k, n, alpha)
    if bound == "binomial":
        return binomial_pvalue(k, n, alpha)
    raise InputError(f"unknown bound {bound!r}; expected one of {', '.join(BOUNDS)}")


def exact_level(alpha: float) -> Fraction:
    """``alpha`` as the exact rational of the decimal it prints as (``repr``): 0.3 is 3/10, not the
    binary float just below it, and 0.3 - 1e-13 is 2999999999999/10^13, not 3/10. The CRC
    inequality ``(k + 1)/(n + 1) <= alpha`` is decided on it exactly."""
    return Fraction(repr(float(alpha)))


def max_losses(n: int, alpha: float, delta: float, bound: str = "hb") -> int:
    """``k* = max{k in 0..n : p(k) <= delta}``, or -1 when even ``k = 0`` is not significant.

    Exact: bisection on the non-decreasing p-value (about ``log2 n`` evaluations); memoised, since
    it depends only on ``(n, alpha, delta, bound)``. ``n = 0`` (no calibration data) gives -1;
    ``alpha``/``delta`` outside (0, 1) or a non-integer ``n`` is an InputError.
    """
    n = check_draws(n, minimum=0)
    alpha, delta = check_alpha(alpha, "alpha"), check_alpha(delta, "delta")
    if bound not in BOUNDS:
        raise InputError(f"unknown bound {bound!r}; expected one of {', '.join(BOUNDS)}")
    return _max_losses(n, alpha, delta, bound)


@lru_cache(maxsize=4096)
def _max_losses(n: int, alpha: float, delta: float, bound: str) -> int:
    """:func:`max_losses` on arguments already checked (memoised on the plain Python values)."""
    if n == 0 or float(pvalue(0, n, alpha, bound)) > delta:
        return -1
    lo, hi = 0, n  # invariant: p(lo) <= delta; answer in [lo, hi]
    if float(pvalue(n, n, alpha, bound)) <= delta:
        return n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if float(pvalue(mid, n, alpha, bound)) <= delta:
            lo = mid
        else:
            hi = mid
    return lo


def min_n_for_guarantee(alpha: float, delta: float | None, method: str, bound: str = "hb") -> int:
    """The fewest calibration sequences (of the relevant class) for which any threshold is certified.

    CRC: ``1/(n+1) <= alpha``. UCB: ``p(0) = (1 - alpha)^n <= delta`` (the same for HB and binomial),
    solved in closed form and then checked against the p-value :func:`max_losses` uses, so the count
    named is exactly the first ``n`` it accepts (alpha = 0.999, delta = 0.001: the closed form says 1,
    but ``(1 - 0.999)`` rounds above 0.001 and ``n = 1`` is refused).
    """
    alpha = check_alpha(alpha, "alpha")
    if method == "crc":
        return max(1, math.ceil(1 / exact_level(alpha) - 1))  # 1/(n+1) <= alpha, exactly as crc_max_losses
    delta = check_alpha(delta, "delta")  # type: ignore[arg-type]  # None refused
    n = max(1, math.ceil(math.log(delta) / math.log(1.0 - alpha) - 1e-12))
    while float(pvalue(0, n, alpha, bound)) > delta:
        n += 1
    while n > 1 and float(pvalue(0, n - 1, alpha, bound)) <= delta:
        n -= 1
    return n


max_losses.cache_clear = _max_losses.cache_clear  # type: ignore[attr-defined]  # benchmarks time the bisection
