"""Red team: the Agents SDK adapter judges a call's arguments the way the SDK hands them to the function.

A function tool does not receive the model's JSON: the SDK validates it with the tool's pydantic model (lax
mode) and calls the function with the validated values (``" 5000 "`` and ``5000.0`` are the int ``5000``;
a ``StringConstraints(strip_whitespace=True)`` parameter drops the spaces). When validation changes the
arguments, the SDK (0.24) does not call ``needs_approval`` at all: it asks a human itself. The human who
approved that (shown no verdict) let the input guardrail judge the model's spelling: ``"  /etc/shadow"``
passed a ``forbid = "^/etc"`` rule and the function read ``/etc/shadow``.

Differential oracle: the real SDK with its scripted model; every call that ran received exactly arguments
the guard judged and would allow, whatever a human answers.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

import pytest

pytest.importorskip("agents")

from agents import Agent, RunConfig, Runner, function_tool  # noqa: E402
from agents.exceptions import ModelBehaviorError, ToolInputGuardrailTripwireTriggered  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from pydantic import AfterValidator, BaseModel, StringConstraints  # noqa: E402

from agentguard.core import Context, GuardStack, ToolCall  # noqa: E402
from agentguard.integrations.openai_agents import AgentsGuard  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402
from drivers import FLIPS, FlipPath, Seen  # noqa: E402  (tests/integrations is on sys.path)

Stripped = Annotated[str, StringConstraints(strip_whitespace=True)]
Url = Annotated[str, AfterValidator(lambda u: u.replace("hxxp", "http"))]  # a validator: user code
RULES = [
    {"tool": "fetch", "arg": "url", "forbid": r"^http://evil"},
    {"tool": "read_file", "arg": "path", "forbid": r"^/etc"},
    {"tool": "transfer", "arg": "amount", "forbid": r"^\d{4,}$"},
]


class Opts(BaseModel):
    path: Stripped
    depth: int


def make_tools(ran: list) -> list:
    def read_file(path: Stripped) -> str:
        """Read a file."""
        ran.append(("read_file", {"path": path}))
        return "ok"

    def transfer(to: str, amount: int) -> str:
        """Send money."""
        ran.append(("transfer", {"to": to, "amount": amount}))
        return "ok"

    def fetch(url: Url) -> str:
        """Fetch a URL."""
        ran.append(("fetch", {"url": url}))
        return "ok"

    def scan(opts: Opts) -> str:
        """Scan with options."""
        ran.append(("scan", {"opts": opts.model_dump()}))
        return "ok"

    return [function_tool(read_file), function_tool(transfer), function_tool(fetch), function_tool(scan)]


async def arun(calls: list[tuple[str, dict]], approve: bool = True):
    ran: list = []
    seen = Seen()
    ag = AgentsGuard(GuardStack([seen, ToolRuleGuard(arguments=RULES, name="rules")]))
    script = [[function_call(n, a, call_id=f"c{i}") for i, (n, a) in enumerate(calls)], [assistant_message("done")]]
    agent = Agent(name="a", instructions="x", model=ScriptedModel(script), tools=ag.guard_tools(make_tools(ran)))
    config = RunConfig(tracing_disabled=True)
    try:
        result = await Runner.run(agent, "go", max_turns=6, run_config=config, context={"run_id": "r"})
        while result.interruptions:  # a human who approves whatever the SDK asks about
            state = result.to_state()
            for item in result.interruptions:
                state.approve(item) if approve else state.reject(item)
            result = await Runner.run(agent, state, max_turns=6, run_config=config)
    except (ToolInputGuardrailTripwireTriggered, ModelBehaviorError):
        pass
    return ran, seen.seen


ATTACKS = [
    ("fetch", {"url": "hxxp://evil.example"}),   # a field validator rewrites it (the SDK cannot inspect it)
    ("read_file", {"path": "  /etc/shadow"}),
    ("transfer", {"to": "bob", "amount": "5000"}),
    ("transfer", {"to": "bob", "amount": " 5000 "}),
    ("transfer", {"to": "bob", "amount": 5000.0}),
]


@pytest.mark.parametrize("name,args", ATTACKS)
def test_what_the_sdk_makes_of_the_arguments_is_what_is_judged(name, args):
    ran, seen = asyncio.run(arun([(name, args)]))
    assert ran == [], f"{name}{args} ran as {ran}; the guard judged {seen}"


def test_arguments_the_schema_does_not_change_run_as_judged():
    ran, seen = asyncio.run(arun([("transfer", {"to": "bob", "amount": 12}), ("read_file", {"path": "a.txt"})]))
    assert sorted(ran) == [("read_file", {"path": "a.txt"}), ("transfer", {"to": "bob", "amount": 12})]
    assert all(r in seen for r in ran)


def test_a_nested_model_is_judged_as_plain_data():
    ran, seen = asyncio.run(arun([("scan", {"opts": {"path": " /tmp/x ", "depth": 2}})]))
    assert ran == [("scan", {"opts": {"path": "/tmp/x", "depth": 2}})]
    assert seen == [("scan", {"opts": {"path": "/tmp/x", "depth": 2}})] and type(seen[0][1]["opts"]) is dict


_paths = st.sampled_from(["/etc/shadow", "notes.txt"]).flatmap(
    lambda p: st.tuples(st.text(" \t", max_size=2), st.text(" \t", max_size=2)).map(lambda w: w[0] + p + w[1]))
_amounts = st.one_of(st.integers(0, 20_000), st.integers(0, 20_000).map(str), st.integers(0, 20_000).map(float))
_calls = st.one_of(_paths.map(lambda p: ("read_file", {"path": p})),
                   _amounts.map(lambda a: ("transfer", {"to": "bob", "amount": a})))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_calls, min_size=1, max_size=3, unique_by=lambda c: repr(c)))
def test_property_a_function_receives_only_judged_allowed_arguments(calls):
    ran, seen = asyncio.run(arun(calls))
    rules = ToolRuleGuard(arguments=RULES)
    for name, args in ran:
        assert (name, args) in seen, f"{name}{args} ran; judged: {seen}"
        assert not rules.check(Context(), ToolCall(name, args)).blocks


def test_the_tool_read_is_the_one_the_sdk_runs_namespace_then_last_wins():
    """The reading uses the tool the SDK dispatches to: the call's namespace first, then the SDK's
    last-wins lookup (a first-match search read one tool's schema for another's call)."""
    from types import SimpleNamespace

    from agents import tool_namespace

    from agentguard.integrations.openai_agents import _tool_of

    def a(path: str) -> str:
        """A."""
        return path

    def b(path: Stripped) -> str:
        """B."""
        return path

    plain_a, plain_b = function_tool(a, name_override="read"), function_tool(b, name_override="read")
    [spaced] = tool_namespace(name="files", description="Files.", tools=[function_tool(b, name_override="read")])
    agent = SimpleNamespace(tools=[plain_a, spaced, plain_b])
    assert _tool_of(SimpleNamespace(agent=agent, context=SimpleNamespace(tool_namespace=None)), "read") is plain_b
    assert _tool_of(SimpleNamespace(agent=agent, context=SimpleNamespace(tool_namespace="files")), "read") is spaced


# -- validators run twice (pass 3): the function receives exactly the values judged --------------------------


@pytest.mark.parametrize("values", [["/tmp/ok", "/etc/shadow"], ["/tmp/ok", "/tmp/ok", "/etc/shadow"],
                                    ["RAISE", "/etc/shadow"]])
def test_a_validator_answering_otherwise_on_each_call_cannot_change_what_runs(values):
    """Attack: the guard judged the first validation's value (``/tmp/ok``) and the SDK validated again for the
    invocation (``/etc/shadow``). Now the input guardrail hands the SDK the prepared arguments it judged; a
    validation that raised is refused (its retry might not raise)."""
    FLIPS[:] = values
    ran: list = []

    def read_file(path: FlipPath) -> str:
        """Read a file."""
        ran.append(path)
        return "ok"

    async def go():
        seen = Seen()
        ag = AgentsGuard(GuardStack([seen, ToolRuleGuard(arguments=RULES, name="rules")]))
        script = [[function_call("read_file", {"path": "x"}, call_id="c0")], [assistant_message("done")]]
        agent = Agent(name="a", instructions="x", model=ScriptedModel(script),
                      tools=ag.guard_tools([function_tool(read_file)]))
        config = RunConfig(tracing_disabled=True)
        try:
            result = await Runner.run(agent, "go", max_turns=6, run_config=config, context={"run_id": "r"})
            while result.interruptions:
                state = result.to_state()
                for item in result.interruptions:
                    state.approve(item)
                result = await Runner.run(agent, state, max_turns=6, run_config=config)
        except (ToolInputGuardrailTripwireTriggered, ModelBehaviorError):
            pass
        return seen.seen

    seen = asyncio.run(go())
    assert all(not p.startswith("/etc") for p in ran), (ran, seen)
    assert all(("read_file", {"path": p}) in seen for p in ran)
