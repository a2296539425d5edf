"""Argument rules check the argument wherever it sits in the call (session 19 red team).

A tool that takes an object hands it on whole (a pydantic model, a payment API's body), so
``{"payment": {"recipient": "GB..."}}`` names the recipient as ``{"recipient": ...}`` does. Argument rules used to
read top-level keys only: an allow-list rule ``recipient must match ^DE`` let a nested ``GB`` recipient through and
a ``forbid`` rule on ``amount`` missed a nested amount. The oracle is pydantic, reading the arguments into the
model such a tool declares."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from agentguard.core.types import Context, Decision, ToolCall
from agentguard.policies.rules import ArgumentRule, ToolRuleGuard

GUARD = ToolRuleGuard(allow=["send_money"], arguments=[
    ArgumentRule(tool="send_money", arg="recipient", match=r"DE\d{6}"),
    ArgumentRule(tool="send_money", arg="amount", forbid=r"^\d{5,}(\.\d*)?$")])


class Payment(BaseModel):
    recipient: str
    amount: float


class Transfer(BaseModel):
    """A tool's declared arguments: the payment nested, as an API body."""
    payment: Payment
    note: str = ""


def decide(args: dict[str, Any]) -> Decision:
    return GUARD.check(Context(run_id="r"), ToolCall("send_money", args)).decision


def test_a_nested_argument_is_checked_as_a_top_level_one():
    nested = {"payment": {"recipient": "GB123456", "amount": 10}}
    assert Transfer.model_validate(nested).payment.recipient == "GB123456"  # the tool pays GB
    assert decide(nested) is Decision.REJECT
    assert decide({"payment": {"recipient": "DE123456", "amount": 99999}}) is Decision.REJECT
    assert decide({"payment": json.dumps({"Recipient": "GB123456", "amount": 1})}) is Decision.REJECT
    assert decide({"recipient": "DE123456", "amount": 5, "extra": [{"recipient": "GB1"}]}) is Decision.REJECT
    assert decide({"payment": {"recipient": "DE123456", "amount": 10}}) is Decision.ALLOW
    assert decide({"recipient": "DE123456", "amount": 10}) is Decision.ALLOW


recipients = st.sampled_from(["DE123456", "GB123456", "de123456", "DE12345", "DE１２３４５６"])
amounts = st.sampled_from([10, 99999, "12", "100000", 1e6])


def wrap(value: Any, how: list[int]) -> Any:
    for h in how:
        value = [value] if h == 0 else {"data": value} if h == 1 else json.dumps(value)
    return value


@settings(max_examples=200, deadline=None)
@given(recipient=recipients, amount=amounts, how=st.lists(st.integers(0, 2), max_size=4))
def test_a_wrapped_payment_is_allowed_only_when_the_unwrapped_one_is(recipient: str, amount: Any, how: list[int]) -> None:
    """Property: wrapping the payment in lists, objects or JSON texts never turns a refusal into an allow."""
    plain = decide({"recipient": recipient, "amount": amount})
    wrapped = decide({"payment": wrap({"recipient": recipient, "amount": amount}, how)})
    assert not (plain is not Decision.ALLOW and wrapped is Decision.ALLOW), (recipient, amount, how)
