"""The fresh-start protocol of the frozen driving guards (issue 31): statistics against oracles, held-out
renderings that carry the same numbers, the lockstep rollout against bench.driving's, no training."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.bench import driving_fresh as F
from agentguard.core.errors import InputError
from agentguard.envs import driving as D

NUM = re.compile(r"-?\d+(?:\.\d+)?")


@given(st.integers(0, 40), st.integers(0, 40))
@settings(max_examples=60, deadline=None)
def test_mcnemar_is_the_exact_binomial_test(b, c):
    scipy_stats = pytest.importorskip("scipy.stats")
    want = 1.0 if b + c == 0 else scipy_stats.binomtest(b, b + c, 0.5).pvalue
    assert F.mcnemar_p(b, c) == pytest.approx(want, rel=1e-9, abs=1e-12)


def test_bootstrap_interval_brackets_the_rate_and_is_seeded():
    x = (np.random.default_rng(0).random(400) < 0.2).astype(float)
    lo, hi = F.bootstrap_ci(x, seed=3)
    assert lo < x.mean() < hi and hi - lo < 0.1
    assert F.bootstrap_ci(x, seed=3) == (lo, hi)
    assert F.bootstrap_ci(np.zeros(5), np.zeros(5)) is None and F.bootstrap_ci(np.zeros(0)) is None
    w = np.array([10.0, 10.0, 10.0])
    v = np.array([1.0, 2.0, 3.0])
    lo, hi = F.bootstrap_ci(v, w)  # a ratio of sums: within the per-row ratios
    assert 0.1 <= lo <= 0.2 <= hi <= 0.3


def test_paired_comparison_counts_discordant_starts():
    a = np.array([1, 1, 0, 0, 1], bool)
    b = np.array([1, 0, 0, 1, 0], bool)
    p = F.paired_comparison(a, b)
    assert (p["a_fails_b_not"], p["b_fails_a_not"], p["both_fail"]) == (2, 1, 1)
    assert p["failure_difference"] == pytest.approx(0.2)
    assert p["mcnemar_p"] == F.mcnemar_p(2, 1)


STATES = st.tuples(st.floats(0.0, D.GOAL_X), st.floats(0.05, 2.95), st.floats(-3.1, 3.1))


@given(STATES)
@settings(max_examples=40, deadline=None)
def test_number_format_templates_carry_the_canonical_numbers(s):
    state = np.array(s)
    canon = D.parse_observation(D.observation_text(state))
    for name, tol in (("one_decimal", 0.051), ("three_decimals", 0.0051), ("integers", 0.51)):
        text = F.TEMPLATES[name](state)
        assert text != D.observation_text(state) or name == "three_decimals"
        got = D.parse_observation(text)  # the same sentences: the canonical parser reads them
        for k, v in canon.items():
            assert abs(got[k] - v) <= tol + 0.006 * ("bearing" in k or k == "heading") * 100, (name, k)


@given(STATES)
@settings(max_examples=40, deadline=None)
def test_reworded_and_reordered_templates_hold_the_same_numbers(s):
    state = np.array(s)
    canon = sorted(NUM.findall(D.observation_text(state)))
    assert sorted(NUM.findall(F.TEMPLATES["reordered"](state))) == canon
    reworded = F.TEMPLATES["reworded"](state)
    assert reworded != D.observation_text(state)
    nums = [x for x in NUM.findall(reworded) if x not in {"1", "2", "3", "4"} or "." in x]
    assert sorted(nums) == sorted(x for x in canon)  # obstacle numbers "1".."4" are labels, not readings


@pytest.fixture(scope="module")
def small_grid():
    from agentguard.envs.driving.value_iteration import solve_driving

    return solve_driving(0.1, 32)


def test_shield_rollout_matches_bench_rollout_on_the_exact_filter(small_grid):
    from agentguard.bench.driving import rollout
    from agentguard.envs.driving.guard import make_filter

    starts = D.sample_initial_states(40, seed=11)
    filt = make_filter("exact", grid=small_grid)
    mine = F.shield_rollout(filt, D.weak_driver_policy, starts, small_grid, seed=4)
    ref = rollout(filt, D.weak_driver_policy, starts, seed=4)
    np.testing.assert_array_equal(mine["failure"], ref.failure)
    np.testing.assert_array_equal(mine["success"], ref.success)
    assert int(mine["interventions"].sum()) == ref.interventions and int(mine["steps"].sum()) == ref.decisions
    # the exact filter calls (almost) no exactly-safe proposal unsafe: it switches at V <= tol
    assert mine["wrongly_unsafe"].sum() <= 0.05 * mine["safe_proposals"].sum()
    none = F.shield_rollout(None, D.weak_driver_policy, starts, small_grid, seed=4)
    assert none["wrongly_unsafe"].sum() == 0 and none["interventions"].sum() == 0
    s = F.summarize(mine, small_grid.safe(starts), seed=0)
    assert s["crash_from_exactly_safe"]["starts"] == int(small_grid.safe(starts).sum())
    assert s["failures"] == int(mine["failure"].sum()) and 0 <= s["failure_rate"] <= 1


def test_blend_proposals_replace_the_shield(small_grid):
    from agentguard.envs.driving.guard import make_filter

    starts = D.sample_initial_states(10, seed=2)
    filt = make_filter("exact", grid=small_grid)
    r = F.shield_rollout(filt, D.weak_driver_policy, starts, small_grid, seed=0,
                         propose=lambda s, q, rng: q.argmax(1))  # the critic's greedy policy
    assert r["steps"].sum() > 0 and r["interventions"].sum() <= r["steps"].sum()


def test_frozen_filters_never_train(tmp_path, small_grid):
    with pytest.raises(InputError, match="frozen privileged critic not found"):
        F.frozen_filters(small_grid, results=tmp_path, names=("privileged",))
    with pytest.raises(InputError, match="unknown guard"):
        F.frozen_filters(small_grid, results=tmp_path, names=("myopic",))
    f = F.frozen_filters(small_grid, results=tmp_path, names=("no_guard", "exact"))
    assert f["no_guard"] is None and f["exact"].name == "exact"


@pytest.mark.slow
def test_cli_eval_seed_scores_the_committed_critics(capsys):
    pytest.importorskip("torch")
    from agentguard.cli import main

    try:
        main(["bench", "driving", "--eval-seed", "3", "--episodes", "12", "--guards", "no_guard,exact,privileged",
              "--json", "--quiet"])
    except SystemExit as exc:
        assert exc.code in (0, None)
    rep = json.loads(capsys.readouterr().out)
    assert rep["eval_seed"] == 3 and rep["episodes"] == 12 and set(rep["guards"]) == {"no_guard", "exact", "privileged"}
    assert "--eval-seed 3" in rep["command"] and "privileged_vs_exact" in rep["paired"]
    assert len(rep["outcomes"]["privileged"]["failure"]) == 12
    assert rep["guards"]["no_guard"]["failure_rate"] >= rep["guards"]["exact"]["failure_rate"]
