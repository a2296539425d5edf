"""agentguard.testing.check_guard: it catches a guard that breaks each property, and every shipped guard
passes it (each built from a small in-test fixture)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
import scipy.sparse as sp

from agentguard.core import BaseGuard, Context, Decision, GuardStack, Step, ToolCall, Verdict
from agentguard.testing import GuardCheckError, check_guard


# -- a guard that keeps the contract, and one broken copy per property ------------------------------------
class Good(BaseGuard):
    name = "good"

    def check(self, context, proposal):
        if isinstance(proposal, ToolCall):
            return Verdict.allow(self.name, f"tool {proposal.name} is fine")
        return Verdict.reject(f"cannot read {type(proposal).__name__}", self.name)

    def __repr__(self):
        return "Good()"


class NoName(Good):
    name = ""


class DefaultRepr(Good):
    __repr__ = object.__repr__


class ReturnsBool(Good):
    def check(self, context, proposal):
        return True


class AsyncDisagrees(Good):
    async def acheck(self, context, proposal):
        return Verdict.halt("async says no", self.name)


class Flaky(Good):
    def __init__(self):
        self.calls = 0

    def check(self, context, proposal):
        self.calls += 1
        return Verdict.allow(self.name) if self.calls % 2 else Verdict.reject("every other call", self.name)


class AllowsGarbage(Good):
    def check(self, context, proposal):
        return Verdict.allow(self.name, "anything goes")


class AllowsNaN(Good):
    def check(self, context, proposal):
        if isinstance(proposal, float):  # NaN included: "not below the threshold" is not "safe"
            return Verdict.allow(self.name, "score ok") if not proposal < 0.5 else Verdict.halt("low", self.name)
        return super().check(context, proposal)


class AlwaysRaises(Good):
    def check(self, context, proposal):
        raise RuntimeError("nope")


def test_a_guard_that_keeps_the_contract_passes():
    check_guard(Good())
    check_guard(Good(), contexts=[Context(metadata={"user": "u"})], proposals=[ToolCall("a"), ToolCall("b", {"x": 1})])


@pytest.mark.parametrize("guard, prop", [
    (NoName(), "protocol"),
    (object(), "protocol"),
    (DefaultRepr(), "repr"),
    (ReturnsBool(), "returns_verdict"),
    (AlwaysRaises(), "returns_verdict"),
    (AsyncDisagrees(), "sync_async_agree"),
    (Flaky(), "sync_async_agree"),   # call 1 ALLOW, call 2 (acheck) REJECT
    (AllowsGarbage(), "fail_closed"),
    (AllowsNaN(), "fail_closed"),
], ids=lambda x: x if isinstance(x, str) else type(x).__name__)
def test_each_broken_property_is_caught_and_named(guard, prop):
    with pytest.raises(GuardCheckError) as exc:
        check_guard(guard, proposals=[ToolCall("search"), 0.9])
    assert exc.value.prop == prop and f"'{prop}'" in str(exc.value)
    assert isinstance(exc.value, AssertionError)


def test_nondeterminism_between_two_sync_calls_is_caught():
    class EveryThird(Good):
        def __init__(self):
            self.calls = 0

        def check(self, context, proposal):
            self.calls += 1
            if self.calls % 3 == 0:
                return Verdict.reject("third call", self.name)
            return super().check(context, proposal)

    with pytest.raises(GuardCheckError) as exc:
        check_guard(EveryThird(), proposals=[ToolCall("search")])
    assert exc.value.prop == "deterministic"


def test_check_guard_works_inside_a_running_event_loop():
    async def main():
        check_guard(Good())

    asyncio.run(main())


# -- every shipped guard ----------------------------------------------------------------------------------
def _tool_rules():
    from agentguard.policies.rules import ToolRuleGuard

    return ToolRuleGuard(deny=["delete_*"], name="no-deletes")


def _m2w_policy_guard():
    from agentguard.policies import PolicyBinding, ToolCallGuard, library_extractor, library_path, load_policy

    return ToolCallGuard([PolicyBinding(load_policy(library_path("mind2web_sc")), library_extractor("mind2web_sc"))])


M2W_CONTEXT = Context(metadata={"task": "Book a hotel room in Rome", "website": "", "user_info": {
    "age": 30, "domestic": True, "dr_license": True, "vaccine": True, "membership": True}})


def _toy_dtmc():
    from agentguard.predictive.dtmc import DTMC

    P = np.array([[0.6, 0.4, 0.0], [0.0, 0.5, 0.5], [0.0, 0.0, 1.0]])
    return DTMC(P, 0, labels={"unsafe": [0, 0, 1]}, state_names=["a", "b", "bad"]).validate()


def _proactive():
    from agentguard.predictive.guard import ProactiveGuard

    return ProactiveGuard(_toy_dtmc(), "G !unsafe", 0.5)


def _product():
    from agentguard.predictive.dtmc import DTMC
    from agentguard.predictive.guard import ProductGuard
    from agentguard.predictive.monitor import BoundedResponse, product

    P = sp.csr_matrix(np.array([[0, 1, 0, 0], [0, .3, .5, .2], [0, 0, 0, 1], [0, 0, 0, 1]]))
    m = DTMC(P, 0, {"on": np.array([0, 1, 0, 0], bool), "off": np.array([0, 0, 1, 0], bool)},
             state_names=["idle", "on", "off", "done"]).validate()
    return ProductGuard(product(m, BoundedResponse("on", "off", 1)), 0.9).bind_names(m.state_names)


def _threshold_monitor():
    from agentguard.calibration import ThresholdMonitor

    return ThresholdMonitor(0.5)


class _Q:
    def q_values(self, z):
        z = np.atleast_2d(np.asarray(z, dtype=float))
        return np.column_stack([z[:, 0], -z[:, 0]])


class _Enc:
    name = "identity"
    dim = 1

    def encode(self, xs):
        return np.asarray([[float(x)] for x in xs])


def _safety_filter():
    from agentguard.control import SafetyFilter

    return SafetyFilter(_Q(), _Enc(), ["a", "b"], epsilon=0.0)


def _reactive():
    from agentguard.predictive.reactive import RuleGuard, embodied_predicates, parse_rules

    rules = parse_rules("rule @no_candles\ntrigger\n    turn on\ncheck\n    is_candle\nenforce\n    stop\nend\n")
    return RuleGuard(rules, embodied_predicates(target=lambda text: text.split()[-1].casefold(),
                                                microwave_unsafe=lambda t: t == "Fork"))


def _service(kind):
    pytest.importorskip("fastapi")
    from agentguard.server.guards import default_guards

    return getattr(default_guards(), kind)


SHIPPED = {
    "GuardStack": (lambda: GuardStack([_tool_rules(), _m2w_policy_guard()]), [M2W_CONTEXT],
                   [ToolCall("click", {"el": "book"}), ToolCall("delete_all")]),
    "ToolRuleGuard": (_tool_rules, None, [ToolCall("search", {"q": "x"}), ToolCall("delete_note")]),
    "ToolCallGuard": (_m2w_policy_guard, [M2W_CONTEXT], [ToolCall("click", {"el": "book"})]),
    "ProactiveGuard": (_proactive, [Context(state="a"), Context(state="b")], [Step(state="a"), Step(state="b")]),
    "ProductGuard": (_product, [Context(state="idle"), Context(state="on")], [Step(state="idle"), Step(state="on")]),
    "ThresholdMonitor": (_threshold_monitor, None, [Step(signals={"score": 0.9}), Step(signals={"score": 0.1}), 0.7]),
    "SafetyFilter": (_safety_filter, [Context(state=1.0), Context(state=-1.0)], ["a", "b"]),
    "ReactiveGuard": (_reactive, [Context(state={})], ["turn on Candle", "turn on Lamp"]),
    "service-tool": (lambda: _service("tool"), [M2W_CONTEXT], [ToolCall("click", {"el": "book"})]),
    "service-step": (lambda: _service("step"), [M2W_CONTEXT], [Step(state={"s": 0}, action=ToolCall("click")),
                                                                Step(state={"s": 1}, action="think")]),
    "service-signal": (lambda: _service("signal"), None, [Step(signals={"score": 0.9}), Step(signals={"score": 0.2})]),
}


# Shipped guards that still break a property, with the owner who fixes them (strict: the test fails
# as soon as the guard is fixed, so the entry is removed then).
KNOWN_FAILURES: dict[str, str] = {}


@pytest.mark.parametrize("which", [pytest.param(w, marks=pytest.mark.xfail(reason=KNOWN_FAILURES[w], strict=True,
                                                                          raises=GuardCheckError))
                                   if w in KNOWN_FAILURES else w for w in sorted(SHIPPED)])
def test_every_shipped_guard_passes_check_guard(which):
    build, contexts, proposals = SHIPPED[which]
    check_guard(build(), contexts=contexts, proposals=proposals)


def test_the_checked_verdicts_are_real_decisions():
    """The fixtures above exercise blocking verdicts too (a checker run over guards that only ALLOW
    would prove little)."""
    g = _tool_rules()
    assert g.check(Context(), ToolCall("delete_note")).decision >= Decision.REJECT
    assert _threshold_monitor().check(Context(), Step(signals={"score": 0.1})).blocks
