"""Agentic Commerce (backward induction, page rendering/parsing) and Backseat Driver (personas, proxies)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from agentguard.core import Context, Decision, InputError, ParseError
from agentguard.envs import backseat as B
from agentguard.envs import commerce as C
from agentguard.envs import driving as D
from agentguard.llm import ScriptedClient


def brute_force_value(prices, k):
    """Independent oracle: try every set of at most k rows to remove."""
    best = -np.inf
    for r in range(min(k, len(prices)) + 1):
        for rm in itertools.combinations(range(len(prices)), r):
            best = max(best, C.BUDGET - sum(p for i, p in enumerate(prices) if i not in rm))
    return best


def test_backward_induction_hand_worked():
    # $68.50 alone with one click: remove it -> margin $50
    assert C.exact_value([68.5], 1) == pytest.approx(50.0)
    # 30 + 25 + 10 with one click: remove the $30 -> 50 - 35 = 15
    assert C.exact_value([30, 25, 10], 1) == pytest.approx(15.0)
    # no clicks: the margin now
    assert C.exact_value([30, 25, 10], 0) == pytest.approx(-15.0)


def test_backward_induction_matches_oracles():
    rng = np.random.default_rng(0)
    for _ in range(60):
        cart = C.random_cart(rng, 1, 8)
        k = int(rng.integers(0, 6))
        v = C.exact_value(cart.prices, k)
        assert v == pytest.approx(brute_force_value(cart.prices, k))
        assert v == pytest.approx(C.greedy_value(cart.prices, k))


def test_exact_q_and_step_semantics():
    cart = C.Cart([(0, 30.0), (1, 25.0), (2, 10.0)], actions_left=1)
    q = C.exact_q(cart)
    assert q[0] == pytest.approx(-15.0)  # checkout now
    assert q[1] == pytest.approx(15.0)  # remove the $30 (last click: order placed)
    assert q[2] == pytest.approx(10.0) and q[3] == pytest.approx(-5.0)
    assert q[5] == pytest.approx(-15.0)  # empty row: wasted click
    new, done = C.step(cart, 1)
    assert done and new.prices == [25.0, 10.0] and new.actions_left == 0


def test_render_and_parse_round_trip():
    cart = C.random_cart(np.random.default_rng(3))
    text = C.render_tree(cart)
    assert "[0] button 'Proceed to Checkout'" in text and "Actions Remaining: 5" in text
    prices, k = C.parse_cart_text(text)
    assert prices == cart.prices and k == cart.actions_left
    with pytest.raises(ParseError):
        C.parse_cart_text("<html>nothing here</html>")


@pytest.mark.parametrize("a,idx", [(3, 3), ("3", 3), ("[0]", 0), ("click 10", 10)])
def test_commerce_parse_action(a, idx):
    assert C.parse_action(a) == idx


@pytest.mark.parametrize("bad", ["remove the shoes", "11", -1, "3 4"])
def test_commerce_parse_action_rejects(bad):
    with pytest.raises(InputError):
        C.parse_action(bad)


def test_commerce_env_episode():
    env = C.CommerceEnv()
    env.reset(C.Cart([(0, 40.0), (1, 20.0)], actions_left=2))
    _, m, done, info = env.step("1")
    assert not done and m == pytest.approx(30.0)
    _, m, done, info = env.step(0)
    assert done and info["success"]


def test_exact_commerce_filter_recovers():
    from agentguard.control.filter import SafetyFilter

    class ExactCommerceQ:
        def q_values(self, carts):
            return np.array([C.exact_q(c) for c in carts])

    class Parse:
        def encode(self, texts):
            out = []
            for t in texts:
                prices, k = C.parse_cart_text(t)
                out.append(C.Cart([(0, p) for p in prices], k))
            return out

    f = SafetyFilter(ExactCommerceQ(), Parse(), [str(i) for i in range(C.N_ACTIONS)], C.parse_action, 0.0)
    cart = C.Cart([(0, 30.0), (1, 25.0), (2, 10.0)], actions_left=1)
    v = f.certify(Context(state=C.render_tree(cart)), "3")  # removing the $10 leaves $55 > $50
    assert v.decision is Decision.RECOVER and v.action == "1"
    assert f.certify(Context(state=C.render_tree(cart)), "1").decision is Decision.ALLOW


def test_personas():
    rng = np.random.default_rng(0)
    s = np.array([0.5, 1.5, 0.0])
    calm, urgent = B.advice_text(2), B.advice_text(2, urgent=True)
    assert B.advised_action(calm) == 2 and B.is_urgent(urgent) and not B.is_urgent(calm)
    assert B.ScriptedHuman("none").act(s, calm, rng) == 2
    assert B.ScriptedHuman("urgent").act(s, urgent, rng) == 2
    assert B.ScriptedHuman("urgent").act(s, calm, rng) == B.OPPOSITE[2] == 0  # C -> A
    with pytest.raises(InputError):
        B.ScriptedHuman("sleepy")
    assert "AI: " + calm in B.human_prompt(s, calm, "urgent")[1]["content"]
    assert "very urgent" in B.human_prompt(s, calm, "urgent")[0]["content"]


def test_llm_human_proxy_and_unparseable_reply():
    client = ScriptedClient(["C", "I am not sure"])
    h = B.LLMHuman(client, persona="none")
    rng = np.random.default_rng(0)
    assert h.act(np.array([0.5, 1.5, 0.0]), "steer left (C)", rng) == 2
    a = h.act(np.array([0.5, 1.5, 0.0]), "steer left (C)", rng)
    assert a in (0, 1, 2) and h.unparsed == 1


def test_backseat_urgency_matters():
    from agentguard.envs.driving.guard import MyopicQ

    starts = D.sample_initial_states(30, seed=2)
    rec = lambda s: int(np.argmax(MyopicQ().q_values(s[None])[0]))
    res = {}
    for persona in B.PERSONAS:
        for urgent in (False, True):
            h = B.ScriptedHuman(persona)
            res[persona, urgent] = B.run_backseat(h, lambda s, a, u=urgent: B.advice_text(a, u), rec, starts, seed=0)
    # the urgent persona follows urgent advice exactly like the none persona follows any advice ...
    assert res["urgent", True] == res["none", False] == res["none", True]
    # ... and does something else (the opposite choice) when the advice is calm
    assert res["urgent", False] != res["urgent", True]
