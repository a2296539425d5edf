"""The built-in call-history state (agentguard.spec.history) and the state-function names."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.core import Context, Decision, InputError, Step, ToolCall, Trace
from agentguard.spec.expr import Expr
from agentguard.spec.history import history_state, result_label, state_function


def ctx(*steps):
    return Context(run_id="r", trace=Trace(list(steps)))


def done(name, obs="ok", decision=Decision.ALLOW, **args):
    return Step(action=ToolCall(name, args), observation=obs, signals={"decision": float(int(decision))})


def test_history_before_the_proposed_call():
    c = ctx(done("search", "3 pages"), done("delete", "refused", Decision.REJECT), done("read", "Error: denied"),
            Step(signals={"score": 1.0}))  # a step without a call is not a call
    s = history_state(c, ToolCall("send_email", {"to": "A@Evil.example", "cc": ["b"]}))
    assert s == {"n": 3, "tools": ["search", "read"], "refused": ["delete"], "results": ["ok", "error"],
                 "last": "read", "call": {"tool": "send_email", "args": {"to": "A@Evil.example", "cc": ["b"]},
                                          "text": 'a@evil.example ["b"]'}}
    json.dumps(s)  # recorded as JSON


def test_a_step_proposal_and_an_empty_run():
    s = history_state(Context(run_id="r"), Step(action=ToolCall("x", {})))
    assert s["n"] == 0 and s["last"] == "" and s["call"]["tool"] == "x"
    assert history_state(Context(run_id="r"), Step(state={"a": 1}))["call"] == {"tool": "", "args": {}, "text": ""}


def test_an_unguarded_step_counts_as_executed():
    c = ctx(Step(action=ToolCall("a", {}), observation=None))
    assert history_state(c, ToolCall("b", {}))["tools"] == ["a"]
    assert history_state(c, ToolCall("b", {}))["results"] == ["empty"]


@pytest.mark.parametrize("obs,label", [(None, "empty"), ("", "empty"), ("ok", "ok"), ("Traceback (most", "error"),
                                        ("  failed: x", "error"), ({"error": "x"}, "error"), ({"isError": True}, "error"),
                                        ({"a": 1}, "ok"), ("no errors", "ok")])
def test_result_labels(obs, label):
    assert result_label(obs) == label


def test_spec_expressions_read_it():
    s = history_state(ctx(done("read_secret")), ToolCall("send_email", {"to": "x@evil.example"}))
    assert Expr('"read_secret" in tools and call.tool == "send_email"').evaluate(s)
    assert Expr('"@corp.example" not in call.text').evaluate(s)


def test_state_function_names():
    assert state_function(None) is None and state_function("") is None
    assert state_function("history") is history_state
    assert state_function("agentguard.spec.history:history_state") is history_state
    f = lambda c, p: 1  # noqa: E731
    assert state_function(f) is f
    for bad, words in [("hist", "unknown state function 'hist'"), ("agentguard.spec.history:nope", "no such attribute"),
                       ("os:nope", "standard library"),  # refused before import since s22
                       ("agentguard.spec.history:NO_STATE_HINT", "not declared to build a state"), (3, "must be")]:
        with pytest.raises(InputError, match=words) as exc:
            state_function(bad)
        assert "\n" not in str(exc.value)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from(list(Decision)),
                          st.one_of(st.none(), st.text(max_size=8))), max_size=8))
def test_counts_add_up(calls):
    s = history_state(ctx(*[done(n, o, d) for n, d, o in calls]), ToolCall("z", {}))
    assert s["n"] == len(calls) == len(s["tools"]) + len(s["refused"])
    assert len(s["results"]) == len(s["tools"])
    assert s["tools"] == [n for n, d, _ in calls if d is Decision.ALLOW]
