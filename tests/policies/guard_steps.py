"""The steps the provenance tests drive a guard with, written once: start a run on a prompt, ask for a call (and,
when allowed and a result is given, observe what it returned), and a read that must be allowed."""

import itertools
from typing import Any

from agentguard.core.types import Context, ToolCall
from agentguard.policies.provenance_guard import ProvenanceGuard

_RUN = itertools.count()


def start(g: ProvenanceGuard, prompt: str) -> str:
    run = f"run{next(_RUN)}"
    g.observe_prompt(run, prompt)
    return run


def ask(g: ProvenanceGuard, run: str, name: str, args: dict[str, Any], result: Any = None) -> bool:
    """Ask the guard; when allowed and ``result`` is given, the call runs and its result is observed."""
    call = ToolCall(name, args)
    v = g.check(Context(run_id=run), call)
    if v.allowed and result is not None:
        g.observe_result(run, call, result)
    return v.allowed


def read(g: ProvenanceGuard, run: str, name: str, args: dict[str, Any], result: Any) -> None:
    assert ask(g, run, name, args, result), name
