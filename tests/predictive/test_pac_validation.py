"""The PAC stopping rule's (epsilon, delta) at small sample sizes, by simulation against the known chain
(session 21): learn until the conservative rule holds, count how often the learned reachability is off
by more than epsilon. Large epsilon and delta make the rule stop after 10 to 60 traces, where a
plug-in rule is most likely to stop too early; a rare unsafe event (2 %) is the hard case."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agentguard.predictive.pac_validation import simulate_guarantee

CHAINS = {
    "rare": (np.array([[0, .02, .98], [0, 1, 0], [0, 0, 1.]]), np.array([0, 1, 0], bool)),
    "coin": (np.array([[0, .5, .5], [0, 1, 0], [0, 0, 1.]]), np.array([0, 1, 0], bool)),
}


@pytest.mark.parametrize("name", sorted(CHAINS))
@pytest.mark.parametrize("eps,delta", [(0.3, 0.2), (0.2, 0.2)])
def test_small_sample_stops_keep_epsilon_delta(name: str, eps: float, delta: float) -> None:
    P, target = CHAINS[name]
    reps = 100
    r = simulate_guarantee(P, 0, target, P > 0, eps, delta, reps, seed=5, first_batch=5, growth=0.1)
    assert r["max_traces_hit"] == 0
    assert max(r["traces"]) < 200  # the small-sample regime this test is about
    slack = 3 * math.sqrt(delta * (1 - delta) / reps)
    assert r["failure_rate_all_states"] <= delta + slack
