"""The driving safety filter (envs.driving.guard): allows safe and recovers unsafe actions, falls back on
bad input, shields a random driver; the docs example runs."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from agentguard.envs.driving.guard import MyopicQ, TextStateAdapter, make_filter
from agentguard.control.filter import SafetyFilter
from agentguard.envs.driving.value_iteration import rollout_fallback, solve_driving
from agentguard.core import Context, Decision, Fallback, GuardStack
from agentguard.envs import driving as D


@pytest.fixture(scope="module")
def grid():
    return solve_driving(resolution=0.1, n_theta=32)


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

    text = (Path(__file__).resolve().parents[3] / "docs" / "control.md").read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "docs/control.md", "exec"), {})
