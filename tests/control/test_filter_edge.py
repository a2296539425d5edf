"""The safety filter on values it cannot trust: a NaN Q-value never allows (``nan <= epsilon`` is False, so
the batch path used to let it through), a Q-vector of the wrong length is an unreadable observation (it used
to raise IndexError, or ALLOW with a fallback index past the action list), and bad parameters fail at
construction with one line."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.control import SafetyFilter
from agentguard.core import Context, Decision
from agentguard.core.errors import InputError


class _Enc:
    def encode(self, xs):
        return np.zeros((len(xs), 1))


class _Q:
    def __init__(self, values):
        self.values = np.asarray(values, float)

    def q_values(self, z):
        return np.tile(self.values, (len(z), 1))


ACTIONS = ["a", "b", "c"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([math.nan, -math.inf, math.inf, -1.0, 0.0, 0.5, 2.0]), min_size=3, max_size=3),
       st.integers(0, 2), st.sampled_from([-0.5, 0.0, 0.25]))
def test_batch_and_single_decisions_never_allow_what_is_not_certified(q, a, eps):
    """Allowed iff Q(z, a) > epsilon and finite; a fallback is never a NaN entry (when one is finite)."""
    filt = SafetyFilter(_Q(q), _Enc(), ACTIONS, epsilon=eps, default_action=0)
    inter, exe = filt.decide_batch(np.array([q]), np.array([a]))
    assert bool(inter[0]) == (not q[a] > eps)
    if not inter[0]:
        assert exe[0] == a
    elif not all(math.isnan(x) for x in q):  # a readable value exists: the fallback is one
        assert not math.isnan(q[exe[0]])
    v = filt.certify(Context(run_id="r", state="obs"), ACTIONS[a])
    certified = all(math.isfinite(x) for x in q) and q[a] > eps
    assert (v.decision == Decision.ALLOW) == certified, (q, a, eps, v)


@pytest.mark.parametrize("values", [[1.0, 2.0], [1.0, 2.0, 3.0, 9.0], [5.0]])
def test_a_q_vector_of_the_wrong_length_is_unreadable_not_a_crash(values):
    filt = SafetyFilter(_Q(values), _Enc(), ACTIONS, default_action=1)
    v = filt.certify(Context(run_id="r", state="obs"), "a")
    assert v.decision == Decision.RECOVER and v.action == "b" and "values for 3 actions" in v.reason
    with pytest.raises(InputError, match="shape"):
        filt.decide_batch(np.array([[1.0, 2.0]]), np.array([0]))
    with pytest.raises(InputError, match="indices"):
        filt.decide_batch(np.array([[1.0, 2.0, 3.0]]), np.array([3]))


@pytest.mark.parametrize("kwargs,match", [
    ({"epsilon": math.nan}, "epsilon"), ({"epsilon": math.inf}, "epsilon"), ({"epsilon": "x"}, "epsilon"),
    ({"default_action": 3}, "default_action"), ({"default_action": -1}, "default_action"),
    ({"default_action": True}, "default_action"), ({"default_action": 1.0}, "default_action"),
])
def test_bad_parameters_fail_at_construction(kwargs, match):
    with pytest.raises(InputError, match=match) as e:
        SafetyFilter(_Q([1.0, 2.0, 3.0]), _Enc(), ACTIONS, **kwargs)
    assert "\n" not in str(e.value)
    with pytest.raises(InputError, match="at least one action"):
        SafetyFilter(_Q([]), _Enc(), [])


def test_an_unknown_value_with_no_fallback_halts():
    v = SafetyFilter(_Q([math.nan] * 3), _Enc(), ACTIONS).certify(Context(run_id="r", state="obs"), "a")
    assert v.decision == Decision.HALT


# --- red team: observation texts outside any training distribution ------------------------------------
from agentguard.control.encoders import check_texts  # noqa: E402
from agentguard.core.errors import ParseError  # noqa: E402


class _TextQ:
    """A Q-function that says "safe" (Q = 1) for every latent it is given: whatever reaches it is read
    as safe, so only the encoder's gate can refuse."""

    def q_values(self, z):
        return np.ones((len(z), len(ACTIONS)))


class _LenEnc:
    """A stand-in text encoder behind the one text gate (every encoder calls check_texts)."""

    def encode(self, xs):
        return np.array([[len(t)] for t in check_texts(xs)], float)


BLANK = ["", "   ", "\n\t", "\u200b\u200b", "\ufeff", "\u200d \u2060", "\u202e"]


@pytest.mark.parametrize("text", BLANK)
def test_an_observation_with_nothing_visible_never_reads_as_safe(text):
    """Attack: an empty, blank or zero-width-only observation. Before: WordLlama embedded "" as NaN
    (refused) but "   " and "\\u200b\\u200b" as ordinary finite latents, which the Q-function read like
    any other state (here: safe, ALLOW). Now: ParseError at the text gate, so the filter intervenes."""
    with pytest.raises(ParseError, match="no visible text"):
        check_texts([text])
    f = SafetyFilter(_TextQ(), _LenEnc(), ACTIONS, default_action=1)
    v = f.certify(Context(run_id="r", state=text), "a")
    assert v.decision is Decision.RECOVER and v.action == "b" and "no visible text" in v.reason


def test_the_gate_reads_text_as_a_reader_sees_it():
    """Zero-width characters inside words and fullwidth letters are read as the plain text (the encoder
    embeds the words a reader sees, not the split tokens); ASCII passes unchanged (same object)."""
    assert check_texts(["pede\u200bstrian a\u200chead", "\uff53\uff54\uff4f\uff50"]) == ["pedestrian ahead", "stop"]
    t = "The goal is 3.00 m down the track."
    assert check_texts([t])[0] is t


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(codec="utf-8"), max_size=30))
def test_the_gate_never_passes_an_invisible_text(text):
    try:
        out = check_texts([text])
    except ParseError:
        return
    assert out[0].strip() and not any(ch in out[0] for ch in "\u200b\u200c\u200d\u2060\ufeff\u202e")


# --- red team: a fallback that is itself uncertified -------------------------------------------------
def test_a_fallback_that_is_the_unsafe_proposal_itself_is_marked_or_stopped():
    """Attack: a state where no action is certified and the proposal is the argmax. Before: RECOVER
    "replaced" the proposal by itself (the same uncertified action executed, the verdict silent about
    it). Now: ``fallback_certified`` is False on it, and ``uncertified="stop"`` answers HALT."""
    q = _Q([-1.0, -2.0, -3.0])
    v = SafetyFilter(q, _Enc(), ACTIONS).certify(Context(run_id="r", state="s"), "a")
    assert v.decision is Decision.RECOVER and v.action == "a" and v.details["fallback_certified"] is False
    v = SafetyFilter(q, _Enc(), ACTIONS, uncertified="stop").certify(Context(run_id="r", state="s"), "a")
    assert v.decision is Decision.HALT and v.action is None
    ok = SafetyFilter(_Q([1.0, -2.0, 0.5]), _Enc(), ACTIONS, uncertified="stop").certify(Context(run_id="r", state="s"), "b")
    assert ok.decision is Decision.RECOVER and ok.action == "a" and ok.details["fallback_certified"] is True
    with pytest.raises(InputError, match="uncertified"):
        SafetyFilter(q, _Enc(), ACTIONS, uncertified="maybe")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([math.nan, -math.inf, -1.0, 0.0, 1e-9, 0.5, 2.0]), min_size=3, max_size=3),
       st.sampled_from(["a", "b", "c", "zz", 7]), st.sampled_from([-0.5, 0.0, 0.25]), st.booleans())
def test_with_uncertified_stop_no_executed_action_is_uncertified(q, proposal, eps, readable):
    """Property: under ``uncertified="stop"`` an action leaves the filter (ALLOW's proposal, RECOVER's
    fallback) only when its Q-value is finite and above epsilon in the current state."""
    f = SafetyFilter(_Q(q), _Enc(), ACTIONS, epsilon=eps, default_action=0, uncertified="stop")
    f.certify(Context(run_id="r", state="s0"), "a")  # a previous state: its fallback is remembered
    v = f.certify(Context(run_id="r", state="s1" if readable else None), proposal)
    executed = proposal if v.decision is Decision.ALLOW else v.action
    if executed is not None:
        assert readable
        qa = q[ACTIONS.index(executed)]
        assert math.isfinite(qa) and qa > eps


def test_a_boolean_is_not_an_action_index():
    """Attack: the proposal True (an int to isinstance) was read as action 1 and ALLOWed where Q(z, b)
    is certified. Now: an unknown action, replaced by the fallback."""
    f = SafetyFilter(_Q([1.0, 2.0, -1.0]), _Enc(), ACTIONS)
    for bad in (True, np.bool_(True), False):
        v = f.certify(Context(run_id="r", state="s"), bad)
        assert v.decision is Decision.RECOVER and "unknown action" in v.reason
    assert f.certify(Context(run_id="r", state="s"), 1).decision is Decision.ALLOW


@pytest.mark.parametrize("proposed", [[1.7], [True], ["1"], [float("nan")]])
def test_decide_batch_refuses_proposals_that_are_not_action_indices(proposed) -> None:
    """Session 21: ``np.asarray(proposed, dtype=int)`` truncated 1.7 to action 1 and read True as 1."""
    f = SafetyFilter(q=None, encoder=None, actions=["a", "b"])  # decide_batch needs neither
    with pytest.raises(InputError):
        f.decide_batch(np.array([[0.5, 0.5]]), np.array(proposed))
