"""Proposals as the one decision path reads them (agentguard.core.proposal)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentguard.core import Decision, InputError, Step, ToolCall, Verdict, approval_request, call_key
from agentguard.core.proposal import to_proposal
from agentguard.core.enforcement import Outcome


def test_to_proposal_types_once_and_refuses_the_rest() -> None:
    tc = ToolCall("a", {"x": 1}, "i")
    assert to_proposal(tc) is tc
    assert to_proposal({"name": "a", "arguments": {"x": 1}, "id": "i"}) == tc
    assert to_proposal({"name": "a"}) == ToolCall("a", {}, "")
    s = Step(state={"k": 1})
    assert to_proposal(s) is s
    for bad in (None, 3, "rm -rf /", ["a"], {"arguments": {}}, {"name": "a", "arguments": ["x"]}, {"name": 5}):
        with pytest.raises(InputError):
            to_proposal(bad)


def test_call_key_is_canonical() -> None:
    assert call_key(ToolCall("a", {"x": 1, "y": 2}, "i")) == call_key(ToolCall("a", {"y": 2, "x": 1}, "j"))
    assert call_key(ToolCall("a", {"x": float("inf")})) != call_key(ToolCall("a", {"x": None}))
    assert call_key(ToolCall("a", {"x": float("inf")})) != call_key(ToolCall("a", {"x": float("-inf")}))
    assert call_key(ToolCall("a", {"x": 1})) != call_key(ToolCall("b", {"x": 1}))
    assert call_key(Step(state={"s": 1})) != call_key(Step(state={"s": 2}))


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
                    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3),
                    max_leaves=8)


@given(a=JSON, b=JSON)
def test_call_key_differs_when_the_arguments_differ(a: object, b: object) -> None:
    same = call_key(ToolCall("t", {"v": a})) == call_key(ToolCall("t", {"v": b}))
    # equal keys only for equal values (and 1 == 1.0 == True are not conflated: JSON spells them apart)
    if same:
        assert repr(a) == repr(b) or a == b


def test_approval_request_shows_every_verdict() -> None:
    trail = [Verdict.allow("g1").to_dict(), Verdict(Decision.ESCALATE, "needs a human", "g2").to_dict()]
    v = Verdict(Decision.ESCALATE, "needs a human", "g2", details={"verdicts": trail})
    req = approval_request(Outcome(False, None, verdict=v, ask=True, proposal=ToolCall("pay", {"a": 1})))
    assert req["call"]["name"] == "pay" and [t["guard"] for t in req["verdicts"]] == ["g1", "g2"]
    assert "g1" in req["text"] and "g2" in req["text"]
