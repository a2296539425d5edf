"""The driving dynamics (envs.driving.dynamics): margin, Appendix formula, observation text, actions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agentguard.core import InputError, ParseError
from agentguard.envs import driving as D


def test_margin_hand_worked():
    # (1.5, 0.2): 0.8 from obstacle 1's centre -> 0.3 to its circle; 0.2 from the right edge p_y = 0
    assert D.margin(np.array([1.5, 0.2, 0.0])) == pytest.approx(0.2)
    # (1.5, 1.6): 0.6 from obstacle 1's centre -> 0.1; edges 1.4 and 1.6 away; obstacle 2 far
    assert D.margin(np.array([1.5, 1.6, 0.0])) == pytest.approx(0.1)
    assert D.margin(np.array([-0.1, 1.5, 0.0])) == pytest.approx(-0.1)  # behind the left end p_x = 0
    assert D.margin(np.array([4.0, 3.2, 0.0])) == pytest.approx(-0.2)  # off the left edge p_y = 3
    assert D.margin(np.array([1.5, 1.0, 0.0])) == pytest.approx(-0.5)  # obstacle centre


def test_dynamics_match_appendix_formula():
    s = np.array([[1.0, 1.0, 0.3]])
    for a, u in enumerate((-D.U_MAX, 0.0, D.U_MAX)):
        nxt = D.step(s, a)[0]
        expect = [1.0 + D.DT * D.V * math.cos(0.3), 1.0 + D.DT * D.V * math.sin(0.3), 0.3 + D.DT * u]
        np.testing.assert_allclose(nxt, expect)
    assert D.DT * D.U_MAX == pytest.approx(2 * math.pi / 16)


def test_observation_text_round_trip():
    s = np.array([0.8, 1.2, -0.4])
    text = D.observation_text(s)
    assert "goal is currently" in text and "degrees clockwise" in text and "second obstacle" in text
    np.testing.assert_allclose(D.state_from_observation(text), s, atol=2e-3)
    msgs = D.prompt_messages(s)
    assert "A) Steer right" in msgs[1]["content"] and "C) Steer left" in msgs[1]["content"]
    with pytest.raises(ParseError):
        D.parse_observation("the car is somewhere")


@pytest.mark.parametrize("text,idx", [("A", 0), ("b", 1), ("C) Steer left", 2), ("Answer: C", 2),
                                      ("steer straight", 1), (2, 2), ("(A)", 0)])
def test_parse_action(text, idx):
    assert D.parse_action(text) == idx


@pytest.mark.parametrize("bad", ["D", "I would go left maybe", "", 7, None, "Answer: E"])
def test_parse_action_rejects_unknown(bad):
    with pytest.raises(InputError):
        D.parse_action(bad)
