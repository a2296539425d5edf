"""Bounded-response monitors (Definition 6) and DTMC x monitor products."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
import scipy.sparse as sp

from agentguard import InputError
from agentguard.predictive.dtmc import DTMC
from agentguard.predictive.monitor import BoundedResponse, MonitorAutomaton, product
from agentguard.predictive.pac import prob01


def _reach(P: sp.csr_matrix, target: np.ndarray) -> np.ndarray:
    """Private dense oracle for P[F target] (graph precomputation + one dense solve)."""
    A = P.toarray()
    p0, p1 = prob01(sp.csr_matrix(A), target)
    x = np.zeros(len(A))
    x[p1] = 1.0
    u = ~(p0 | p1)
    if u.any():
        M = np.eye(u.sum()) - A[np.ix_(u, u)]
        b = A[np.ix_(u, p1)].sum(axis=1)
        x[u] = np.linalg.solve(M, b)
    return x


def _bounded_reach(P: sp.csr_matrix, target: np.ndarray, k: int) -> np.ndarray:
    A = P.toarray()
    x = target.astype(float)
    for _ in range(k):
        x = np.where(target, 1.0, A @ x)
    return x


def _plant_from_example(text: str) -> DTMC:
    """The plant module of the hand-written example product (3 states)."""
    rows = {}
    for m in re.finditer(r"s=(\d+)\s*->\s*([^;]+);", text):
        i = int(m.group(1))
        rows[i] = {int(j): float(p) for p, j in re.findall(r"([\d.]+)\s*:\s*\(s'=(\d+)\)", m.group(2))}
    n = len(rows)
    A = np.zeros((n, n))
    for i, r in rows.items():
        for j, p in r.items():
            A[i, j] = p
    return DTMC(sp.csr_matrix(A), 0, {"alpha": np.arange(n) == 0, "beta": np.arange(n) == 2}).validate()


def test_monitor_transition_function_is_definition_6():
    mon = MonitorAutomaton(2)  # Definition 6 with K = 2: idle, wait(0..2), viol
    assert [mon.name(q) for q in range(mon.size)] == ["idle", "wait(0)", "wait(1)", "wait(2)", "viol"]
    assert mon.step(mon.idle, True, False) == mon.wait(2)
    assert mon.step(mon.idle, True, True) == mon.idle
    assert mon.step(mon.idle, False, False) == mon.idle
    assert mon.step(mon.wait(2), False, False) == mon.wait(1)
    assert mon.step(mon.wait(1), True, True) == mon.idle
    assert mon.step(mon.wait(0), False, False) == mon.viol
    assert mon.step(mon.wait(0), False, True) == mon.idle
    assert mon.step(mon.viol, False, True) == mon.viol
    assert BoundedResponse("a", "b", 2, semantics="definition6").monitor().c == 2
    assert BoundedResponse("a", "b", 2).monitor().c == 1
    assert BoundedResponse("a", "b", 0).monitor().step(0, True, False) == 1  # K=0: viol at once
    with pytest.raises(InputError):
        BoundedResponse("a", "b", -1)


@pytest.mark.data
def test_example_product_by_hand_and_complete(data_dir):
    """The data's hand-written product deadlocks; ours on its plant DTMC is complete.

    Plant: 0 -> 1; 1 -> 1 (0.4) | 2 (0.6); 2 absorbing; alpha at 0, beta at 2, K = 2.
    By hand: the trigger at t=0 needs beta at t <= 2, i.e. 1 -> 2 at the first try: P[G !viol] = 0.6.
    Definition 6 literally (window K+1 = 3): 1 - 0.4^2 = 0.84.
    """
    text = (data_dir / "pro2guard" / "examples" / "monitor_product_example.dtmc").read_text()
    plant = _plant_from_example(text)
    for sem, expect in (("exact", 0.6), ("definition6", 0.84)):
        prod = product(plant, BoundedResponse("alpha", "beta", 2, semantics=sem), states="all")
        P = prod.model.matrix
        assert np.all(np.diff(P.indptr) > 0), "deadlock"
        np.testing.assert_allclose(np.asarray(P.sum(axis=1)).ravel(), 1.0, atol=1e-12)
        safe = 1 - _reach(P, prod.model.labels["viol"])
        s0, q0 = prod.start(0)
        assert safe[prod.index(s0, q0)] == pytest.approx(expect, abs=1e-12)
        assert prod.model.initial == prod.index(s0, q0)


def _brute_force_violation(A, trig, resp, K, start, L):
    """P(a length-L path from ``start`` violates G(trig -> F[0,K] resp) within its prefix)."""
    n = len(A)
    total = 0.0
    for tail in itertools.product(range(n), repeat=L - 1):
        path = (start, *tail)
        p = 1.0
        for a, b in itertools.pairwise(path):
            p *= A[a, b]
            if p == 0:
                break
        if p == 0:
            continue
        bad = any(
            trig[path[t]] and t + K < L and not any(resp[path[u]] for u in range(t, t + K + 1))
            for t in range(L)
        )
        total += p * bad
    return total


@pytest.mark.parametrize("K", [0, 1, 2, 3])
def test_product_matches_brute_force_path_enumeration(K):
    rng = np.random.default_rng(K)
    n, L = 4, 8
    A = rng.random((n, n)) * (rng.random((n, n)) < 0.7)
    A[np.arange(n), rng.integers(0, n, n)] += 0.1
    A /= A.sum(axis=1, keepdims=True)
    trig = np.array([True, False, True, False])
    resp = np.array([False, False, False, True])
    model = DTMC(sp.csr_matrix(A), 0, {"t": trig, "r": resp}).validate()
    for sem, k_eff in (("exact", K), ("definition6", K + 1)):
        prod = product(model, BoundedResponse("t", "r", K, semantics=sem))
        P = prod.model.matrix
        assert np.all(np.diff(P.indptr) > 0)
        np.testing.assert_allclose(np.asarray(P.sum(axis=1)).ravel(), 1.0, atol=1e-12)
        viol = prod.model.labels["viol"]
        x = _bounded_reach(P, viol, L - 1)
        for s in range(n):
            i = prod.index(*prod.start(s))
            assert x[i] == pytest.approx(_brute_force_violation(A, trig, resp, k_eff, s, L), abs=1e-12)


def test_product_reachable_part_and_lookup_errors():
    A = np.array([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
    m = DTMC(sp.csr_matrix(A), 0, {"a": np.array([1, 0, 0], bool), "b": np.array([0, 0, 1], bool)}).validate()
    p_init = product(m, BoundedResponse("a", "b", 1), states="initial")
    p_all = product(m, BoundedResponse("a", "b", 1), states="all")
    assert p_init.n < p_all.n == 3 * 3
    assert set(map(tuple, p_init.pairs)) <= set(map(tuple, p_all.pairs))
    with pytest.raises(Exception, match="not in the product"):
        p_init.index(2, p_init.monitor.idle + 1)
    # runtime stepping agrees with the product's transitions
    q = p_init.start(0)[1]
    assert q == p_init.monitor.wait(0)
    assert p_init.advance(q, 1) == p_init.monitor.viol
    assert p_init.advance(q, 0) == p_init.monitor.viol  # no b at t+1 either: K=1 deadline missed
    assert p_init.advance(q, 2) == p_init.monitor.idle


def test_unknown_label_is_an_input_error():
    m = DTMC(sp.csr_matrix(np.eye(2)), 0, {"a": np.array([1, 0], bool)}).validate()
    with pytest.raises(InputError, match="unknown (variable or )?label"):
        product(m, BoundedResponse("a", "nope_label_x", 1))


def test_text_formulas_use_the_pctl_state_formula_syntax():
    A = np.array([[0.0, 1.0, 0.0], [0.0, 0.5, 0.5], [0.0, 0.0, 1.0]])
    m = DTMC(sp.csr_matrix(A), 0, {"a": np.array([1, 0, 0], bool)}, {"s": np.arange(3)}).validate()
    p1 = product(m, BoundedResponse('"a"', "s=2", 2))
    p2 = product(m, BoundedResponse(np.array([1, 0, 0], bool), lambda mm: mm.variables["s"] == 2, 2))
    np.testing.assert_array_equal(p1.model.matrix.toarray(), p2.model.matrix.toarray())
    safe = p1.safe_probability()  # the model checker's globally
    assert safe[p1.model.initial] == pytest.approx(0.5)


@pytest.mark.data
def test_products_of_all_driving_dtmcs_are_complete(data_dir):
    from agentguard.predictive.prism import read_prism

    folders = sorted((data_dir / "pro2guard" / "av_dtmcs").iterdir())
    assert folders
    for folder in folders:
        m = read_prism(folder / "dtmc.prism")
        n = m.n
        rule = BoundedResponse(np.arange(n) % 3 == 0, np.arange(n) % 5 == 1, 10)
        prod = product(m, rule)
        P = prod.model.matrix
        assert np.all(np.diff(P.indptr) > 0), folder.name
        np.testing.assert_allclose(np.asarray(P.sum(axis=1)).ravel(), 1.0, atol=1e-9)
        safe = prod.safe_probability()
        assert np.all((safe >= -1e-12) & (safe <= 1 + 1e-12))
        assert np.all(safe[prod.model.labels["viol"]] == 0)
