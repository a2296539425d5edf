"""The MCP driver (tests/integrations/drivers/mcp.py) over both proxy paths (stdio relay, SDK server) and
both protocol eras, with a real MCP client and a real upstream MCP server:

(a) random turns (duplicate, empty and missing call ids; parallel calls in one turn) against a stack
    that denies ``delete_*``: no refused call ever runs; every allowed call runs exactly once, with exactly
    its arguments, in its turn;
(b) a refusing guard + an escalating guard, approve=True: the refused call never runs and nobody is asked
    about it; an approval request (for a call only the escalating guard questions) lists every guard's
    verdict;
(c) the enforcement strategy (None, TEH, CRP+TEH, CRP) changes what runs: TEH halts a refused tool for
    the rest of the run, CRP gives the violation back and the run goes on until ``max_rounds`` refusals
    in a row, then its ``then`` strategy applies.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("mcp")
pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/integrations: the drivers package

from drivers import TOOLS, RunResult  # noqa: E402
from drivers.mcp import McpDriver, drivers  # noqa: E402

from agentguard.core import GuardStack, ToolCall  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402

DRIVERS = drivers()
IDS = [d.name for d in DRIVERS]

call_ids = st.sampled_from([None, "", "dup", "dup", "c1", "c2"])
# targets the proxy forwards by design: the string "null" and strings holding JSON arrays/objects are refused by its
# reading of MCPServer (integrations/mcp/decide.json_text_refusal, tested in test_json_text.py), whatever the guard says
targets = st.text(st.characters(codec="utf-8"), max_size=6).filter(
    lambda t: t.strip(" \t\n\r") != "null" and not t.lstrip(" \t\n\r").startswith(("[", "{")))
calls = st.builds(
    lambda name, target, amount, cid: ToolCall(name, {"target": target, "amount": amount}, cid),
    st.sampled_from(TOOLS), targets, st.integers(-5, 2000), call_ids)
turns = st.lists(st.lists(calls, min_size=1, max_size=4), min_size=1, max_size=4)


def key(name, args) -> tuple:
    return name, tuple(sorted(args.items()))


def check_turns_ran(result: RunResult, turns_: list[list[ToolCall]], refused) -> None:
    """Every call not refused ran exactly once with its arguments, turn by turn; no refused call ran."""
    ran = [key(n, a) for n, a in result.executed]
    assert not [k for k in ran if refused(k[0])], ran
    i = 0
    for turn in turns_:
        want = Counter(key(c.name, c.arguments) for c in turn if not refused(c.name))
        got = Counter(ran[i:i + sum(want.values())])
        assert got == want, (turn, ran)
        i += sum(want.values())
    assert i == len(ran)


@pytest.mark.parametrize("driver", DRIVERS, ids=IDS)
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(turns_=turns)
def test_a_refused_calls_never_run_allowed_calls_run_once_exactly(driver: McpDriver, turns_):
    guard = GuardStack([ToolRuleGuard(deny=["delete_*"], name="no-deletes")])
    result = driver.run(guard, turns_)
    check_turns_ran(result, turns_, lambda name: name.startswith("delete_"))
    assert not result.stopped and not result.asked


@pytest.mark.parametrize("driver", DRIVERS, ids=IDS)
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(turns_=turns)
def test_b_refusal_dominates_escalation_and_the_approver_sees_every_verdict(driver: McpDriver, turns_):
    guard = GuardStack([ToolRuleGuard(deny=["transfer_funds"], name="refuser"),
                        ToolRuleGuard(escalate=["transfer_funds", "write_file"], name="asker")])
    result = driver.run(guard, turns_, approve=True)
    check_turns_ran(result, turns_, lambda name: name == "transfer_funds")  # write_file: approved, runs
    proposed = sum(c.name == "write_file" for t in turns_ for c in t)
    assert len(result.asked) == proposed  # one question per escalated call, none about the refused one
    for asked in result.asked:
        assert asked["call"]["name"] == "write_file"
        assert {(v["guard"], v["decision"]) for v in asked["verdicts"]} == {("refuser", "ALLOW"),
                                                                            ("asker", "ESCALATE")}


@pytest.mark.parametrize("driver", DRIVERS, ids=IDS)
@pytest.mark.parametrize("approve", [True, False])
def test_b_refused_call_never_runs_after_an_approval(driver: McpDriver, approve):
    guard = GuardStack([ToolRuleGuard(deny=["transfer_funds"], name="refuser"),
                        ToolRuleGuard(escalate=["transfer_funds"], name="asker")])
    t = ToolCall("transfer_funds", {"target": "eve", "amount": 800})
    result = driver.run(guard, [[t], [t, t]], approve=approve)
    assert result.executed == [] and result.asked == []
    assert all("REJECT by refuser" in text for text in driver.texts)


def transfer(target: str) -> list[ToolCall]:
    return [ToolCall("transfer_funds", {"target": target, "amount": 5})]


READ = [ToolCall("read_note", {"target": "n", "amount": 0})]
PAYEES = {"tool": "transfer_funds", "arg": "target", "match": "bob"}  # transfers to anyone else are refused


@pytest.mark.parametrize("driver", DRIVERS, ids=IDS)
@pytest.mark.parametrize("strategy,refusals,ran,stopped", [
    (None, 1, ["transfer_funds", "read_note"], False),        # refused, the run goes on, bob is paid
    ("TEH", 1, ["read_note"], False),                           # the tool is halted: bob is refused too
    ("CRP+TEH", 1, ["transfer_funds", "read_note"], False),     # re-plan: the violation goes back, bob is paid
    ("CRP+TEH", 4, ["read_note"], False),                       # 4 in a row > max_rounds 3: TEH halts the tool
    ("CRP", 3, ["transfer_funds", "read_note"], False),         # 3 rounds allowed
    ("CRP", 4, [], True),                                       # then Stop: the run halts
])
def test_c_strategy_changes_what_runs(driver: McpDriver, strategy, refusals, ran, stopped):
    guard = ToolRuleGuard(arguments=[PAYEES], name="payees")
    turns_ = [transfer("eve")] * refusals + [transfer("bob"), READ]
    result = driver.run(guard, turns_, strategy=strategy)
    assert [n for n, _ in result.executed] == ran
    assert result.stopped is stopped
    first = driver.texts[0]
    if strategy and strategy.startswith("CRP"):
        assert "Propose a different action" in first  # the agent gets the violation back
    if strategy == "TEH":
        assert "halted for this run" in first and "halted earlier in this run" in driver.texts[1]
    if strategy == "CRP+TEH" and refusals == 4:
        assert "halted for this run" in driver.texts[3]  # the 4th refusal: the `then` strategy (TEH) applied
