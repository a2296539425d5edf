"""A tool halted for the run (HaltTool, VeriGuard TEH) stays halted whatever the proposal is spelled as or
carried in (session 18 red team of the guard service).

The holes, each confirmed against the service before the fix (``tests/server/test_server_halted_tools.py``
drives the same attacks over HTTP):

1. spelling: the halted set was compared with ``==``, but the rules grant ``READ-FILE``, `` read_file`` or
   ``ｒead_file`` as ``read_file`` (canonical names), so a respelled call ran the halted tool again;
2. steps: a Step's tool call had no ``name``, so a refused step halted the tool ``None`` and a later step (or
   ``/v1/check``) of the same tool ran;
3. approvals: an ESCALATE asked before the tool was halted and approved after it ran the halted tool.

One reader (:func:`~agentguard.core.strategies.halted_tool`) now answers "is this proposal's tool halted?" for
the strategies, the pipeline's escalation and approval paths and the service's idempotent replays.
"""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings, strategies as st

from agentguard.core.canonical import canonical_name, name_forms
from agentguard.core.guard import BaseGuard
from agentguard.core.pipeline import Pipeline
from agentguard.core.strategies import HaltTool, Replan, halted_tool, tool_of
from agentguard.core.types import Context, Decision, Step, ToolCall, Verdict


class Rules(BaseGuard):
    """Refuses a call with ``path`` ``/etc/shadow``, escalates ``transfer_funds`` (canonical), allows the rest."""

    name = "rules"

    def check(self, context, proposal):
        call = proposal.action if isinstance(proposal, Step) else proposal
        if not isinstance(call, ToolCall):
            return Verdict.allow(self.name)
        if call.arguments.get("path") == "/etc/shadow":
            return Verdict(Decision.REJECT, "path denied", self.name)
        if canonical_name(call.name) == "transfer_funds":
            return Verdict(Decision.ESCALATE, "needs approval", self.name)
        return Verdict.allow(self.name)


def _halt_read_file(p: Pipeline, run: str, as_step: bool = False) -> None:
    bad = ToolCall("read_file", {"path": "/etc/shadow"})
    out = p.decide(run, Step(action=bad) if as_step else bad)
    assert not out.execute
    assert p.run(run).context.metadata["halted_tools"] == {"read_file"}


def test_tool_of_reads_calls_and_steps():
    assert tool_of(ToolCall("a", {})) == "a"
    assert tool_of(Step(action=ToolCall("b", {}))) == "b"
    assert tool_of(Step(action="find Pot")) is None and tool_of(Step()) is None and tool_of("text") is None


def test_a_respelled_call_of_a_halted_tool_is_refused():
    p = Pipeline(Rules(), strategy="TEH")
    _halt_read_file(p, "r")
    for name in ("read_file", "Read-File", "READ_FILE", " read_file", "read file", "\uff52ead_file", "fs__read_file",
                 "mcp.read_file"):
        out = p.decide("r", ToolCall(name, {"path": "notes"}))
        assert not out.execute and "halted earlier" in out.message, name
    assert p.decide("r", ToolCall("list_files", {})).execute  # another tool still runs
    assert p.decide("other-run", ToolCall("Read-File", {"path": "notes"})).execute  # halted for that run only


def test_a_step_halts_its_tool_and_a_halted_tool_is_refused_as_a_step():
    p = Pipeline(Rules(), strategy="TEH")
    _halt_read_file(p, "s", as_step=True)  # before the fix: the tool None was halted
    assert not p.decide("s", Step(action=ToolCall("read_file", {"path": "notes"}))).execute
    assert not p.decide("s", ToolCall("read_file", {"path": "notes"})).execute
    p2 = Pipeline(Rules(), strategy="TEH")
    _halt_read_file(p2, "t")  # halted through a tool call, refused as a step
    assert not p2.decide("t", Step(action=ToolCall("READ_FILE", {"path": "notes"}))).execute


def test_crp_teh_keeps_a_respelled_halted_tool_halted():
    p = Pipeline(Rules(), strategy="CRP+TEH")
    ctx = Context(run_id="x")
    ctx.metadata["halted_tools"] = {"read_file"}
    assert isinstance(p.enforcement, Replan) and isinstance(p.enforcement.then, HaltTool)
    out = p.enforcement.apply(Verdict(Decision.REJECT, "no", "rules"), ctx, ToolCall("Read-File", {}))
    assert not out.execute and "halted earlier" in out.message


@pytest.mark.parametrize("respelled", ["transfer_funds", "Transfer-Funds"])
def test_an_escalation_approved_after_its_tool_was_halted_does_not_run(respelled):
    p = Pipeline(Rules(), strategy="TEH")
    asked = p.decide("a", ToolCall("transfer_funds", {"amount": 5}))
    assert asked.ask
    assert not p.decide("a", ToolCall(respelled, {"path": "/etc/shadow"})).execute  # halts transfer_funds
    out = p.resolve(asked, True, approver="alice")
    assert not out.execute and "halted" in out.message + out.verdict.reason
    fresh = p.decide("a", ToolCall("transfer_funds", {"amount": 5}))  # asked again: refused without asking
    assert not fresh.execute and not fresh.ask


def test_an_approval_before_any_halt_still_runs():
    p = Pipeline(Rules(), strategy="TEH")
    asked = p.decide("b", ToolCall("transfer_funds", {"amount": 5}))
    assert p.resolve(asked, True, approver="alice").execute


# -- property: every spelling the rules read as the halted tool is halted ------------------------------------

_SEPARATORS = st.sampled_from(["_", "-", " ", "__", "_-", "  "])


@st.composite
def spellings(draw, words=("read", "file")):
    """A tool name the canonical reader takes for ``read_file``: per-letter case, a separator between the
    words, full-width letters, surrounding white space, a namespace prefix (a refusing rule matches every
    name form)."""
    out = []
    for w in words:
        letters = []
        for ch in w:
            ch = ch.upper() if draw(st.booleans()) else ch
            if draw(st.integers(0, 9)) == 0:
                ch = unicodedata.lookup("FULLWIDTH LATIN " + ("CAPITAL" if ch.isupper() else "SMALL") + " LETTER "
                                        + ch.upper())
            letters.append(ch)
        out.append("".join(letters))
    name = draw(_SEPARATORS).join(out)
    name = draw(st.sampled_from(["", " ", "\t"])) + name + draw(st.sampled_from(["", " "]))
    prefix = draw(st.sampled_from(["", "fs__", "mcp.", "server/"]))
    return prefix + name


@settings(max_examples=200, deadline=None)
@given(name=spellings(), as_step=st.booleans())
def test_property_every_spelling_of_a_halted_tool_is_halted(name, as_step):
    assert "read_file" in name_forms(name)  # the generator makes only names the rules read as read_file
    meta = {"halted_tools": {"read_file"}}
    call = ToolCall(name, {"path": "notes"})
    assert halted_tool(meta, Step(action=call) if as_step else call) == "read_file"
    p = Pipeline(Rules(), strategy="TEH")
    _halt_read_file(p, "p")
    out = p.decide("p", Step(action=call) if as_step else call)
    assert not out.execute


@settings(max_examples=100, deadline=None)
@given(name=st.text(min_size=1, max_size=20))
def test_property_a_tool_the_rules_read_otherwise_is_not_halted(name):
    meta = {"halted_tools": {"read_file"}}
    assert (halted_tool(meta, ToolCall(name, {})) is not None) == ("read_file" in name_forms(name))
