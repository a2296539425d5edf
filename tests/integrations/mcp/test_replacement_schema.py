"""Red team: a replaced call (MODIFY's arguments, a RECOVER's fallback) forwarded to an upstream that reads it
otherwise (both proxy paths, a real MCP client and a real ``MCPServer`` upstream, tests/integrations/drivers/mcp.py).

The proxies forward a ``tools/call`` only with arguments of the types its ``inputSchema`` declares (an
``MCPServer`` reads ``"5000"`` as the int 5000). That check covered the client's call, not its replacement: a
formatting guard's MODIFY wrote ``amount`` as the text ``"5000"``, the whole stack judged that text (a budget
guard that refuses *integers* over 100 let it through), and the upstream ran ``transfer_funds`` with the int
5000 (checked before the fix, relay and SDK server alike). A replacement is now held to the same check.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/integrations: the drivers package

from agentguard.core import BaseGuard, Decision, GuardStack, ToolCall, Verdict  # noqa: E402
from drivers.mcp import McpDriver  # noqa: E402


class Rewrite(BaseGuard):
    """Answers MODIFY for the client's call (``amount`` 5) with ``amount`` rewritten by ``how``; allows the rest."""

    name = "rewrite"

    def __init__(self, how) -> None:
        self.how = how

    def check(self, context, proposal):
        a = proposal.arguments.get("amount")
        if type(a) is int and a == 5:
            return Verdict(Decision.MODIFY, "rewritten", self.name, action={**proposal.arguments, "amount": self.how(a)})
        return Verdict.allow(self.name)


class Budget(BaseGuard):
    """Refuses integer amounts over 100 (reads types strictly, as the judged call has them)."""

    name = "budget"

    def check(self, context, proposal):
        a = proposal.arguments.get("amount")
        if isinstance(a, int) and not isinstance(a, bool) and a > 100:
            return Verdict(Decision.REJECT, "over budget", self.name)
        return Verdict.allow(self.name)


def run(variant: str, how) -> list:
    try:
        res = McpDriver(variant).run(GuardStack([Rewrite(how), Budget()]),
                                     [[ToolCall("transfer_funds", {"target": "bob", "amount": 5})]])
    except BaseException as exc:  # noqa: BLE001 - the relay answers Invalid params, which the client raises
        if "replacement" not in repr(exc):
            raise
        return []
    return res.executed


@pytest.mark.parametrize("variant", ["relay", "sdk"])
@pytest.mark.parametrize("how", [lambda a: f"{a}000", lambda a: float(a * 1000), lambda a: f" {a}000 "],
                         ids=["text", "float", "spaced"])
def test_a_replacement_the_upstream_reads_otherwise_never_runs(variant, how):
    assert run(variant, how) == []


@pytest.mark.parametrize("variant", ["relay", "sdk"])
def test_regression_a_replacement_of_the_declared_types_still_runs(variant):
    assert run(variant, lambda a: a + 1) == [("transfer_funds", {"target": "bob", "amount": 6})]


_rewrites = st.one_of(st.integers(0, 10_000).map(lambda n: (lambda a: n)),
                      st.integers(0, 10_000).map(lambda n: (lambda a: str(n))),
                      st.integers(0, 10_000).map(lambda n: (lambda a: float(n))),
                      st.sampled_from([lambda a: True, lambda a: None, lambda a: [a], lambda a: {"v": a}]))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["relay", "sdk"]), _rewrites)
def test_property_what_an_upstream_runs_after_a_replacement_is_what_the_stack_allowed(variant, how):
    """Whatever the replacement's amount, the upstream runs only an integer the budget allowed (<= 100)."""
    for _, args in run(variant, how):
        assert isinstance(args["amount"], int) and args["amount"] <= 100, args
