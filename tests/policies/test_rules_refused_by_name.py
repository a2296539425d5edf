"""ToolRuleGuard (session 24): a call refused by its name at the strictest decision any rule of the guard gives is
answered without reading its arguments: the same decision and reason as reading them (the first of the strictest),
``details['violations']`` the name's only; where a rule below could give a stricter decision it is still read."""

from agentguard import Context, Decision, ToolCall
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
    v = decide(g, "rent_car", path="/etc/shadow")
    assert v.decision is Decision.REJECT and len(v.details["violations"]) == 2
    assert g.strictest() is Decision.REJECT  # (by strictness, as a stack combines: REJECT over ESCALATE)


def test_an_argument_the_reading_fails_on_is_not_met_when_refused_by_name():
    # the shell reader fails on a lone surrogate (a guard failure: the stack's on_error); refused by name, it is unread
    v = decide(ToolRuleGuard(**RULES), "rent_car", command="/etc/shadow\udc80")
    assert (v.decision, v.reason) == (Decision.REJECT, "tool rent_car is not in the allow list")
