"""OpenAI Agents SDK guardrails and trace processor against the real `agents` package.

The model is the SDK's own scripted test model (agents.testing.ScriptedModel); tracing goes only to
our processor (set_trace_processors replaces the SDK exporter, so nothing leaves the machine).
"""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("agents")

from agents import Agent, Runner, function_tool, set_trace_processors  # noqa: E402
from agents.exceptions import ToolInputGuardrailTripwireTriggered  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402

from agentguard import BaseGuard, Decision, GuardStack, Verdict, read_traces  # noqa: E402
from agentguard.integrations.openai_agents import AgentsGuard  # noqa: E402
from agentguard.integrations.recording import TraceRecorder  # noqa: E402
from agentguard.policies.rules import ToolRuleGuard  # noqa: E402


def make_tools(effects):
    @function_tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        effects.append(("delete", path))
        return f"deleted {path}"

    @function_tool
    def read_file(path: str) -> str:
        """Read a file."""
        effects.append(("read", path))
        return f"contents of {path}"

    return [delete_file, read_file]


def stack():
    return GuardStack(
        [
            ToolRuleGuard(deny=["delete_*"], name="no-deletes"),
            ToolRuleGuard(
                arguments=[{"tool": "read_file", "arg": "path", "forbid": r"^/etc"}], name="no-etc"
            ),
        ]
    )


def run_agent(ag, effects, steps, recorder=None):
    if recorder is not None:
        set_trace_processors([ag.trace_processor(recorder)])
    else:
        set_trace_processors([])
    agent = Agent(
        name="a",
        instructions="be safe",
        model=ScriptedModel(steps),
        tools=ag.guard_tools(make_tools(effects)),
    )
    return asyncio.run(Runner.run(agent, "go"))


def test_forbidden_call_never_executes_model_gets_refusal(tmp_path):
    effects = []
    rec = TraceRecorder(tmp_path / "t.jsonl")
    ag = AgentsGuard(stack())
    res = run_agent(
        ag,
        effects,
        [[function_call("delete_file", {"path": "/tmp/a"}, call_id="c1")], [assistant_message("understood")]],
        rec,
    )
    assert effects == []
    outs = [it.output for it in res.new_items if type(it).__name__ == "ToolCallOutputItem"]
    assert len(outs) == 1 and "REJECT by no-deletes" in outs[0]
    assert res.final_output == "understood"
    [trace] = read_traces(str(tmp_path / "t.jsonl"))
    assert trace.labels["adapter"] == "openai_agents" and trace.labels["blocked"] == 1
    assert trace.steps[0].action.name == "delete_file" and trace.steps[0].action.arguments == {
        "path": "/tmp/a"
    }
    assert trace.steps[0].signals["decision"] == Decision.REJECT


def test_allowed_call_executes_unchanged(tmp_path):
    effects = []
    rec = TraceRecorder(tmp_path / "t.jsonl")
    ag = AgentsGuard(stack())
    res = run_agent(
        ag,
        effects,
        [[function_call("read_file", {"path": "/tmp/n"}, call_id="c1")], [assistant_message("done")]],
        rec,
    )
    assert effects == [("read", "/tmp/n")]
    outs = [it.output for it in res.new_items if type(it).__name__ == "ToolCallOutputItem"]
    assert outs == ["contents of /tmp/n"]
    [trace] = read_traces(str(tmp_path / "t.jsonl"))
    assert trace.steps[0].observation == "contents of /tmp/n" and trace.steps[0].signals["decision"] == 0


def test_halt_raises_tripwire_and_stops_run():
    effects = []
    ag = AgentsGuard(ToolRuleGuard(halt=["delete_*"]))
    with pytest.raises(ToolInputGuardrailTripwireTriggered):
        run_agent(
            ag,
            effects,
            [[function_call("delete_file", {"path": "/"}, call_id="c1")], [assistant_message("never")]],
        )
    assert effects == []


def test_guard_error_fails_closed():
    class Broken(BaseGuard):
        name = "broken"

        def check(self, context, proposal):
            raise RuntimeError("boom")

    effects = []
    with pytest.raises(ToolInputGuardrailTripwireTriggered):
        run_agent(
            AgentsGuard(Broken()),
            effects,
            [[function_call("read_file", {"path": "/tmp/n"}, call_id="c1")], [assistant_message("never")]],
        )
    assert effects == []


@pytest.mark.parametrize("answer", [True, False])
def test_escalate_goes_to_approver(answer):
    effects, asked = [], []

    async def approve(verdict, call):
        asked.append((verdict.decision, call.name))
        return answer

    ag = AgentsGuard(ToolRuleGuard(escalate=["delete_*"]), approve=approve)
    run_agent(
        ag,
        effects,
        [[function_call("delete_file", {"path": "/tmp/a"}, call_id="c1")], [assistant_message("ok")]],
    )
    assert asked == [(Decision.ESCALATE, "delete_file")]
    assert effects == ([("delete", "/tmp/a")] if answer else [])


def test_output_guard_replaces_result():
    class NoSecrets(BaseGuard):
        name = "no-secrets"

        def check(self, context, proposal):
            return (
                Verdict.reject("output leaks a secret")
                if "SECRET" in (proposal.output or "")
                else Verdict.allow()
            )

    @function_tool
    def read_secret() -> str:
        """Read."""
        return "SECRET=42"

    ag = AgentsGuard(ToolRuleGuard(deny=["nothing"]), output_guard=NoSecrets())
    set_trace_processors([])
    agent = Agent(
        name="a",
        model=ScriptedModel([[function_call("read_secret", {}, call_id="c1")], [assistant_message("ok")]]),
        tools=ag.guard_tools([read_secret]),
    )
    res = asyncio.run(Runner.run(agent, "go"))
    outs = [it.output for it in res.new_items if type(it).__name__ == "ToolCallOutputItem"]
    assert len(outs) == 1 and "SECRET" not in outs[0] and "no-secrets" in outs[0]


def test_trace_processor_records_unguarded_runs(tmp_path):
    from agentguard.integrations.openai_agents import AgentGuardTraceProcessor

    effects = []
    rec = TraceRecorder(tmp_path / "t.jsonl")
    set_trace_processors([AgentGuardTraceProcessor(rec)])
    agent = Agent(
        name="a",
        model=ScriptedModel(
            [[function_call("read_file", {"path": "/x"}, call_id="c1")], [assistant_message("done")]]
        ),
        tools=make_tools(effects),
    )
    asyncio.run(Runner.run(agent, "go"))
    [trace] = read_traces(str(tmp_path / "t.jsonl"))
    assert [s.action.name for s in trace.steps] == ["read_file"] and "decision" not in trace.steps[0].signals


def test_streamed_run_is_gated_the_same():
    effects = []
    ag = AgentsGuard(stack())
    set_trace_processors([])
    model = ScriptedModel(
        [
            [function_call("delete_file", {"path": "/tmp/a"}, call_id="c1")],
            [function_call("read_file", {"path": "/tmp/b"}, call_id="c2")],
            [assistant_message("done")],
        ]
    )
    agent = Agent(name="a", model=model, tools=ag.guard_tools(make_tools(effects)))

    async def main():
        result = Runner.run_streamed(agent, "go")
        kinds = [ev.type async for ev in result.stream_events()]
        return result, kinds

    result, kinds = asyncio.run(main())
    assert effects == [("read", "/tmp/b")] and result.final_output == "done"
    assert "run_item_stream_event" in kinds


# -- red team: arguments the guard and the tool could read differently -----------------------------
import ast  # noqa: E402
import json  # noqa: E402

from agents import FunctionTool  # noqa: E402
from hypothesis import given, settings as hsettings, strategies as st  # noqa: E402


def _first_wins(raw):
    """How a tool that forwards the raw JSON to another service may read it: the first of two keys wins,
    and a single-quoted object is repaired (what JSON-repair helpers do)."""
    try:
        return json.loads(raw, object_pairs_hook=lambda kv: {k: v for k, v in reversed(kv)})
    except ValueError:
        return ast.literal_eval(raw)


def _raw_tool(effects):
    async def invoke(ctx, raw):
        effects.append(("read", _first_wins(raw).get("path")))
        return "ok"

    return FunctionTool(name="read_file", description="Read a file.", on_invoke_tool=invoke, strict_json_schema=False,
                        params_json_schema={"type": "object", "properties": {"path": {"type": "string"}}})


def _run_raw(raw, on_error=Decision.REJECT, effects=None):
    effects = [] if effects is None else effects
    set_trace_processors([])
    ag = AgentsGuard(stack(), on_error=on_error)
    agent = Agent(name="a", model=ScriptedModel([[function_call("read_file", raw, call_id="c1")],
                                                 [assistant_message("done")]]),
                  tools=ag.guard_tools([_raw_tool(effects)]))

    async def go():
        res = await Runner.run(agent, "go")
        while res.interruptions:  # the SDK asks a human for arguments it cannot parse: the human says yes
            state = res.to_state()
            for item in res.interruptions:
                state.approve(item)
            res = await Runner.run(agent, state)
        return res

    res = asyncio.run(go())
    return effects, [it.output for it in res.new_items if type(it).__name__ == "ToolCallOutputItem"]


@pytest.mark.parametrize("raw", [
    '{"path": "/etc/shadow", "path": "notes.txt"}',   # the guard (last wins) saw notes.txt
    "{'path': '/etc/shadow'}",                          # not JSON: was decided as {'_raw': ...}
    '{"path": "notes.txt", "n": NaN}',           # these two ran before (the guard read n as nan / inf)
    '{"path": "notes.txt", "n": 1e999}',
    '["/etc/shadow"]',
])
def test_arguments_read_differently_by_a_tool_never_run(raw):
    effects, outs = _run_raw(raw)
    assert effects == [] and len(outs) == 1 and "arguments" in outs[0], (effects, outs)


def test_strict_arguments_still_run_and_the_refusal_can_halt():
    assert _run_raw('{"path": "notes.txt"}')[0] == [("read", "notes.txt")]
    with pytest.raises(ToolInputGuardrailTripwireTriggered):  # the default on_error (HALT) stops the run
        _run_raw('{"path": "a", "path": "/etc/x"}', on_error=Decision.HALT)


_KEY = st.sampled_from(['"path"', '"p\\u0061th"', "'path'"])
_VAL = st.sampled_from(['"/etc/shadow"', '"notes.txt"', "NaN", "1e999", '"\\ud800"'])


@hsettings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(_KEY, _VAL), min_size=1, max_size=3))
def test_property_a_call_runs_only_with_what_the_guard_read(pairs):
    raw = "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"
    effects = []
    try:
        _run_raw(raw, effects=effects)
    except UnicodeEncodeError:  # the SDK itself fails on a lone surrogate (before any tool runs)
        pass
    if effects:  # it ran: the text was strict JSON (one key, a JSON string), read alike by guard and tool
        assert len(pairs) == 1 and pairs[0][0] != "'path'" and pairs[0][1] == '"notes.txt"', (raw, effects)
        assert effects == [("read", "notes.txt")]
