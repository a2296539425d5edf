"""ToolRuleGuard (session 24): a call refused by its name at the strictest decision any rule of the guard gives is
answered without reading its arguments: the same decision and reason as reading them (the first of the strictest),
``details['violations']`` the name's only; where a rule below could give a stricter decision it is still read."""

import pytest
from hypothesis import given, settings, strategies as st

from agentguard import Context, Decision, ToolCall
from agentguard.core.guard import GuardStack
from agentguard.policies import rules
from agentguard.policies.rules import ArgumentRule, ToolRuleGuard

RULES = dict(allow=["read_file", "run_command"], deny=["exec"], deny_paths=["/etc/shadow"],
             allow_commands=["ls"], deny_commands=["rm -rf"])


def decide(guard, name, **args):
    return guard.check(Context(), ToolCall(name, args))


def test_refused_by_name_is_answered_unread():
    g = ToolRuleGuard(**RULES)
    assert g.strictest() is Decision.REJECT
    v = decide(g, "rent_car", path="/etc/shadow", command="rm -rf /")
    assert (v.decision, v.reason) == (Decision.REJECT, "tool rent_car is not in the allow list")
    assert v.details["violations"] == ["tool rent_car is not in the allow list"]
    v = decide(g, "exec", command="rm -rf /")  # denied and not allowed: both name violations, the first decides
    assert v.reason == "tool exec is denied" and v.details["violations"] == [
        "tool exec is denied", "tool exec is not in the allow list"]
    v = decide(g, "read_file", path="/etc/shadow")  # allowed by name: the arguments are read
    assert v.decision is Decision.REJECT and "denied" in v.reason


def test_a_stricter_rule_below_is_still_read():
    for g in (ToolRuleGuard(**RULES, unresolvable="halt"),
              ToolRuleGuard(**RULES, arguments=[ArgumentRule("*", "command", forbid="rm", decision="halt")])):
        assert g.strictest() is Decision.HALT
        v = decide(g, "rent_car", command="$(rm x) y")
        assert v.decision is Decision.HALT and len(v.details["violations"]) > 1
    g = ToolRuleGuard(**RULES, escalate=["book_*"])  # ESCALATE ranks above REJECT in the guard's own order
    v = decide(g, "rent_car", path="/etc/shadow")  # read: denied (and, as a write under /etc, a start-up file)
    assert v.decision is Decision.REJECT and len(v.details["violations"]) >= 2
    assert g.strictest() is Decision.REJECT  # (by strictness, as a stack combines: REJECT over ESCALATE)


def test_an_argument_the_reading_fails_on_is_read_when_refused_by_name():
    # the shell reader fails on a lone surrogate: not plain JSON, so read as before (the guard fails: on_error)
    with pytest.raises(Exception):
        decide(ToolRuleGuard(**RULES), "rent_car", command="/etc/shadow\udc80")


def test_refused_by_name_answers_as_reading_every_argument_in_a_stack():
    # red team s24: an argument the full reading fails on (a guard failure: the stack's on_error, HALT by default)
    # must give the old answer, not the name's REJECT: arguments that are not plain JSON are read as before
    g = ToolRuleGuard(**RULES, arguments=[ArgumentRule("*", "command", forbid="rm")])
    for args in ({"command": 10 ** 5000}, {"command": "/etc/shadow\udc80"}):
        for on_error in (Decision.HALT, Decision.REJECT):
            v = GuardStack([g], on_error=on_error).check(Context(), ToolCall("rent_car", args))
            assert v.decision is on_error and "failed" in v.reason, (args.keys(), on_error, v)
    v = GuardStack([g]).check(Context(), ToolCall("rent_car", {"command": "ls", "n": [1, 2.5, None, True]}))
    assert (v.decision, v.details["verdicts"][0]["details"]["violations"]) == (
        Decision.REJECT, ["tool rent_car is not in the allow list"])  # plain JSON: still answered unread


_TEXT = st.one_of(st.sampled_from(["rm -rf /", "/etc/shadow", "$(rm x) y", "ls", "a\udc80", "~/.ssh/id_rsa"]),
                  st.text(max_size=8))
_JSON = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.builds(pow, st.sampled_from([10, -2]), st.sampled_from([5000, 13001])),
                               st.floats(allow_nan=False), _TEXT),
                     lambda c: st.lists(c, max_size=3) | st.dictionaries(
                         st.sampled_from(["command", "path", "cmd", "x"]), c, max_size=3), max_leaves=8)


@settings(max_examples=150, deadline=None)
@given(args=st.dictionaries(st.sampled_from(["command", "path", "cmd", "x"]), _JSON, max_size=3),
       name=st.sampled_from(["rent_car", "exec", "read_file", "run_command"]),
       on_error=st.sampled_from([Decision.HALT, Decision.REJECT, Decision.ESCALATE]))
def test_refused_by_name_unread_is_the_answer_read(args, name, on_error):
    # the differential: the stack's answer (decision, reason, guard) with the unread refusal equals reading all
    g = ToolRuleGuard(**RULES, arguments=[ArgumentRule("*", "command", forbid="rm")])
    stack = GuardStack([g], on_error=on_error)
    fast = stack.check(Context(), ToolCall(name, args))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rules, "_plain", lambda arguments: False)  # never unread: the old path
        full = stack.check(Context(), ToolCall(name, args))
    assert (fast.decision, fast.reason, fast.guard) == (full.decision, full.reason, full.guard)
