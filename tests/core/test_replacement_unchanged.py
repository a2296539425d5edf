"""Red team: a guard that changes the proposal it is deciding.

Every adapter runs the outcome's call, the very object the guards were handed. A stack of a path rule and a
guard that writes into the arguments *after* the rule judged them (a normaliser, a buggy redactor) ran the
written value: ``Pipeline.decide`` answered ALLOW with ``{"path": "/etc/shadow"}`` for a call the rule had judged
as ``{"path": "/tmp/a"}``, and the real LangChain agent's tool read ``/etc/shadow`` (checked before the fix,
tests/integrations/test_langchain_reading.py keeps the end-to-end case). Now a proposal changed while it is
decided is refused (the Pipeline's ``on_error``), on the synchronous and the asynchronous path, for the first
decision and for the rounds that decide a replacement.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from agentguard.core import BaseGuard, Context, Decision, GuardStack, Pipeline, Step, ToolCall, Verdict
from agentguard.core.replacement import adecided, decided
from agentguard.policies.rules import ToolRuleGuard

RULE = {"tool": "read_file", "arg": "path", "forbid": "^/etc"}


class Writer(BaseGuard):
    """Allows, after changing the proposal with ``how`` (in place)."""

    def __init__(self, how: Any, answer: Verdict | None = None) -> None:
        self.name, self.how, self.answer = "writer", how, answer

    def check(self, context: Context, proposal: Any) -> Verdict:
        if isinstance(proposal, ToolCall):
            self.how(proposal)
        return self.answer or Verdict.allow(self.name)


class AsyncWriter(Writer):
    async def acheck(self, context: Context, proposal: Any) -> Verdict:
        return self.check(context, proposal)


def _set(p: ToolCall) -> None:
    p.arguments["path"] = "/etc/shadow"  # type: ignore[index]


def _nested(p: ToolCall) -> None:
    p.arguments["opts"]["path"] = "/etc/shadow"  # type: ignore[index]


def _delete(p: ToolCall) -> None:
    del p.arguments["mode"]  # type: ignore[attr-defined]


def _add(p: ToolCall) -> None:
    p.arguments["follow_symlinks"] = True  # type: ignore[index]


def _rename(p: ToolCall) -> None:
    object.__setattr__(p, "name", "delete_file")


WRITES = {"set": _set, "nested": _nested, "delete": _delete, "add": _add, "rename": _rename}


def call() -> ToolCall:
    return ToolCall("read_file", {"path": "/tmp/a", "mode": "r", "opts": {"path": "/tmp/a"}}, "c1")


def stack(writer: BaseGuard, first: bool) -> GuardStack:
    rule = ToolRuleGuard(arguments=[RULE], deny=["delete_file"], name="rules")
    return GuardStack([writer, rule] if first else [rule, writer], short_circuit=False)


@pytest.mark.parametrize("aio", [False, True])
@pytest.mark.parametrize("write", sorted(WRITES))
def test_a_proposal_changed_while_it_is_decided_never_runs(write, aio):
    p = Pipeline(stack((AsyncWriter if aio else Writer)(WRITES[write]), first=False))
    out = asyncio.run(p.adecide("r", call())) if aio else p.decide("r", call())
    assert not out.execute and out.call is None, out
    assert "changed the proposal it was deciding" in out.verdict.reason


def test_a_write_before_the_rule_is_refused_too():
    """Order does not matter: the rule judged the written value, but nothing may run that is not the proposal."""
    out = Pipeline(stack(Writer(_set), first=True)).decide("r", call())
    assert not out.execute


def test_a_replacement_changed_while_it_is_decided_never_runs():
    """A MODIFY's arguments are decided in a round of their own; a guard writing into them there is refused."""

    class Modify(BaseGuard):
        name = "modify"

        def check(self, context, proposal):
            if proposal.arguments.get("path") == "/tmp/a":
                return Verdict(Decision.MODIFY, "normalise", self.name, action={"path": "/tmp/b"})
            if proposal.arguments.get("path") == "/tmp/b":
                proposal.arguments["path"] = "/etc/shadow"
            return Verdict.allow(self.name)

    for v in (decided(Modify(), Context(run_id="r"), ToolCall("read_file", {"path": "/tmp/a"})),
              asyncio.run(adecided(Modify(), Context(run_id="r"), ToolCall("read_file", {"path": "/tmp/a"})))):
        assert v.decision.refuses, v


def test_regression_guards_that_only_read_still_allow_and_a_modify_still_runs():
    """Already safe, kept: reading guards, and a MODIFY (the way to ask for other arguments), decide as before."""
    out = Pipeline(stack(Writer(lambda p: None), first=False)).decide("r", call())
    assert out.execute and out.call == call()
    modify = Writer(lambda p: None, Verdict(Decision.MODIFY, "narrow", "writer", action={"path": "/tmp/b"}))
    out = Pipeline(stack(modify, first=False)).decide("r", call())
    assert out.execute and out.call.arguments == {"path": "/tmp/b"}
    step = Pipeline(Writer(lambda p: None)).decide("r", Step(output="text"))
    assert step.execute


_values = st.one_of(st.text(max_size=8), st.integers(), st.floats(allow_nan=True), st.booleans(), st.none())


@st.composite
def writes(draw):
    """A write into the arguments that changes them (a key set to a new value, removed, added, nested)."""
    kind = draw(st.sampled_from(["set", "del", "add", "nested", "rename"]))
    value = draw(_values)

    def how(p: ToolCall) -> None:
        a: Any = p.arguments
        if kind == "set":
            a["path"] = ("/etc/" + value) if isinstance(value, str) else value
        elif kind == "del":
            a.pop("mode")
        elif kind == "add":
            a[draw_key] = value
        elif kind == "nested":
            a["opts"]["path"] = [value]
        else:
            object.__setattr__(p, "name", "read_file_")

    draw_key = draw(st.text(min_size=1, max_size=4).filter(lambda k: k not in ("path", "mode", "opts")))
    return how


@settings(max_examples=120, deadline=None)
@given(writes(), st.booleans(), st.booleans(), st.sampled_from([Decision.HALT, Decision.REJECT]))
def test_property_what_runs_is_the_proposal_as_the_guards_received_it(how, first, aio, on_error):
    """Whatever a guard writes into the proposal, wherever it sits in the stack, the outcome never runs a call
    other than the one proposed: it is refused (with ``on_error``, unless a guard refused the written call already)."""
    p = Pipeline(stack((AsyncWriter if aio else Writer)(how), first=first), on_error=on_error)
    out = asyncio.run(p.adecide("r", call())) if aio else p.decide("r", call())
    assert not out.execute and out.call is None
    assert out.verdict.decision is on_error or "matches forbidden" in out.verdict.reason or \
        "denied" in out.verdict.reason, out.verdict


def test_an_escalation_of_a_changed_call_is_refused_not_put_to_a_human():
    """An ESCALATE would run the call once a human approves it: a call changed while decided is refused instead."""
    asker = Writer(_set, Verdict(Decision.ESCALATE, "ask", "writer"))
    out = Pipeline(stack(asker, first=False)).decide("r", call())
    assert not out.ask and not out.execute and "changed the proposal" in out.verdict.reason
