"""The native checker against exact rational elimination on random chains with the structures that
break solvers: absorbing states, unreachable states, self-loops, and near-absorbing loops that leave
with probability 1e-3 .. 1e-12 (session 21 red team).

Hole found and fixed: with ``P[i, i] = 1 - 1e-12`` the solve divided by the float ``1 - P[i, i]``
(0.99998e-12 after cancellation) and ``P=? [F "bad"]`` came out 0.3750083 for the exact 0.375; the
checker now removes self-loops of states that can leave (the jump chain,
``reachability._without_self_loops``), so the leaving mass is a sum, never a difference."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.predictive.checker import check
from agentguard.predictive.dtmc import DTMC


def exact_reach(rows: dict[int, dict[int, Fraction]], target: list[bool]) -> list[Fraction]:
    """P[F target] by graph Prob0, then Gauss-Jordan elimination in Fractions (the oracle)."""
    n = len(target)
    can = {i for i in range(n) if target[i]}
    grew = True
    while grew:
        grew = False
        for i in range(n):
            if i not in can and any(j in can and p > 0 for j, p in rows[i].items()):
                can.add(i)
                grew = True
    unk = [i for i in range(n) if i in can and not target[i]]
    at = {s: k for k, s in enumerate(unk)}
    m = len(unk)
    A = [[Fraction(0)] * (m + 1) for _ in range(m)]
    for s in unk:
        r = at[s]
        A[r][r] += 1
        for j, p in rows[s].items():
            if target[j]:
                A[r][m] += p
            elif j in at:
                A[r][at[j]] -= p
    for c in range(m):
        piv = next(r for r in range(c, m) if A[r][c] != 0)
        A[c], A[piv] = A[piv], A[c]
        for r in range(m):
            if r != c and A[r][c] != 0:
                f = A[r][c] / A[c][c]
                A[r] = [a - f * b for a, b in zip(A[r], A[c])]
    x = [Fraction(int(t)) for t in target]
    for s in unk:
        x[s] = A[at[s]][m] / A[at[s]][at[s]]
    return x


@st.composite
def chains(draw: st.DrawFn) -> tuple[dict[int, dict[int, Fraction]], list[bool]]:
    n = draw(st.integers(1, 8))
    rows: dict[int, dict[int, Fraction]] = {}
    for i in range(n):
        kind = draw(st.sampled_from(["absorbing", "near", "random", "random", "loop"]))
        if kind == "absorbing":
            rows[i] = {i: Fraction(1)}
        elif kind == "near":
            eps = Fraction(1, 10 ** draw(st.integers(3, 12)))
            j = draw(st.integers(0, n - 1))
            rows[i] = {i: Fraction(1)} if j == i else {i: 1 - eps, j: eps}
        else:
            succ = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=min(n, 3), unique=True))
            if kind == "loop" and i not in succ:
                succ.append(i)
            w = [draw(st.integers(1, 5)) for _ in succ]
            rows[i] = {j: Fraction(x, sum(w)) for j, x in zip(succ, w)}
    target = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return rows, target


def _model(rows: dict[int, dict[int, Fraction]], target: list[bool]) -> DTMC:
    n = len(target)
    r, c, v = zip(*[(i, j, float(p)) for i, row in rows.items() for j, p in row.items()])
    P = sp.csr_matrix((v, (r, c)), shape=(n, n))
    start = n - 1  # often unreachable from the others: every state is checked anyway
    return DTMC(P, start, {"bad": np.array(target)}, {"s": np.arange(n)})


@settings(max_examples=300, deadline=None)
@given(chains())
def test_reachability_matches_exact_elimination(chain) -> None:
    rows, target = chain
    m = _model(rows, target)
    want = np.array([float(x) for x in exact_reach(rows, target)])
    np.testing.assert_allclose(check(m, 'P=? [F "bad"]').values, want, atol=1e-9, rtol=0)
    np.testing.assert_allclose(check(m, 'P=? [G !"bad"]').values, 1 - want, atol=1e-9, rtol=0)


def test_the_near_absorbing_loop_found_in_session_21() -> None:
    rows = {0: {3: Fraction(1)}, 1: {0: Fraction(1)}, 2: {2: 1 - Fraction(1, 10**12), 5: Fraction(1, 10**12)},
            3: {3: Fraction(1)}, 4: {6: Fraction(1)}, 5: {7: Fraction(5, 8), 4: Fraction(3, 8)},
            6: {4: Fraction(3, 8), 6: Fraction(5, 8)}, 7: {7: Fraction(1)}}
    target = [True, False, False, False, False, False, True, False]
    got = check(_model(rows, target), 'P=? [F "bad"]').values
    assert abs(got[2] - 0.375) < 1e-12  # was 0.3750083
