"""One driver per entry point, each driving the real framework, for the cross-adapter property tests
(tests/integrations/test_one_path.py).

A driver runs a scripted agent (a model that proposes the given turns, whatever call ids they carry:
duplicate, empty, missing) whose tools are real tools of the framework that record what ran. Every
ESCALATE is answered through the framework's own approval flow with ``approve``. ``strategy`` (a name
such as ``"CRP+TEH"``, or None for the default) is the adapter's configured enforcement strategy.

Tools: every driver offers the tools in :data:`TOOLS`, each taking ``target: str`` and ``amount: int``
and returning ``"ok"``; a tool call's arguments are always ``{"target": ..., "amount": ...}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Protocol

from pydantic import AfterValidator

from agentguard.core import BaseGuard, Context, Guard, ToolCall, Verdict

TOOLS = ("read_note", "delete_note", "transfer_funds", "write_file")


@dataclass
class RunResult:
    """What happened: ``executed`` lists ``(tool name, arguments)`` in the order the tool bodies really ran;
    ``stopped`` says the guard ended the run; ``asked`` holds what each human approval request showed
    (a dict with at least ``verdicts``: every guard's verdict as ``Verdict.to_dict()``)."""

    executed: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    stopped: bool = False
    asked: list[dict[str, Any]] = field(default_factory=list)


class Driver(Protocol):
    name: str

    def run(self, guard: Guard, turns: list[list[ToolCall]], *, approve: bool = False,
            strategy: str | None = None) -> RunResult:
        """Drive one run: the model proposes ``turns`` in order (each a list of calls in one model turn),
        the adapter in front of ``guard`` gates them."""
        ...


class Seen(BaseGuard):
    """Records what it judged (name, arguments) and allows: the reading tests compare it with what ran."""

    name = "seen"

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict]] = []

    def check(self, context: Context, proposal: Any) -> Verdict:
        self.seen.append((proposal.name, dict(proposal.arguments)))
        return Verdict.allow()


class Flips(list[str]):
    """A pydantic validator whose answer changes between calls: the values in order, then the last ("RAISE"
    raises), for the validators-run-twice tests of the LangChain and Agents SDK readers."""

    def __call__(self, _: str) -> str:
        got = self.pop(0) if len(self) > 1 else self[0]
        if got == "RAISE":
            raise ValueError("not now")
        return got


FLIPS = Flips()
FlipPath = Annotated[str, AfterValidator(FLIPS)]
