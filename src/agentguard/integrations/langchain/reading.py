"""The arguments a LangChain tool's function receives for a call: what the gate judges (:func:`_reading`) and
the one reading the tool that runs is pinned to (:func:`_pinned`).

A LangChain tool does not receive the model's ``args``. ``BaseTool._parse_input`` validates them with the
tool's pydantic schema (lax mode: stripped whitespace, ``" 5000 "`` as ``5000``, a field's alias, defaults) and
``_to_args_and_kwargs`` turns the result into the function's arguments; a single-input ``Tool`` passes its one
value *positionally, whatever key the model named it under* (``{"cmd": "rm -rf /"}`` runs ``rm -rf /`` as the
tool's ``tool_input``, past a rule on ``tool_input``). Both steps are LangChain's own, called here; the guard
judges their result, with a positional value named by the tool's advertised argument (``tool.args``).

A tool also receives what LangGraph's tool node injects after the gate: a named state field
(``path: Annotated[str, InjectedState("target")]``) is a value the model never wrote but may have set through
another tool (``Command(update={"target": "/etc/passwd"})``), so the judged call carries it under the tool's
argument name (:func:`_state_args`; the tool node strips a model-written value for it and injects the state's); the
tool that runs checks that it received exactly that value. The whole state, the messages list, the store and the
runtime are not judged (context, not an argument).
"""

from __future__ import annotations

import copy
from typing import Any

from ...core.errors import AgentGuardError
from ...core.pipeline import call_key
from ...core.types import ToolCall
from ..common import plain

__all__ = ["_pinned", "_reading", "_state_args"]


class _Refused(Exception):
    """LangChain's own reading refuses the arguments (the tool does not run with them)."""


def _received(tool: Any, args: dict[str, Any], call_id: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(what the function receives, the validated input)`` for the model's ``args``, named: keyword arguments
    as they are, a positional one by the tool's advertised argument of that position; the model's injected
    arguments kept, the ones LangChain adds (the call id) left out. Raises :class:`_Refused` when LangChain's
    validation refuses them, or a positional value has no advertised name."""
    injected = frozenset(getattr(tool, "_injected_args_keys", ()) or ())
    try:
        reader = tool.model_copy(update={"args_schema": tool.tool_call_schema}) if injected else tool
        got = reader._parse_input(copy.deepcopy(dict(args)), call_id)
        if not isinstance(got, dict):
            raise _Refused("not a mapping")
        to_run = getattr(tool, "_to_args_and_kwargs", None)
        pos, kw = to_run(copy.deepcopy(got), call_id) if callable(to_run) and not injected else ((), got)
    except _Refused:
        raise
    except Exception as exc:  # noqa: BLE001 - the framework's own validation refuses these arguments
        raise _Refused(str(exc)) from None
    names = list(getattr(tool, "args", None) or {})
    if len(pos) > len(names) or any(n in kw for n in names[:len(pos)]):
        raise _Refused("positional arguments the tool does not name")
    named = {**dict(zip(names, pos)), **kw} if pos else dict(got)
    # an injected argument the model wrote itself stays in what is judged (the attempt may be refused; the tool
    # never receives it: the tool node strips it, and _pinned too); one LangChain adds (the call id) is not the model's
    return {k: plain(v) for k, v in named.items() if k in args or k not in injected}, got


def _state_args(tool: Any, state: Any) -> dict[str, Any]:
    """The named state fields LangGraph's tool node injects into a call of ``tool`` (``InjectedState("field")``),
    by the tool's argument name, as plain data: read from ``state`` the way the tool node reads it (a mapping's key,
    else an attribute; a field absent from the state is left out, as the tool node leaves an optional one). The
    injection spec is LangGraph's own (``_get_all_injected_args``, private). A tool that declares injected
    arguments whose spec cannot be read (another LangGraph) is refused unread (:class:`AgentGuardError`: the call
    fails, it never runs with values nobody judged); any other tool has nothing injected. The messages list and the
    whole state are context, not arguments: left out."""
    if tool is None or state is None:
        return {}
    try:
        from langgraph.prebuilt.tool_node import _get_all_injected_args

        fields = dict(getattr(_get_all_injected_args(tool), "state", None) or {})
    except Exception as exc:  # noqa: BLE001 - another LangGraph, or not a tool it can inspect
        if getattr(tool, "_injected_args_keys", ()):
            raise AgentGuardError(f"cannot read which state LangGraph injects into {getattr(tool, 'name', tool)!r} "
                                  f"({type(exc).__name__}): refused unread") from None
        return {}
    out: dict[str, Any] = {}
    for arg, field in fields.items():
        if not field or field == "messages":
            continue
        if isinstance(state, dict):
            if field in state:
                out[arg] = plain(state[field])
        elif hasattr(state, field):
            out[arg] = plain(getattr(state, field))
    return out


def _reading(tool: Any, call: ToolCall, state: Any = None) -> ToolCall:
    """``call`` with the arguments LangChain hands the tool's function for it (see the module doc): the guard
    judges that, never the model's spelling (``{"path": "  /etc/shadow"}`` passed a ``forbid = "^/etc"`` rule and
    read ``/etc/shadow``). A tool with injected arguments (``InjectedState``, ``ToolRuntime``) is read with its
    ``tool_call_schema`` (the schema without them, which LangChain derives from the same fields). Arguments
    LangChain refuses are judged as given: the framework refuses them itself, the tool never runs."""
    if not callable(getattr(tool, "_parse_input", None)):
        return call
    try:
        named, _ = _received(tool, dict(call.arguments), call.call_id or None)
    except _Refused:
        return call
    return ToolCall(call.name, {**named, **_state_args(tool, state)}, call.call_id)


def _pinned(tool: Any, args: dict[str, Any], judged: ToolCall, state: Any = None) -> Any:
    """``tool`` reading ``args`` as exactly ``judged``, or None when LangChain now reads them otherwise.

    LangChain validates a call's arguments again when the tool runs (``_parse_input``): a validator answering
    otherwise on each call (or failing once) would run a value nobody judged. The arguments are read once more
    here (:func:`_received`) and compared with the judged call; the tool that runs is a copy whose
    ``_parse_input`` returns that validated value, with the injected arguments taken only from what the tool node
    injects (a model-written value for one, which the judged call keeps so that a guard may refuse the attempt,
    never reaches the tool: LangGraph strips it, and so does this reading), each injected state field checked
    against the judged one (``state``: what the tool node injects from)."""
    parse = getattr(tool, "_parse_input", None)
    if not callable(parse):
        return tool
    injected = frozenset(getattr(tool, "_injected_args_keys", ()) or ())
    try:
        named, got = _received(tool, args, judged.call_id or None)
    except _Refused:  # it refuses now: it does not run
        return None
    from_state = _state_args(tool, state)
    if call_key(ToolCall(judged.name, {**named, **from_state}, judged.call_id)) != call_key(judged):
        return None

    sent = copy.deepcopy(args)

    def fixed(tool_input: Any, tool_call_id: str | None) -> Any:
        given = {k: v for k, v in tool_input.items() if k not in injected} if isinstance(tool_input, dict) else None
        if given is None or plain(given) != plain({k: v for k, v in sent.items() if k not in injected}):
            # a middleware inside the gate replaced the arguments after the decision (LangChain's per-call HITL
            # applying a reviewer's edit): neither the replacement (never judged) nor the judged call (which the
            # reviewer did not approve) runs
            raise ValueError("agentguard: the call's arguments were replaced after the guard judged them (put the "
                             "middleware that edits calls before the agentguard gate)")
        base = parse(tool_input, tool_call_id) if injected else {}
        if any(k not in base or plain(base[k]) != v for k, v in from_state.items()):  # the state changed since
            raise ValueError("agentguard: an injected state value is not the one the guard judged")
        # an injected argument is the tool node's alone: a value the model wrote for it (which LangGraph strips
        # against forgery) never reaches the tool through the pinned reading
        return {**{k: v for k, v in copy.deepcopy(got).items() if k not in injected},
                **{k: v for k, v in base.items() if k in injected}}

    clone = tool.model_copy()
    object.__setattr__(clone, "_parse_input", fixed)
    _once(clone, tool.name)
    return clone


def _once(clone: Any, name: str) -> None:
    """Let ``clone`` (the tool of one decision) run once: one decision, one execution. A middleware inside the
    gate that calls the tool again (LangChain's ``ToolRetryMiddleware`` after a failure) would run a call nobody
    decided a second time (a budget guard that allowed one transfer saw four run); that second run raises
    instead. (Put retries outside the gate, before it in the middleware list: each attempt is then decided.)"""
    spent = [False]

    def spend() -> None:
        if spent[0]:
            raise RuntimeError(f"agentguard: this call of {name} was decided once and has run; running it again "
                               "needs a new decision (put retry middleware before the agentguard gate)")
        spent[0] = True

    run, arun = clone.run, clone.arun

    def run_once(*args: Any, **kwargs: Any) -> Any:
        spend()
        return run(*args, **kwargs)

    async def arun_once(*args: Any, **kwargs: Any) -> Any:
        spend()
        return await arun(*args, **kwargs)

    object.__setattr__(clone, "run", run_once)
    object.__setattr__(clone, "arun", arun_once)
