"""The native model checker against exact rational arithmetic and brute-force path enumeration."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

from agentguard.core.errors import InputError
from agentguard.predictive import checker as C
from agentguard.predictive.dtmc import DTMC


def random_chain(n: int, seed: int, k: int = 3, absorbing: int = 2):
    """Random DTMC with exact rational rows (k successors, small denominators) and absorbing states."""
    rng = np.random.default_rng(seed)
    rows: list[dict[int, Fraction]] = []
    for i in range(n):
        if i < absorbing:
            rows.append({i: Fraction(1)})
            continue
        succ = rng.choice(n, size=min(k, n), replace=False)
        w = rng.integers(1, 6, size=succ.size)
        rows.append({int(j): Fraction(int(x), int(w.sum())) for j, x in zip(succ, w)})
    P = sp.lil_matrix((n, n))
    for i, r in enumerate(rows):
        for j, p in r.items():
            P[i, j] = float(p)
    return P.tocsr(), rows


def exact_until(rows, phi1, phi2):
    """P[phi1 U phi2] by exact Gaussian elimination over Fractions (after the same Prob0 graph step,
    computed here by a plain fixpoint, independent of the csgraph code)."""
    n = len(rows)
    can = set(np.flatnonzero(phi2).tolist())
    changed = True
    while changed:
        changed = False
        for i in range(n):
            if i not in can and phi1[i] and any(j in can for j in rows[i]):
                can.add(i)
                changed = True
    unk = [i for i in range(n) if i in can and not phi2[i]]
    pos = {s: k for k, s in enumerate(unk)}
    m = len(unk)
    A = [[Fraction(0)] * (m + 1) for _ in range(m)]
    for r, i in enumerate(unk):
        A[r][r] += 1
        for j, p in rows[i].items():
            if phi2[j]:
                A[r][m] += p
            elif j in pos:
                A[r][pos[j]] -= p
    for c in range(m):  # Gauss-Jordan, exact
        piv = next(r for r in range(c, m) if A[r][c] != 0)
        A[c], A[piv] = A[piv], A[c]
        inv = 1 / A[c][c]
        A[c] = [x * inv for x in A[c]]
        for r in range(m):
            if r != c and A[r][c] != 0:
                f = A[r][c]
                A[r] = [x - f * y for x, y in zip(A[r], A[c])]
    x = [Fraction(int(bool(phi2[i]))) for i in range(n)]
    for i in unk:
        x[i] = A[pos[i]][m]
    return x


def brute_bounded(rows, phi1, phi2, k):
    """P[phi1 U<=k phi2] by enumerating every path of length k (exact Fractions)."""
    n = len(rows)
    out = []
    for s in range(n):
        total = Fraction(0)
        frontier = [(s, Fraction(1))]
        for step in range(k + 1):
            nxt = []
            for st, pr in frontier:
                if phi2[st]:
                    total += pr
                elif phi1[st] and step < k:
                    nxt.extend((j, pr * p) for j, p in rows[st].items())
            frontier = nxt
        out.append(total)
    return out


def test_gamblers_ruin_closed_form():
    """Fair-coin random walk on 0..N absorbed at 0 and N: P[F s=N] from i is exactly i/N."""
    N = 10
    P = sp.lil_matrix((N + 1, N + 1))
    P[0, 0] = P[N, N] = 1
    for i in range(1, N):
        P[i, i - 1] = P[i, i + 1] = 0.5
    target = np.zeros(N + 1, bool)
    target[N] = True
    x = C.reach(P.tocsr(), target)
    np.testing.assert_allclose(x, np.arange(N + 1) / N, atol=1e-12)
    # biased coin p=0.6: ((q/p)^i - 1) / ((q/p)^N - 1)
    for i in range(1, N):
        P[i, i - 1], P[i, i + 1] = 0.4, 0.6
    r = 0.4 / 0.6
    expected = (r ** np.arange(N + 1) - 1) / (r ** N - 1)
    np.testing.assert_allclose(C.reach(P.tocsr(), target), expected, atol=1e-12)


@pytest.mark.parametrize("seed", range(25))
def test_until_matches_exact_fractions(seed):
    rng = np.random.default_rng(1000 + seed)
    n = int(rng.integers(3, 9))
    P, rows = random_chain(n, seed, k=int(rng.integers(1, 4)), absorbing=int(rng.integers(0, 3)))
    phi2 = rng.random(n) < 0.25
    phi1 = rng.random(n) < 0.8
    ex = exact_until(rows, phi1, phi2)
    got = C.until(P, phi1, phi2)
    assert np.max(np.abs(got - np.array([float(v) for v in ex]))) < 1e-12
    # the graph precomputation is exact: Prob0/Prob1 sets coincide with the exact zeros/ones
    assert np.array_equal(C.prob0(P, phi1, phi2), np.array([v == 0 for v in ex]))
    assert np.array_equal(C.prob1(P, phi1, phi2), np.array([v == 1 for v in ex]))
    # reach and globally
    ex_f = exact_until(rows, np.ones(n, bool), phi2)
    np.testing.assert_allclose(C.reach(P, phi2), [float(v) for v in ex_f], atol=1e-12)
    np.testing.assert_allclose(C.globally(P, ~phi2), [1 - float(v) for v in ex_f], atol=1e-12)


@pytest.mark.parametrize("seed", range(10))
def test_bounded_until_matches_path_enumeration(seed):
    rng = np.random.default_rng(seed)
    n = 5
    P, rows = random_chain(n, 50 + seed, k=3, absorbing=1)
    phi1 = rng.random(n) < 0.7
    phi2 = rng.random(n) < 0.3
    for k in range(6):
        ex = brute_bounded(rows, phi1, phi2, k)
        got = C.bounded_until(P, phi1, phi2, k)
        assert np.max(np.abs(got - np.array([float(v) for v in ex]))) < 1e-12
    ex = brute_bounded(rows, np.ones(n, bool), phi2, 4)
    np.testing.assert_allclose(C.bounded_until(P, None, phi2, 4), [float(v) for v in ex], atol=1e-12)


def test_bounded_converges_to_unbounded():
    P, _ = random_chain(8, 7, k=3, absorbing=2)
    t = np.zeros(8, bool)
    t[0] = True
    np.testing.assert_allclose(C.bounded_until(P, None, t, 3000), C.reach(P, t), atol=1e-9)


def test_direct_and_iterative_agree_on_large_random_chain():
    rng = np.random.default_rng(3)
    n = 1500
    cols = rng.integers(0, n, size=(n, 4))
    vals = rng.random((n, 4))
    vals /= vals.sum(1, keepdims=True)
    P = sp.csr_matrix((vals.ravel(), (np.repeat(np.arange(n), 4), cols.ravel())), shape=(n, n))
    P = P.tolil()
    P[:60] = 0
    for i in range(60):
        P[i, i] = 1
    P = P.tocsr()
    t = np.zeros(n, bool)
    t[:30] = True
    a = C.reach(P, t, method="direct")
    b = C.reach(P, t, method="iterative")
    assert C.last_solve_info().method in ("bicgstab", "gmres", "splu")
    assert C.error_bound(P, None, t, b) < 1e-8
    assert np.max(np.abs(a - b)) < 1e-9
    M = sp.identity(n) - P
    # residual of the equation system restricted to the unknown states is tiny
    maybe = (a > 0) & (a < 1)
    r = (M @ a)[maybe]
    assert np.max(np.abs(r)) < 1e-10


def test_check_on_model_and_threshold():
    P, rows = random_chain(6, 11, k=3, absorbing=2)
    m = DTMC(P, 4, {"bad": np.array([1, 0, 0, 0, 0, 0], bool)}, {"s": np.arange(6)})
    r = C.check(m, 'P=? [F "bad"]')
    ex = exact_until(rows, np.ones(6, bool), m.labels["bad"])
    np.testing.assert_allclose(r.values, [float(v) for v in ex], atol=1e-12)
    assert r.initial == pytest.approx(float(ex[4]), abs=1e-12)
    assert r.seconds >= 0 and r.property == 'P=? [F "bad"]'
    t = C.check(m, 'P<0.5 [F "bad"]')
    assert t.satisfied.tolist() == (r.values < 0.5).tolist()
    g = C.check(m, 'P=? [G<=3 !"bad"]')
    np.testing.assert_allclose(g.values, 1 - C.bounded_until(P, None, m.labels["bad"], 3))
    x = C.check(m, "P=? [X s=0]")
    np.testing.assert_allclose(x.values, P[:, 0].toarray().ravel())
    d = r.to_json_dict()
    assert len(d["values"]) == 6 and "initial" in d and "seconds" in d


def test_input_validation():
    P = sp.identity(3, format="csr")
    with pytest.raises(InputError):
        C.reach(P, np.array([1, 0, 0]))  # not boolean
    with pytest.raises(InputError):
        C.reach(P, np.array([True, False]))  # wrong length
    with pytest.raises(InputError):
        C.bounded_until(P, None, np.array([True, False, False]), -1)
    m = DTMC(P, 0, {}, {"s": np.arange(3)})
    with pytest.raises(InputError):
        C.check(m, "P=? [F s=1]", engine="prism")


def test_edge_cases():
    P = sp.identity(4, format="csr")
    none = np.zeros(4, bool)
    assert C.reach(P, none).tolist() == [0, 0, 0, 0]
    allt = np.ones(4, bool)
    assert C.reach(P, allt).tolist() == [1, 1, 1, 1]
    assert C.bounded_until(P, None, none, 0).tolist() == [0, 0, 0, 0]
    # dense input accepted
    assert C.reach(np.eye(2), np.array([True, False])).tolist() == [1, 0]


def test_exhaustive_two_state_chains():
    """Every 2-state chain with probabilities in {0, 1/4, ..., 1}: P[F s=1] from s=0 is 1 iff p01 > 0."""
    for a, b in itertools.product(range(5), range(5)):
        P = sp.csr_matrix(np.array([[1 - a / 4, a / 4], [b / 4, 1 - b / 4]]))
        x = C.reach(P, np.array([False, True]))
        assert x[0] == (1.0 if a > 0 else 0.0) and x[1] == 1.0


def test_iterative_falls_back_to_lu_on_slow_mixing_chain():
    """Fair gambler's ruin on 0..N: Krylov stalls (expected absorption time ~N^2/4), LU has no fill."""
    N = 3000
    i = np.arange(1, N)
    P = sp.csr_matrix((np.r_[np.full(N - 1, 0.5), np.full(N - 1, 0.5), 1.0, 1.0],
                       (np.r_[i, i, 0, N], np.r_[i - 1, i + 1, 0, N])), shape=(N + 1, N + 1))
    t = np.zeros(N + 1, bool)
    t[N] = True
    x = C.reach(P, t, method="iterative")
    assert np.max(np.abs(x - np.arange(N + 1) / N)) < 1e-9
    assert C.last_solve_info().residual <= C.ITER_TOL


def test_error_bound_is_an_upper_bound():
    P, rows = random_chain(8, 5, k=3, absorbing=2)
    t = np.zeros(8, bool)
    t[0] = True
    exact = np.array([float(v) for v in exact_until(rows, np.ones(8, bool), t)])
    rng = np.random.default_rng(0)
    for _ in range(20):
        noisy = exact + rng.normal(scale=1e-6, size=8) * (exact > 0) * (exact < 1)
        assert C.error_bound(P, None, t, noisy) >= np.max(np.abs(noisy - exact))
