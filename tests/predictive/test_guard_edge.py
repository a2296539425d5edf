"""The proactive guard on inputs nobody showed us: random DTMCs against exact rational arithmetic (absorbing
states, self-loops only, unreachable unsafe states), P_safe exactly at the threshold, P_safe values that are
not probabilities (NaN compares false with every threshold, so it used to ALLOW), unseen states (never
decided silently), and model files whose state indices numpy would silently misread."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentguard import Context, Decision
from agentguard.core.errors import ModelError
from agentguard.predictive import DTMC, ProactiveGuard
from agentguard.predictive import guard as guard_mod
from agentguard.spec import UNSEEN_POLICIES

from .test_checker import exact_until


@st.composite
def exact_chains(draw):
    """A random DTMC with exact rational rows over bit-vector states; some rows absorbing (self-loop),
    some rows a self-loop plus exits, an unsafe label that may be empty or unreachable."""
    n = draw(st.integers(1, 7))
    rows: list[dict[int, Fraction]] = []
    for i in range(n):
        kind = draw(st.sampled_from(["absorbing", "random", "random", "selfloop+exit"]))
        if kind == "absorbing":
            rows.append({i: Fraction(1)})
            continue
        succ = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=min(n, 4), unique=True))
        if kind == "selfloop+exit" and i not in succ:
            succ.append(i)
        w = [draw(st.integers(1, 9)) for _ in succ]
        rows.append({j: Fraction(x, sum(w)) for j, x in zip(succ, w)})
    unsafe = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    return rows, unsafe


def _model(rows, unsafe) -> DTMC:
    n = len(rows)
    P = sp.lil_matrix((n, n))
    for i, r in enumerate(rows):
        for j, p in r.items():
            P[i, j] = float(p)
    width = max(1, (n - 1).bit_length()) + 1
    names = [format(i, f"0{width - 1}b") + ("1" if unsafe[i] else "0") for i in range(n)]
    return DTMC(P.tocsr(), 0, {"unsafe": unsafe}, state_names=names).validate()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(exact_chains(), st.fractions(0, 1, max_denominator=12))
def test_safety_values_and_decisions_match_exact_fractions(chain, theta):
    """P_safe(s) = 1 - P_s[F unsafe] for every state, against Gauss-Jordan over Fractions; the decision
    is exactly ``P_safe < theta`` (Algorithm 2) wherever the float value is not within 1e-9 of theta."""
    rows, unsafe = chain
    model = _model(rows, unsafe)
    exact = [1 - x for x in exact_until(rows, np.ones(len(rows), bool), unsafe)]
    g = ProactiveGuard(model, "G !unsafe", float(theta))
    assert np.allclose(g.values_, [float(x) for x in exact], atol=1e-9, rtol=0)
    for i, name in enumerate(model.state_names):
        v = g.check(Context(state=name))
        if abs(exact[i] - theta) > Fraction(1, 10**9):
            assert (v.decision == Decision.ALLOW) == (exact[i] >= theta), (name, exact[i], theta)
        assert "unseen" not in v.details


def test_probability_exactly_at_the_threshold_allows_and_one_ulp_above_alarms():
    """Alarm iff P_safe < theta: a state whose P_safe is exactly 1/2 passes theta = 0.5 and alarms at the
    next float above it; theta = 0 never alarms, theta = 1 alarms on every state that can reach unsafe."""
    P = sp.csr_matrix(np.array([[0, .5, .5], [0, 1, 0], [0, 0, 1]]))
    m = DTMC(P, 0, {"unsafe": np.array([0, 0, 1], bool)}, state_names=["000", "010", "101"]).validate()
    g = ProactiveGuard(m, threshold=0.5)
    assert g.values_[0] == 0.5
    assert g.check(Context(state="000")).decision == Decision.ALLOW
    assert g.with_threshold(math.nextafter(0.5, 1)).check(Context(state="000")).decision == Decision.REJECT
    assert g.with_threshold(0.0).check(Context(state="101")).decision == Decision.ALLOW
    assert g.with_threshold(1.0).check(Context(state="000")).decision == Decision.REJECT
    assert g.with_threshold(1.0).check(Context(state="010")).decision == Decision.ALLOW


def _tiny() -> DTMC:
    return DTMC(sp.identity(2, format="csr"), 0, {"unsafe": np.array([False, True])},
                state_names=["00", "01"]).validate()


@pytest.mark.parametrize("values", [[float("nan"), 0.0], [2.0, 0.0], [0.5, -0.25], [float("inf"), 1.0],
                                    [0.5], ["a", "b"]])
def test_values_that_are_not_probabilities_are_refused(values):
    """``nan < theta`` is False, so a NaN P_safe used to ALLOW every step at every threshold."""
    with pytest.raises(ModelError) as e:
        ProactiveGuard(_tiny(), values=values, threshold=0.5)
    assert "\n" not in str(e.value)


def test_values_rounded_just_outside_the_unit_interval_are_clipped():
    g = ProactiveGuard(_tiny(), values=[1 + 1e-12, -1e-12], threshold=0.0)
    assert g.values_.tolist() == [1.0, 0.0]
    assert g.check(Context(state="01")).decision == Decision.ALLOW  # P_safe = 0 is not < 0


@pytest.mark.parametrize("policy", [p for p in UNSEEN_POLICIES if p != "error"])
def test_an_unseen_state_is_never_decided_silently(policy):
    """Whatever the policy answers, the verdict names the state as unseen and says what stood in for it."""
    g = ProactiveGuard(_tiny(), threshold=0.5, unseen=policy)
    for state in ("10", "11", "1", "xyz", ""):
        v = g.check(Context(state=state))
        assert "unseen" in v.details, (policy, state, v)
        if v.decision == Decision.ALLOW:
            assert "unseen" in v.reason
    assert g.check(Context(state="11")).decision != Decision.ALLOW  # its unsafe bit is set
    assert "unseen" not in g.check(Context(state="00")).details


def test_the_unseen_cache_is_bounded(monkeypatch):
    """Run-time states are attacker-chosen: a stream of fresh ones must not grow the guard's memory."""
    monkeypatch.setattr(guard_mod, "_UNSEEN_CACHE_MAX", 8)
    g = ProactiveGuard(_tiny(), threshold=0.5, unseen="nearest")
    for i in range(100):
        state = format(i, "07b") + "0"
        g.check(Context(state=state))
        assert len(g._unseen_cache) <= 8
    assert g.check(Context(state="10")).details["unseen"].startswith("known state 00")


@pytest.mark.parametrize("field,value", [
    ("labels", {"unsafe": [-1]}),          # numpy reads -1 as the last state
    ("labels", {"unsafe": [0.7]}),         # astype(int) truncates to state 0
    ("labels", {"unsafe": [2]}),
    ("initial", 0.9), ("initial", True), ("initial", -1), ("initial", "0"),
    ("n", 2.5), ("n", 0), ("n", float("inf")), ("n", float("nan")),
    ("transitions", [[0, 0, 1.0], [-1, -1, 1.0]]),
    ("transitions", [[0, 0, 1.0], [1.5, 1, 1.0]]),
    ("counts", [[0, 0, -3.0]]), ("counts", [[0, 0, float("nan")]]), ("counts", [[0, -1, 1.0]]),
])
def test_model_files_with_misread_indices_are_refused(field, value):
    d = _tiny().to_json_dict()
    d[field] = value
    with pytest.raises(ModelError) as e:
        DTMC.from_json_dict(json.loads(json.dumps(d, allow_nan=True)))
    assert "\n" not in str(e.value)


def test_a_well_formed_model_file_still_round_trips(tmp_path):
    m = _tiny()
    m.counts = sp.csr_matrix(np.array([[3.0, 0], [0, 1.0]]))
    m.save(tmp_path / "m.json")
    back = DTMC.load(tmp_path / "m.json")
    assert back.labels["unsafe"].tolist() == [False, True] and back.counts.toarray().tolist() == [[3, 0], [0, 1]]


def test_two_states_of_one_name_are_refused():
    """The guard's table is keyed by name: the second state of a name silently replaced the first."""
    with pytest.raises(ModelError, match="'00' names two states"):
        DTMC(sp.identity(2, format="csr"), 0, {"unsafe": np.array([False, True])}, state_names=["00", "00"]).validate()


# --- red team: an unseen state never reads safer than the riskiest comparable known state ------------
def _loops(names, unsafe):
    n = len(names)
    return DTMC(sp.identity(n, format="csr"), 0, {"unsafe": np.array(unsafe, bool)}, {}, list(names))


def test_an_unseen_state_next_to_a_safe_one_is_not_read_as_safe_by_default():
    """Attack: a run reaches "100", never seen in training, one bit from the safe "000" and two from the
    unsafe "111". Before (default ``nearest``): it read as "000", P_safe = 1, ALLOW. Now (default
    ``pessimistic``): the riskiest comparable known state stands in, P_safe = 0, REJECT; ``nearest``
    is still there when named."""
    m = _loops(["000", "111"], [False, True])
    v = ProactiveGuard(m, "G !unsafe", 0.5, unsafe_bit=None).check(Context(state="100"))
    assert v.decision is Decision.REJECT and v.numbers["probability"] == 0.0 and "unseen" in v.details
    near = ProactiveGuard(m, "G !unsafe", 0.5, unsafe_bit=None, unseen="nearest").check(Context(state="100"))
    assert near.decision is Decision.ALLOW and "unseen" in near.details


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text("01", min_size=3, max_size=3), st.floats(0, 1), min_size=1, max_size=7),
       st.text("01", min_size=1, max_size=4))
def test_by_default_an_unseen_state_gets_the_lowest_comparable_p_safe(known, state):
    names = sorted(known)
    vals = [known[s] for s in names]
    g = ProactiveGuard(_loops(names, [False] * len(names)), "G !unsafe", 0.5, values=vals, unsafe_bit=None)
    p, _ = g.probability(state)
    if state in known:
        assert p == known[state]
    elif len(state) == 3:
        assert p == min(vals)
    else:
        assert p == 0.0  # no comparable state: unsafe
