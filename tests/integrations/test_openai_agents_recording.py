"""What the OpenAI Agents adapter records (real `agents` package, its scripted model, no network): one
trace line per run across an approval interruption, steps in the order the calls were decided, every
decision and the ``blocked`` label kept when the run context names the run (``run_id``), and the state
the spec needs (``state_fn``) on every step."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("agents")

from agents import Agent, Runner, function_tool, set_trace_processors  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402

from agentguard import BaseGuard, Decision, Verdict, read_traces  # noqa: E402
from agentguard.integrations.openai_agents import AgentGuardTraceProcessor, AgentsGuard  # noqa: E402
from agentguard.integrations.recording import TraceRecorder  # noqa: E402
from agentguard.spec.history import history_state  # noqa: E402


class Deletes(BaseGuard):
    """ESCALATE deletes under /tmp, REJECT other deletes, ALLOW the rest."""

    name = "deletes"

    def check(self, context, proposal):
        if proposal.name != "delete_file":
            return Verdict.allow(self.name)
        if str(proposal.arguments.get("path", "")).startswith("/tmp/"):
            return Verdict(Decision.ESCALATE, "deleting needs a human", self.name)
        return Verdict(Decision.REJECT, "only /tmp may be deleted", self.name)


def tools(effects):
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


SCRIPT = [
    [function_call("read_file", {"path": "/tmp/n"}, call_id="c1")],
    [function_call("delete_file", {"path": "/tmp/a"}, call_id="c2")],
    [function_call("delete_file", {"path": "/srv/db"}, call_id="c3")],
    [assistant_message("done")],
]


def run(tmp_path, context, *, approve=True, processor=True):
    effects = []
    rec = TraceRecorder(tmp_path / "t.jsonl")
    ag = AgentsGuard(Deletes(), state_fn=history_state, recorder=None if processor else rec)
    set_trace_processors([ag.trace_processor(rec)] if processor else [])
    agent = Agent(name="a", instructions="x", model=ScriptedModel(SCRIPT), tools=ag.guard_tools(tools(effects)))

    async def go():
        first = await Runner.run(agent, "clean", context=context)
        assert len(first.interruptions) == 1
        state = first.to_state()
        [item] = first.interruptions
        state.approve(item) if approve else state.reject(item)
        return await Runner.run(agent, state, context=context)

    try:
        out = asyncio.run(go())
    finally:
        set_trace_processors([])
    rec.finish_all()
    return out, effects, read_traces(str(tmp_path / "t.jsonl"))


@pytest.mark.parametrize("context", [None, {"run_id": "run-7"}], ids=["trace-id", "context-run-id"])
def test_one_line_per_run_across_an_approval_with_decisions_in_order(tmp_path, context):
    out, effects, traces = run(tmp_path, context)
    assert out.final_output == "done"
    assert effects == [("read", "/tmp/n"), ("delete", "/tmp/a")]
    [t] = traces  # one line, not one per Runner.run
    if context:
        assert t.run_id == "run-7"
    calls = [(s.action.name, s.action.arguments["path"]) for s in t.steps]
    assert calls == [("read_file", "/tmp/n"), ("delete_file", "/tmp/a"), ("delete_file", "/srv/db")]
    assert [int(s.signals["decision"]) for s in t.steps] == [Decision.ALLOW, Decision.ALLOW, Decision.REJECT]
    assert t.labels["blocked"] == 1 and t.labels["adapter"] == "openai_agents"
    assert t.steps[0].observation == "contents of /tmp/n" and t.steps[1].observation == "deleted /tmp/a"
    # the state each call was decided in: the history before it and the call itself
    assert [s.state["call"]["tool"] for s in t.steps] == ["read_file", "delete_file", "delete_file"]
    assert [s.state["tools"] for s in t.steps] == [[], ["read_file"], ["read_file", "delete_file"]]


def test_a_rejected_approval_is_recorded_as_refused(tmp_path):
    out, effects, traces = run(tmp_path, {"run_id": "run-8"}, approve=False)
    assert effects == [("read", "/tmp/n")]
    [t] = traces
    assert [s.action.arguments["path"] for s in t.steps] == ["/tmp/n", "/tmp/a", "/srv/db"]
    assert [int(s.signals["decision"]) for s in t.steps] == [Decision.ALLOW, Decision.REJECT, Decision.REJECT]
    assert t.labels["blocked"] == 2


def test_recorder_without_a_trace_processor(tmp_path):
    """``AgentsGuard(recorder=...)`` records without tracing; the run's line is written at finish_all."""
    out, effects, traces = run(tmp_path, {"run_id": "run-9"}, processor=False)
    [t] = traces
    assert len(t.steps) == 3 and t.run_id == "run-9"


def test_unguarded_runs_are_still_recorded_from_spans_in_start_order(tmp_path):
    effects = []
    rec = TraceRecorder(tmp_path / "t.jsonl")
    set_trace_processors([AgentGuardTraceProcessor(rec)])
    agent = Agent(name="a", model=ScriptedModel([
        [function_call("read_file", {"path": "/x"}, call_id="c1"), function_call("read_file", {"path": "/y"},
                                                                                   call_id="c2")],
        [assistant_message("done")]]), tools=tools(effects))
    try:
        asyncio.run(Runner.run(agent, "go"))
    finally:
        set_trace_processors([])
    [t] = read_traces(str(tmp_path / "t.jsonl"))
    assert [s.action.arguments["path"] for s in t.steps] == ["/x", "/y"]


def test_a_rejection_with_no_later_call_is_recorded_when_the_run_ends(tmp_path):
    """The SDK runs no guardrail for a call the human rejected; with no call after it, the run's end
    settles it: refused, audited, recorded, and the run's line written."""
    effects = []
    rec = TraceRecorder(tmp_path / "t.jsonl")
    ag = AgentsGuard(Deletes(), state_fn=history_state)
    set_trace_processors([ag.trace_processor(rec)])
    agent = Agent(name="a", instructions="x", tools=ag.guard_tools(tools(effects)), model=ScriptedModel(
        [[function_call("delete_file", {"path": "/tmp/a"}, call_id="c1")], [assistant_message("ok")]]))

    async def go():
        first = await Runner.run(agent, "clean", context={"run_id": "run-10"})
        state = first.to_state()
        state.reject(first.interruptions[0])
        return await Runner.run(agent, state, context={"run_id": "run-10"})

    try:
        asyncio.run(go())
        [t] = read_traces(str(tmp_path / "t.jsonl"))  # written at the run's end, not at shutdown
    finally:
        set_trace_processors([])
    assert effects == [] and t.run_id == "run-10"
    assert [int(s.signals["decision"]) for s in t.steps] == [Decision.REJECT] and t.labels["blocked"] == 1
