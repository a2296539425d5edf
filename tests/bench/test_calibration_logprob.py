"""The token-log-probability experiment's problem set, step splitting, signals and labels
(:mod:`agentguard.bench.calibration_logprob`); no model is run here."""

from __future__ import annotations

import re

import pytest

from agentguard.bench.calibration_logprob import (arithmetic_verifier, label, make_problems, prompt_for, split_steps,
                                                  step_signals)


def _solve(text: str) -> int:
    """An independent reading of the problem text."""
    v = int(re.search(r"has (\d+)", text).group(1))
    for verb, c in re.findall(r"(buys|gives away) (\d+)", text):
        v = v + int(c) if verb == "buys" else v - int(c)
    return v


def test_problems_are_seeded_and_their_answers_exact():
    ps = make_problems(300, seed=3)
    assert ps == make_problems(300, seed=3) and ps != make_problems(300, seed=4)
    for p in ps:
        assert p["answer"] == _solve(p["text"]) >= 0, p
        assert 1 <= len(p["ops"]) <= 2
    assert prompt_for(ps[0]).endswith(f"Problem: {ps[0]['text']}\nStep 1:")


def test_steps_are_lines_and_the_signal_is_the_per_step_minimum():
    pieces = [(" 4", -0.1), (" +", -0.5), (" 3 = 7", -0.2), ("\n", -0.3), ("Answer", -2.0), (": 7", -0.1),
              ("\n", -0.05), ("Problem", -0.1)]
    steps = split_steps(pieces)
    assert [s for s, _ in steps] == ["Step 1: 4 + 3 = 7", "Answer: 7"]
    assert step_signals(steps) == pytest.approx([-0.5, -2.0])   # section 4.3: min over the step's tokens
    assert label(steps, 7) == 1 and label(steps, 8) == 0
    assert label(split_steps([(" 4 + 3 = 7", -0.1)]), 7) == 0   # no answer line: not solved


def test_arithmetic_checker_flags_a_wrong_step_and_stays_flagged():
    steps = [("Step 1: 9 + 3 = 12", []), ("Step 2: 12 - 3 = 8", []), ("Step 3: 8 + 1 = 9", []), ("Answer: 9", [])]
    assert arithmetic_verifier(steps) == [1.0, 0.0, 0.0, 0.0]
    assert arithmetic_verifier([("Step 1: 2 * 6 = 12", []), ("Answer: 12", [])]) == [1.0, 1.0]
