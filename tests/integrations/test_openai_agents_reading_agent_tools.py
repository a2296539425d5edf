"""Red team (session 26): an agent run as a tool (``Agent.as_tool(parameters=...)``) is judged with the input the
nested agent receives.

The SDK (0.24) validates an agent tool's JSON with its ``parameters`` type (lax mode, field validators, defaults) and
builds the nested agent's input from the JSON dump of the validated value; it offers no argument preparation, so the
guard judged the model's spelling: ``{"to": "  EVE "}`` passed a rule forbidding ``eve`` while the nested agent was
asked to pay ``eve``, and ``"5000"`` was judged as text while the agent read ``5000``. Oracle: the real ``Runner``
with a real nested agent whose ``input_builder`` records what it received; every input it received was judged as
exactly that (a recording guard), once, and a refused call never reaches it."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

import pytest

pytest.importorskip("agents")

from agents import Agent, RunConfig, Runner  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402
from hypothesis import given, settings, strategies as st  # noqa: E402
from pydantic import AfterValidator, BaseModel  # noqa: E402

from agentguard.core import BaseGuard, Context, Decision, Verdict  # noqa: E402
from agentguard.integrations.openai_agents import AgentsGuard  # noqa: E402
from agentguard.integrations.openai_agents_reading import agent_tool_reading  # noqa: E402
from agentguard.core.types import ToolCall  # noqa: E402
from agentguard.integrations.common import Unreadable  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402
from drivers import Seen  # noqa: E402  (tests/integrations is on sys.path)


class Pay(BaseModel):
    to: Annotated[str, AfterValidator(lambda s: s.strip().lower())]
    amount: int
    memo: str = "none"


def _run(arguments: str, guard: Any, *, approve: Any = None, parameters: Any = Pay) -> list[dict]:
    """One outer call of the agent tool ``pay`` with the model's ``arguments`` text; what the nested agent received."""
    got: list[dict] = []

    def builder(options: Any) -> str:
        got.append(options["params"])
        return "pay " + json.dumps(options["params"])

    nested = Agent(name="payer", model=ScriptedModel([[assistant_message("paid")]]))
    tool = nested.as_tool("pay", "pay someone", parameters=parameters, input_builder=builder)
    call = function_call("pay", {}, call_id="c1")
    call.arguments = arguments
    agent = Agent(name="a", tools=[tool], model=ScriptedModel([[call], [assistant_message("done")]]))
    AgentsGuard(guard, approve=approve).guard_agent(agent)
    try:
        asyncio.run(Runner.run(agent, "go", max_turns=3, run_config=RunConfig(tracing_disabled=True)))
    except Exception:  # noqa: BLE001 - a refusal that stops the run: what ran is what the test reads
        pass
    return got


def test_attack_a_spelling_the_validator_rewrites_is_judged_as_the_nested_agent_reads_it():
    rules = ToolRuleGuard(allow=["pay"], arguments=[{"tool": "pay", "arg": "to", "forbid": "^eve$"}])
    assert _run('{"to": "  EVE ", "amount": 5}', rules) == []  # the nested agent is never asked to pay eve
    assert _run('{"to": "bob", "amount": 5}', rules) == [{"to": "bob", "amount": 5, "memo": "none"}]


def test_attack_a_number_given_as_text_is_judged_as_the_int_the_nested_agent_reads():
    class Cap(BaseGuard):
        name = "cap"

        def check(self, context: Context, proposal: Any) -> Verdict:
            amount = proposal.arguments.get("amount")
            ok = type(amount) is int and amount <= 1000
            return Verdict.allow() if ok else Verdict(Decision.REJECT, f"amount {amount!r}", self.name)

    assert _run('{"to": "bob", "amount": "500"}', Cap()) == [{"to": "bob", "amount": 500, "memo": "none"}]
    assert _run('{"to": "bob", "amount": "5000"}', Cap()) == []


SHAPES = st.fixed_dictionaries(
    {"to": st.sampled_from([" EVE ", "eve", "Bob", "", 5, None, ["eve"]]),
     "amount": st.sampled_from([5, "5", " 5 ", 5.0, 5.5, True, "x", None])},
    optional={"memo": st.sampled_from(["m", 1, None]), "extra": st.just("z")})


@settings(max_examples=40, deadline=None)
@given(args=SHAPES)
def test_property_the_nested_agent_receives_exactly_what_the_guard_judged_once(args):
    seen = Seen()
    got = _run(json.dumps(args), seen)
    if got:  # it ran: judged once, as exactly what it received
        assert seen.seen == [("pay", got[0])]
    assert len(got) <= 1


def test_a_call_the_validation_refuses_never_reaches_the_nested_agent_and_is_refused():
    seen = Seen()
    assert _run('{"to": "bob", "amount": "many"}', seen) == []
    assert seen.seen == []  # refused by the adapter before any guard allowed it


def test_an_escalation_answered_by_the_callback_runs_exactly_the_judged_input():
    class Ask(BaseGuard):
        name = "ask"

        def check(self, context: Context, proposal: Any) -> Verdict:
            return Verdict(Decision.ESCALATE, "a payment", self.name)

    shown: list = []

    def approve(verdict: Verdict, call: Any) -> bool:
        shown.append(dict(call.arguments))
        return True

    got = _run('{"to": " BOB", "amount": "7"}', Ask(), approve=approve)
    assert got == [{"to": "bob", "amount": 7, "memo": "none"}] and shown == got


def test_an_agent_tool_whose_validation_cannot_be_read_is_unreadable():
    nested = Agent(name="payer")
    tool = nested.as_tool("pay", "pay", parameters=Pay)
    tool.on_invoke_tool._invoke_tool_impl = lambda ctx, text: None  # another SDK's invocation: no params_adapter
    read = agent_tool_reading(tool, "{}", ToolCall("pay", {"to": "bob", "amount": 1}, "c"))
    assert isinstance(read, Unreadable)


@pytest.mark.parametrize("answer", [True, False])
def test_an_escalation_through_the_sdk_interruption_shows_and_runs_the_judged_input(answer):
    """The human approving the SDK's interruption is shown the input the nested agent receives, with the guard's
    verdicts (approval_request reads the item as needs_approval decided it), and exactly that runs, once."""

    class Ask(BaseGuard):
        name = "ask"

        def check(self, context: Context, proposal: Any) -> Verdict:
            return Verdict(Decision.ESCALATE, "a payment", self.name)

    got: list = []
    nested = Agent(name="payer", model=ScriptedModel([[assistant_message("paid")]]))
    tool = nested.as_tool("pay", "pay", parameters=Pay, input_builder=lambda o: got.append(o["params"]) or "pay")
    call = function_call("pay", {}, call_id="c1")
    call.arguments = '{"to": " BOB", "amount": "7"}'
    agent = Agent(name="a", tools=[tool], model=ScriptedModel([[call], [assistant_message("done")]]))
    ag = AgentsGuard(Ask())
    ag.guard_agent(agent)
    cfg = RunConfig(tracing_disabled=True)

    async def main() -> dict:
        first = await Runner.run(agent, "go", max_turns=3, run_config=cfg)
        [item] = first.interruptions
        shown = ag.approval_request(item)
        state = first.to_state()
        (state.approve if answer else state.reject)(item)
        await Runner.run(agent, state, max_turns=3, run_config=cfg)
        return shown

    shown = asyncio.run(main())
    assert shown["call"]["arguments"] == {"to": "bob", "amount": 7, "memo": "none"}
    assert [v["guard"] for v in shown["verdicts"]] == ["ask"]
    assert got == ([{"to": "bob", "amount": 7, "memo": "none"}] if answer else [])
