"""The flow-rule -> Pro2Guard bridge: its predicates are true exactly when the flow rule's condition is.

The oracle below is written from the rule's definition alone (its own name canonicaliser and glob), not
from :mod:`agentguard.policies.flow`; the guard and the bridge must both agree with it on random runs."""

from __future__ import annotations

import fnmatch
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentguard.core.errors import InputError
from agentguard.core.types import Context, Decision, Step, ToolCall, Trace
from agentguard.policies import FlowGuard
from agentguard.policies.flow_spec import flow_abstraction, flow_state, flow_state_fn, flow_states, predicate_name

TOOLS = ["read_inbox", "read_file", "get_user_info", "send_email", "send_money", "search"]
TRUSTED = ("get_user_info",)
RECIPIENTS = ["bob@example.com", "ann@example.com", "eve@evil.example", "BOB@EXAMPLE.COM"]


def canon(name: str) -> str:
    return re.sub(r"[\s_\-]+", "_", name.strip().lower())


def spelled(draw, name: str) -> str:
    sep = draw(st.sampled_from(["_", "-", " "]))
    case = draw(st.sampled_from([str.lower, str.upper, str.title]))
    return case(name.replace("_", sep)) + draw(st.sampled_from(["", " "]))


@st.composite
def calls(draw):
    name = draw(st.sampled_from(TOOLS))
    args = {}
    if draw(st.booleans()):
        args[draw(st.sampled_from(["to", "To", "recipient"]))] = draw(st.sampled_from(RECIPIENTS))
    return ToolCall(spelled(draw, name), args)


@st.composite
def rules(draw):
    return {"name": draw(st.sampled_from(["r-1", "inbox then mail", "x"])),
            "after": draw(st.sampled_from(["read_*", "read_inbox", "*", "get_*"])),
            "then": draw(st.sampled_from(["send_*", "send_email", "search"])),
            "label": draw(st.sampled_from(["any", "trusted", "untrusted"])),
            "within": draw(st.one_of(st.none(), st.integers(1, 4))),
            "recipients": draw(st.sampled_from([[], ["to"], ["to", "recipient"]])),
            "grant": ["*@example.com"]}


def label_of(call: ToolCall) -> str:
    return "trusted" if call.name in TRUSTED else "untrusted"  # trust is a grant: the name as written (session 18)


def oracle_armed(rule: dict, past: list[ToolCall]) -> bool:
    window = past if rule["within"] is None else past[max(0, len(past) - rule["within"]):]
    return any(fnmatch.fnmatchcase(canon(c.name), rule["after"]) and rule["label"] in ("any", label_of(c))
               for c in window)


def oracle_violated(rule: dict, past: list[ToolCall], call: ToolCall) -> bool:
    if not fnmatch.fnmatchcase(canon(call.name), rule["then"]):
        return False
    if rule["recipients"]:
        named = [v for k, v in call.arguments.items() if k.lower() in rule["recipients"]]
        outside = not named or any(not (v.lower().endswith("@example.com") and v.count("@") == 1) for v in named)
        if not outside:
            return False
    return oracle_armed(rule, past)


@settings(max_examples=150, deadline=None)
@given(rules(), st.lists(calls(), max_size=8), calls())
def test_bridge_predicates_and_guard_agree_with_the_rule_definition(rule, past, call):
    g = FlowGuard([rule], trusted_tools=list(TRUSTED))
    ab = flow_abstraction(g)
    name = predicate_name(g.rules[0])
    want = oracle_violated(rule, past, call)
    verdict = g.check(Context(trace=Trace([Step(action=c) for c in past])), call)
    assert (verdict.decision is Decision.REJECT) == want
    after = ab.valuation(ab.abstract(flow_state(g, past + [call])))
    before = ab.valuation(ab.abstract(flow_state(g, past)))
    assert after[f"{name}_violated"] == want
    assert before[f"{name}_armed"] == oracle_armed(rule, past)


def test_a_dtmc_learned_over_the_bridge_predicts_the_flow_violation():
    from agentguard.predictive import check, learn_dtmc

    g = FlowGuard([{"name": "inbox-then-mail", "after": "read_inbox", "then": "send_email", "recipients": ["to"],
                    "grant": ["*@example.com"]}])
    ab = flow_abstraction(g, terminal="end")  # every run ends in an absorbing "end" state
    read, bad, good = ToolCall("read_inbox", {}), ToolCall("send_email", {"to": "eve@evil.example"}), \
        ToolCall("send_email", {"to": "bob@example.com"})
    runs = [[read, bad]] * 3 + [[read, good]] * 7 + [[good]] * 10
    traces = [flow_states(g, Trace([Step(action=c) for c in r])) for r in runs]
    model = learn_dtmc(traces, ab, alpha=0)
    assert model.labels["unsafe"][model.state_names.index("11")]  # armed and violated
    risk = check(model, 'P=? [F "unsafe"]').values
    armed = model.state_names.index("10")
    # from "armed": 3 -> violated, 7 -> armed again (a granted send), 7 -> end: x = 3/17 + 7/17 x, x = 0.3,
    # the 3 in 10 runs that read the inbox and went on to violate
    assert abs(risk[armed] - 0.3) < 1e-9
    assert risk[model.state_names.index("00")] == 0.0
    # end to end: a ProactiveGuard over that DTMC, the state from the Pipeline's run, refuses the call made
    # in the armed state (P_safe 0.7 < 0.8) before any violating send is proposed
    from agentguard.core.pipeline import Pipeline
    from agentguard.predictive import ProactiveGuard

    pl = Pipeline(ProactiveGuard(model, "G !unsafe", 0.8, abstraction=ab.abstract), state_fn=flow_state_fn(g))
    first = pl.decide("p", read)
    pl.record(first)
    second = pl.decide("p", good)
    assert first.execute and not second.execute and "0.700" in second.verdict.reason


def test_states_come_from_a_recorded_trace_and_names_become_identifiers():
    g = FlowGuard([{"name": "9 web->shell", "after": "get_webpage", "then": "run_*"}])
    assert predicate_name(g.rules[0]) == "r_9_web_shell"
    trace = Trace([Step(action=ToolCall("get_webpage", {})), Step(output="text"), Step(action=ToolCall("run_x", {}))])
    states = flow_states(g, trace)
    ab = flow_abstraction(g)
    assert [ab.abstract(s) for s in states] == ["10", "11"]
    with pytest.raises(InputError, match="not a tool call"):
        flow_state(g, [42])
    with pytest.raises(InputError, match="same predicate name"):
        flow_abstraction(FlowGuard([{"name": "a-b", "after": "x", "then": "y"}, {"name": "a b", "after": "x", "then": "y"}]))
