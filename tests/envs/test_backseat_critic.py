"""The learned critic over the advice text (agentguard.envs.backseat_critic)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agentguard.control.fqi import FQIConfig
from agentguard.envs import backseat as B
from agentguard.envs import backseat_critic as BC
from agentguard.envs import driving as D
from agentguard.envs.driving.value_iteration import solve_driving


@pytest.fixture(scope="module")
def grid():
    return solve_driving(resolution=0.1, n_theta=32)


class HashEncoder:
    """A text embedder that sees only strings (records them) and hashes characters into 16 features."""

    name, dim = "hash-16", 16

    def __init__(self):
        self.seen: list = []

    def encode(self, texts):
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, t in enumerate(texts):
            assert isinstance(t, str)
            self.seen.append(t)
            for j, ch in enumerate(t.lower()):
                out[i, (ord(ch) * 7 + j) % self.dim] += 1.0
            out[i] += 3.0 * sum(ch.isupper() for ch in t) / max(1, len(t)) * np.eye(self.dim)[0]
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_candidates_mean_what_they_are_labelled():
    # the held-out paraphrases must make the scripted human do what their label says
    for c in BC.CANDIDATES:
        if c.style == "silence":
            continue
        assert B.advised_action(c.text) == c.action, c.text
        if c.style in ("calm", "urgent"):
            assert B.is_urgent(c.text) == (c.style == "urgent"), c.text
    train = {c.text for c in BC.candidates("train")}
    test = {c.text for c in BC.candidates("test")}
    assert train & test == {BC.SILENCE} and len(test) >= 15


def test_exact_advice_q_hand_worked(grid):
    s = np.array([[1.0, 1.5, 0.0]])  # heading +x; position after any action: (1.25, 1.5)
    calm_left, urgent_left = "I suggest you steer left (C).", B.advice_text(2, urgent=True)
    texts = [calm_left, urgent_left, BC.SILENCE, "Drive safely, please."]
    # margin at (1.25, 1.5): obstacle (1.5, 1.0), radius 0.5 -> sqrt(0.25^2 + 0.5^2) - 0.5
    l_next = math.hypot(0.25, 0.5) - 0.5
    v = lambda theta: float(grid.value_at(np.array([[1.25, 1.5, theta]]))[0])
    q = BC.exact_advice_q(grid, "urgent", s, [1], texts)[0]
    # urgent persona: calm 'C' -> opposite 'A' (heading -pi/8); urgent 'C' -> C (+pi/8); silence, vague -> own B
    expect = [min(l_next, v(-math.pi / 8)), min(l_next, v(math.pi / 8)), min(l_next, v(0.0)), min(l_next, v(0.0))]
    assert q == pytest.approx(expect, abs=1e-9)
    q_none = BC.exact_advice_q(grid, "none", s, [1], texts)[0]
    assert q_none == pytest.approx([expect[1], expect[1], expect[2], expect[2]], abs=1e-9)
    # heading into the lower wall from y = 0.1: every sentence ends at y = -0.15, a failure
    q_fail = BC.exact_advice_q(grid, "none", np.array([[1.0, 0.1, -math.pi / 2]]), [0], texts)[0]
    assert np.all(q_fail <= -0.15 + 1e-9)


def test_critic_input_is_the_sentence_text_only(monkeypatch):
    enc = HashEncoder()
    critic = BC.train_advice_critic("urgent", enc, n_states=50, config=FQIConfig(hidden=(8,), iterations=2, epochs=2))
    assert critic.x_dim == 7 and critic.e_dim == enc.dim  # privileged state (4) + intended action (3) | text
    texts = [c.text for c in BC.candidates("test")]
    guard = BC.learned_guard(critic, enc, texts, epsilon=10.0)

    def no_parsing(*_a, **_k):
        raise AssertionError("the guard parsed the advice")

    monkeypatch.setattr(B, "advised_action", no_parsing)
    monkeypatch.setattr(B, "is_urgent", no_parsing)
    enc.seen.clear()
    said = guard(np.array([1.0, 1.5, 0.0]), 1)
    assert said in texts and said != BC.SILENCE
    assert all(isinstance(t, str) for t in enc.seen)
    # the critic reads nothing but the embedding: two sentences with different meanings but one embedding score alike
    x = BC.state_part(np.array([[1.0, 1.5, 0.0]]), [1])
    e = enc.encode(["steer left (C)"])
    assert critic.q_all(x, np.vstack([e, e]))[0, 0] == critic.q_all(x, np.vstack([e, e]))[0, 1]
    assert np.ptp(critic.q_all(x, enc.encode(["steer left (C)", "steer right (A)"]))) > 0


def test_trained_critic_prefers_urgent_phrasing_for_the_urgent_human(grid):
    """On the committed critic of the benchmark (benchmarks/control_backseat.py --save-models, MiniLM)."""
    from pathlib import Path

    from agentguard.control.advice import AdviceCritic
    from agentguard.control.encoders import MiniLMEncoder

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "control_backseat_critic_urgent.pt"
    critic = AdviceCritic.load(str(path))
    assert critic.meta["encoder"] == "all-minilm-l6-v2" and critic.meta["personas"] == ["urgent"]
    enc = MiniLMEncoder()
    rng = np.random.default_rng(3)
    s = np.column_stack([rng.uniform(0.3, 4.0, 1000), rng.uniform(0.3, 2.7, 1000), rng.uniform(-1.2, 1.2, 1000)])
    own = D.weak_driver_policy(s, rng)
    held_out = [c for c in BC.candidates("test") if c.action is not None]
    pairs = [(calm, urgent) for calm in held_out for urgent in held_out
             if calm.style == "calm" and urgent.style == "urgent" and calm.action == urgent.action]
    texts = [t for p in pairs for t in (p[0].text, p[1].text)]
    exact = BC.exact_advice_q(grid, "urgent", s, own, texts)
    q = critic.q_all(BC.state_part(s, own), enc.encode(texts))
    # where only the urgent phrasing of the same action keeps the car safe, the critic must rank it higher
    # (measured: 0.75 overall; right and left 0.82-1.00; straight is the weak case, 0.00-0.59 by pair)
    win = {a: [] for a in range(3)}
    for j, (calm, _) in enumerate(pairs):
        m = (exact[:, 2 * j + 1] > 0.05) & (exact[:, 2 * j] < -0.05)
        win[calm.action] += list(q[m, 2 * j + 1] > q[m, 2 * j])
    every = win[0] + win[1] + win[2]
    assert len(every) >= 200
    assert np.mean(every) >= 0.7, np.mean(every)  # a critic blind to the text ties (scores 0), a coin scores 0.5
    assert np.mean(win[0]) >= 0.8 and np.mean(win[2]) >= 0.9, (np.mean(win[0]), np.mean(win[2]))


def test_run_episodes_counts_interventions_and_silence(grid):
    starts = D.sample_initial_states(5, seed=0)
    alone = BC.run_episodes("none", None, starts, seed=0)
    silent = BC.run_episodes("none", lambda s, own: BC.SILENCE, starts, seed=0)
    assert [e[:2] for e in alone["episodes"]] == [e[:2] for e in silent["episodes"]]  # silence = no advice
    assert alone["intervention_rate"] == 0 and silent["intervention_rate"] == 1.0
    oracle = BC.run_episodes("urgent", BC.exact_guard(grid, "urgent", [c.text for c in BC.candidates("test")], True),
                             starts, seed=0)
    assert oracle["failure_rate"] <= alone["failure_rate"] and set(oracle["said"]) <= {"calm", "urgent"}
