"""Agentic Commerce with bundle discounts: exact value vs brute force, a hand-worked cart where greedy loses."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest

from agentguard.core.errors import ParseError
from agentguard.envs import commerce as C


def _brute(cart: C.Cart, k: int) -> float:
    """Best margin over every set of at most k removed rows (checkout may come at any time and a click
    on an empty row wastes a click, so these are exactly the reachable checkout carts)."""
    best = -np.inf
    n = len(cart.items)
    for r in range(min(k, n) + 1):
        for gone in combinations(range(n), r):
            sub = C.Cart([it for i, it in enumerate(cart.items) if i not in gone], 0, cart.bundles)
            best = max(best, C.BUDGET - sum(sub.prices) + sum(d for _, _, d in sub.active_bundles))
    return best


def _hand_cart(k: int = 2) -> C.Cart:
    # A $30 + B $28 with a $25 bundle discount, C $15, D $14, E $10, F $9: total 30+28+15+14+10+9-25 = $81
    items = [(0, 30.0), (1, 28.0), (2, 15.0), (3, 14.0), (4, 10.0), (5, 9.0)]
    return C.Cart(items, k, [(0, 1, 25.0)])


def test_bundle_total_and_rendering_round_trip():
    c = _hand_cart()
    assert c.total == 81.0 and c.margin == -31.0
    text = C.render_tree(c)
    assert "Bundle discount: -$25.00" in text and "Total Price: $81.00" in text
    assert C.parse_bundle_rows(text) == [(0, 1, 25.0)] == C.bundle_rows(c)
    assert C.parse_cart_text(text) == ([30.0, 28.0, 15.0, 14.0, 10.0, 9.0], 2)  # the discount row is no item
    c2, done = C.step(c, 2)  # remove B: the bundle row disappears, the discount is lost
    assert not done and c2.total == 81.0 - 28.0 + 25.0 and "Bundle discount" not in C.render_tree(c2)
    assert C.parse_bundle_rows(C.render_tree(c2)) == []
    c3, _ = C.step(C.Cart(c.items[2:] + c.items[:2], 2, c.bundles), 1)  # rows shift: the bundle follows its items
    assert C.bundle_rows(c3) == [(3, 4, 25.0)]
    with pytest.raises(ParseError):
        C.parse_bundle_rows(text.replace("Bundle discount: -$25.00 (Q Mixers", "Bundle discount: -$25.00 (Nothing"))


def test_hand_worked_cart_greedy_loses_exact_wins():
    """k = 2, need to save $31: the most expensive items are A ($30) and B ($28), but removing one of
    them saves only $5 / $3 (the $25 discount is lost); the greedy closed form and the one-step margin
    rule remove C then D (save $29, margin -$2, fail); removing A then B saves $33 (margin +$2)."""
    c = _hand_cart()
    assert C.exact_value(c, 2) == pytest.approx(2.0)
    assert C.greedy_value(c.prices, 2) == pytest.approx(50 - (15 + 14 + 10 + 9))  # no longer the value
    x = c
    while True:  # the myopic rule: the click with the best margin right after it
        a = int(np.argmax([C.step(x, b)[0].margin for b in range(C.N_ACTIONS)]))
        x, done = C.step(x, a)
        if done:
            break
    assert x.margin == pytest.approx(-2.0)  # fails
    q = C.exact_q(c)
    assert q[1] == pytest.approx(2.0) and q[2] == pytest.approx(2.0) and q[3] < 0  # remove A (or B) first
    x, _ = C.step(c, int(np.argmax(q)))
    x, done = C.step(x, int(np.argmax(C.exact_q(x))))
    assert done and x.margin == pytest.approx(2.0)


def test_exact_value_with_bundles_matches_brute_force():
    rng = np.random.default_rng(3)
    for _ in range(60):
        c = C.random_cart(rng, 1, 8, int(rng.integers(1, 6)), bundles=True)
        for k in range(0, c.actions_left + 1):
            assert C.exact_value(c, k) == pytest.approx(_brute(c, k), abs=1e-6)
        q = C.exact_q(c)
        for a in range(C.N_ACTIONS):  # Q(s, a) = value of the successor with one click fewer
            c2, done = C.step(c, a)
            want = c2.margin if done else _brute(c2, c2.actions_left)
            assert q[a] == pytest.approx(want, abs=1e-6)


def test_plain_carts_unchanged_and_bundles_drawn_after():
    a = C.random_cart(np.random.default_rng(7))
    b = C.random_cart(np.random.default_rng(7), bundles=True)
    assert a.bundles == [] and [i for i, _ in a.items] == [i for i, _ in b.items]
    assert C.exact_value(a, 5) == C.exact_value(a.prices, 5) == C.greedy_value(a.prices, 5)
    assert b.bundles and all(20 <= p <= 40 for _, p in b.items[:2])


def test_bundles_defeat_the_one_step_rule_on_some_saveable_carts():
    """The docstring's claim: the myopic rule fails on about 10% of seeded carts that could be saved."""
    rng = np.random.default_rng(0)
    lost = 0
    n = 300
    for _ in range(n):
        c = C.random_cart(rng, bundles=True)
        x = c
        while True:
            a = int(np.argmax([C.step(x, b)[0].margin for b in range(C.N_ACTIONS)]))
            x, done = C.step(x, a)
            if done:
                break
        lost += C.exact_value(c, c.actions_left) >= 0 and x.margin < 0
    assert 0.05 <= lost / n <= 0.2
