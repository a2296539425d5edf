"""Agentic Driving: dynamics, margin, text observation, exact value iteration, safety filter."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest

from agentguard.control.bellman import discounted_safety_target, safety_backup
from agentguard.envs.driving.guard import MyopicQ, TextStateAdapter, make_filter
from agentguard.control.filter import SafetyFilter
from agentguard.envs.driving.value_iteration import (
    exhaustive_can_survive,
    rollout_fallback,
    solve_driving,
    validate,
)
from agentguard.core import Context, Decision, Fallback, GuardStack, InputError, ParseError
from agentguard.envs import driving as D


@pytest.fixture(scope="module")
def grid():
    return solve_driving(resolution=0.1, n_theta=32)


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


def test_bellman_targets_hand_worked():
    # (1 - 0.9) * 0.5 + 0.9 * min(0.5, 0.2) = 0.05 + 0.18
    y = discounted_safety_target(np.array([0.5, 0.5, -0.1]), np.array([0.2, 0.9, 0.7]), np.array([False, False, True]), 0.9)
    np.testing.assert_allclose(y, [0.23, 0.5, -0.1])
    assert safety_backup(0.3, 0.7) == 0.3
    torch = pytest.importorskip("torch")
    yt = discounted_safety_target(torch.tensor([0.5, 0.5, -0.1]), torch.tensor([0.2, 0.9, 0.7]),
                                  torch.tensor([False, False, True]), 0.9)
    np.testing.assert_allclose(yt.numpy(), [0.23, 0.5, -0.1], rtol=1e-6)


def test_value_iteration_is_a_fixed_point(grid):
    assert grid.meta["converged"]
    nodes = grid.node_states().reshape(-1, 3)
    v = grid.values.reshape(-1)
    assert np.all(v <= D.margin(nodes) + 1e-12)  # V <= l
    # Bellman residual at nodes whose successors stay inside the grid
    rng = np.random.default_rng(0)
    idx = rng.choice(len(nodes), 3000, replace=False)
    s = nodes[idx]
    inside = np.all([(D.step(s, a)[:, 0] < grid.xs[-1]) & (D.step(s, a)[:, 1] < grid.ys[-1])
                     & (D.step(s, a)[:, 0] > grid.xs[0]) & (D.step(s, a)[:, 1] > grid.ys[0]) for a in range(3)], axis=0)
    back = np.minimum(D.margin(s), grid.q_values(s).max(1))
    np.testing.assert_allclose(back[inside], v[idx][inside], atol=1e-6)
    # the grid reaches beyond the walls
    assert grid.xs[0] < 0 and grid.ys[0] < 0 and grid.ys[-1] > D.ROAD_WIDTH


def test_exact_safe_set_obvious_states(grid):
    # in the middle of the road heading along it, far from obstacles: safe
    assert grid.safe(np.array([[0.3, 2.5, 0.0]]))[0]
    # touching the right edge heading straight into it: no action avoids failure
    s = np.array([0.6, 0.05, -math.pi / 2])
    assert not grid.safe(s[None])[0]
    assert exhaustive_can_survive(s, depth=6) is False


@pytest.mark.statistical
def test_exact_safe_set_validated_by_rollouts_and_search(grid):
    rep = validate(grid, n=40, seed=1, steps=80, depth=10)
    assert rep["safe_rollout_ok"] == 1.0  # the implied fallback keeps every labelled-safe state safe
    assert rep["unsafe_certified"] + rep["unsafe_undecided"] >= 0.95
    assert rep["unsafe_counterexamples"] <= 2


def test_filter_allows_safe_and_recovers_unsafe(grid):
    f = make_filter("exact", grid=grid)
    # heading straight at obstacle 1: the last point where a turn still saves the car
    line = np.column_stack([np.linspace(0.0, 1.0, 101), np.full(101, 1.0), np.zeros(101)])
    q_line = grid.q_values(line)
    ok = np.flatnonzero((q_line[:, 1] <= f.epsilon) & (q_line.max(1) > f.epsilon))
    assert len(ok), "no state on the line where only a turn is safe"
    s = line[ok[0]]
    v = f.certify(Context(state=D.observation_text(s)), "B")
    assert v.decision is Decision.RECOVER and v.action in ("A", "C")
    assert set(v.numbers) >= {"q_A", "q_B", "q_C", "q_proposed", "epsilon"}
    assert v.numbers["q_proposed"] == pytest.approx(v.numbers["q_B"])
    v2 = f.certify(Context(state=D.observation_text(np.array([0.3, 2.5, 0.0]))), "B")
    assert v2.decision is Decision.ALLOW and v2.action is None
    out = Fallback().apply(v, Context(), "B")
    assert out.execute and out.action == v.action


def test_filter_bad_input_gets_fallback_and_reason(grid):
    f = make_filter("exact", grid=grid)
    f.default_action = 1
    line = np.column_stack([np.linspace(0.0, 1.0, 101), np.full(101, 1.0), np.zeros(101)])
    q_line = grid.q_values(line)
    s = line[np.flatnonzero((q_line[:, 1] <= f.epsilon) & (q_line.max(1) > f.epsilon))[0]]
    ctx = Context(state=D.observation_text(s))
    v = f.certify(ctx, "D) fly over it")  # unknown action from the base LLM
    assert v.decision is Decision.RECOVER and v.action in ("A", "C") and "unknown action" in v.reason
    # unreadable observation in the same run: the run's last fallback action, with the error as reason
    ctx.state = "<html>lost the sensor feed</html>"
    v = f.certify(ctx, "B")
    assert v.decision is Decision.RECOVER and v.action in ("A", "C") and "ParseError" in v.reason
    # a new run with no history uses the default action
    v = f.certify(Context(state="garbage"), "B")
    assert v.decision is Decision.RECOVER and v.action == "B"
    # no default either: the filter stops rather than allow
    f.default_action = None
    v = f.certify(Context(state="garbage"), "A")
    assert v.decision is Decision.HALT


def test_filter_is_a_guard(grid):
    f = make_filter("exact", grid=grid)
    stack = GuardStack([f])
    ctx = Context(state=D.observation_text(np.array([0.95, 1.0, 0.0])))  # doomed: obstacle 0.05 ahead
    assert stack.check(ctx, "B").decision is Decision.RECOVER
    assert asyncio.run(f.acheck(ctx, "B")).decision is Decision.RECOVER
    assert "SafetyFilter" in repr(f)


def test_myopic_is_one_step_and_stop_mode():
    s = np.array([[0.75, 1.0, 0.0]])
    q = MyopicQ().q_values(s)
    np.testing.assert_allclose(q[0], [D.margin(D.step(s, a))[0] for a in range(3)])
    f = SafetyFilter(MyopicQ(), TextStateAdapter(), D.ACTIONS, D.parse_action, epsilon=0.3, intervention="stop")
    v = f.certify(Context(state=D.observation_text(s[0])), "B")
    assert v.decision is Decision.HALT


def test_fallback_rollouts_from_exact_policy(grid):
    starts = D.sample_initial_states(30, seed=3)
    safe = grid.safe(starts)
    assert rollout_fallback(grid, starts[safe], steps=60).all()


def test_exact_filter_shields_random_driver(grid):
    from agentguard.bench.driving import rollout

    starts = D.sample_initial_states(40, seed=4)
    starts = starts[grid.safe(starts)]
    base = rollout(None, D.random_policy, starts, seed=0)
    # the coarse test grid (0.1) interpolates optimistically near the boundary: switch a little earlier
    shielded = rollout(make_filter("exact", grid=grid, epsilon=0.05), D.random_policy, starts, seed=0)
    assert shielded.failure.mean() == 0.0  # safe starts + exact filter: never fails
    assert base.failure.mean() > 0.2
    assert 0 < shielded.interventions < shielded.decisions


def test_llm_driver_base_policy_with_scripted_client():
    from agentguard.bench.llm_driver import LLMDriver
    from agentguard.llm import ScriptedClient

    client = ScriptedClient(["C", "Answer: A", "I refuse to drive"], cycle=True)
    drv = LLMDriver(client)
    acts = drv(D.sample_initial_states(3, seed=0), np.random.default_rng(0))
    assert acts[0] == 2 and acts[1] == 0 and acts[2] in (0, 1, 2)
    assert drv.unknown == 1 and drv.calls == 3
    assert "Answer with a single letter." in client.prompts[0][1]["content"]


def test_docs_example_runs():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "control.md").read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "docs/control.md", "exec"), {})
