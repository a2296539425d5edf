"""One decision path through every entry point (issue 24): the same properties hold through LangChain,
OpenAI Agents, MCP and the service as through the core Pipeline itself.

- property: for random turns (duplicate, empty and missing call ids, parallel calls in one turn) a call the
  stack refuses never runs, and an allowed one runs exactly once with exactly its arguments;
- a stack with a refusing guard and an escalating guard never runs the call, even when the human approves;
- a configured strategy changes what runs in the same way everywhere (one table: the core is the oracle,
  and the table's rows must differ from each other, so the test can fail).
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentguard.core import BaseGuard, Context, Decision, GuardStack, Pipeline, ToolCall, Verdict

from drivers import TOOLS, Driver, RunResult


class CoreDriver:
    """The reference: the Pipeline driven directly, a turn decided before any of its calls runs."""

    name = "core"

    def run(self, guard: Any, turns: list[list[ToolCall]], *, approve: bool = False,
            strategy: str | None = None) -> RunResult:
        p = Pipeline(guard, strategy=strategy)
        res = RunResult()
        for turn in turns:
            outs = p.decide_turn("run", turn)
            for call in turn:
                out = p.take("run", call)
                assert out is not None
                if out.ask:
                    res.asked.append({"verdicts": list(out.verdict.details.get("verdicts", []))})
                    out = p.resolve(out, approve)
                if out.execute and out.call is not None:
                    res.executed.append((out.call.name, dict(out.call.arguments)))
            if any(o.stop for o in outs) or p.halted("run") is not None:
                res.stopped = True
                break
        return res


def _drivers() -> list[Any]:
    found: list[Any] = [CoreDriver()]
    for mod in ("langchain", "openai_agents", "mcp", "service"):
        try:
            m = importlib.import_module(f"drivers.{mod}")
        except ModuleNotFoundError as exc:
            raise
        found.extend(getattr(m, "DRIVERS", []))
    return found


DRIVERS = _drivers()
IDS = [d.name for d in DRIVERS]


class Limit(BaseGuard):
    """Refuses transfer_funds above 500 and every delete_*; asks about write_file (when ``ask``)."""

    def __init__(self, name: str = "limit", ask: bool = False) -> None:
        self.name, self.ask = name, ask

    def check(self, context: Context, proposal: Any) -> Verdict:
        if proposal.name.startswith("delete_"):
            return Verdict.reject(f"{proposal.name} is denied", self.name)
        if proposal.name == "transfer_funds" and int(proposal.arguments.get("amount", 0)) > 500:
            return Verdict.reject("amount over the 500 limit", self.name)
        if self.ask and proposal.name in ("write_file", "transfer_funds"):
            return Verdict(Decision.ESCALATE, f"{proposal.name} needs a human", self.name)
        return Verdict.allow(self.name)


def call(name: str, amount: int = 0, target: str = "x", cid: str | None = "") -> ToolCall:
    return ToolCall(name, {"target": target, "amount": amount}, "" if cid is None else cid)


CALLS = st.builds(call, st.sampled_from(TOOLS), st.sampled_from([0, 100, 800]), st.sampled_from(["a", "b"]),
                  st.sampled_from(["", None, "c1", "c1", "dup"]))
TURNS = st.lists(st.lists(CALLS, min_size=1, max_size=3), min_size=1, max_size=3)


def _allowed(c: ToolCall) -> bool:
    return not c.name.startswith("delete_") and not (c.name == "transfer_funds" and c.arguments["amount"] > 500)


@pytest.mark.parametrize("driver", DRIVERS, ids=IDS)
def test_refused_never_runs_allowed_runs_once_exactly(driver: Driver) -> None:
    @settings(max_examples=12 if driver.name != "core" else 100, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(turns=TURNS)
    def prop(turns: list[list[ToolCall]]) -> None:
        res = driver.run(GuardStack([Limit()]), turns)
        delivered = getattr(driver, "delivered", None)  # a framework that refuses some id shapes itself
        reach, refused_turn = delivered(turns) if delivered is not None else (turns, False)
        want = [(c.name, dict(c.arguments)) for t in reach for c in t if _allowed(c)]
        assert sorted(res.executed, key=repr) == sorted(want, key=repr), (turns, res)
        assert res.stopped is refused_turn

    prop()


@pytest.mark.parametrize("driver", DRIVERS, ids=IDS)
def test_refusal_is_never_approved(driver: Driver) -> None:
    stack = GuardStack([Limit("asker", ask=True), Limit("limit")])
    turns = [[call("transfer_funds", 800, cid="t1")], [call("write_file", 1, cid="w1")]]
    res = driver.run(stack, turns, approve=True)
    assert ("transfer_funds", {"target": "x", "amount": 800}) not in res.executed
    assert res.executed == [("write_file", {"target": "x", "amount": 1})]
    assert len(res.asked) == 1
    assert {v["guard"] for v in res.asked[0]["verdicts"]} == {"asker", "limit"}


#: the scenario of the strategy table: one refusal, an allowed call of the same tool, four refusals in a
#: row, another allowed call of that tool, then another tool
SCENARIO = [[call("transfer_funds", a, cid=f"s{i}")] for i, a in enumerate((800, 20, 900, 950, 990, 999, 30))] + \
    [[call("read_note", 0, cid="s7")]]
T = "transfer_funds"
TABLE = {
    None: ([(T, 20), (T, 30), ("read_note", 0)], False),
    "AB": ([(T, 20), (T, 30), ("read_note", 0)], False),
    "TT": ([], True),
    "TEH": ([("read_note", 0)], False),
    "CRP": ([(T, 20)], True),
    "CRP+TEH": ([(T, 20), ("read_note", 0)], False),
}


@pytest.mark.parametrize("strategy", list(TABLE), ids=[str(s) for s in TABLE])
@pytest.mark.parametrize("driver", DRIVERS, ids=IDS)
def test_strategy_changes_the_outcome_the_same_way_everywhere(driver: Driver, strategy: str | None) -> None:
    res = driver.run(GuardStack([Limit()]), SCENARIO, strategy=strategy)
    want, stopped = TABLE[strategy]
    assert [(n, a["amount"]) for n, a in res.executed] == want
    assert res.stopped is stopped


def test_the_table_rows_differ() -> None:
    rows = {s: (tuple(w), st_) for s, (w, st_) in TABLE.items() if s not in (None, "AB")}
    assert len(set(rows.values())) == len(rows)
