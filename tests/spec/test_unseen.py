"""The unseen-state policies (spec.unseen) as a spec file applies them."""

from __future__ import annotations

import numpy as np
import pytest

from agentguard import InputError
from agentguard.spec.predicates import resolve_state


def test_unseen_state_policies():
    known = ["0000", "0011", "1100", "finish"]
    risk = np.array([0.1, 0.7, 0.4, 0.0])
    assert resolve_state("0011", known, "error") == 1
    assert resolve_state("0001", known, "nearest", risk) == 1  # distance 1 to 0011 vs 1 to 0000: ties to riskier
    assert resolve_state("0001", known, "nearest") == 0  # no risks: lowest index
    assert resolve_state("1000", known, "nearest", risk) == 2
    assert resolve_state("1000", known, "pessimistic", risk) == 1
    with pytest.raises(InputError, match="unknown state '1000'"):
        resolve_state("1000", known, "error")
    with pytest.raises(InputError, match="needs per-state risks"):
        resolve_state("1000", known, "pessimistic")
    with pytest.raises(InputError, match="unseen policy"):
        resolve_state("1000", known, "magic")


def test_the_unsafe_bit_wins_over_every_policy_but_error():
    """A state whose own unsafe bit is set was resolved as safe under 'allow' (P_safe = 1): the bit is
    now read before the policy. An unsafe_bit outside the state's width is no bit at all (no IndexError)."""
    import pytest as _pytest

    from agentguard.core.errors import InputError as _InputError
    from agentguard.spec.unseen import UNSEEN_POLICIES as _POLICIES, resolve_unseen as _resolve

    known = ["000", "010"]
    for policy in _POLICIES:
        if policy == "error":
            with _pytest.raises(_InputError):
                _resolve("011", known, policy, [0.0, 0.0], unsafe_bit=-1)
            continue
        r = _resolve("011", known, policy, [0.0, 0.0], unsafe_bit=-1)
        assert r.index is None and r.unsafe, (policy, r)
        assert _resolve("110", known, policy, [0.0, 0.0], unsafe_bit=-1).unsafe is (policy == "alarm")
    assert _resolve("110", known, "nearest", None, unsafe_bit=7).index in (0, 1)
