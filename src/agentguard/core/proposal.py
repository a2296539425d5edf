"""Proposals as the one decision path reads them: typed once (:func:`to_proposal`), identified by what they
are (:func:`call_key`), and shown to an approver with every guard's verdict (:func:`approval_request`)."""

from __future__ import annotations

import json
import math
from typing import Any, Mapping

from .enforcement import Outcome
from .errors import InputError
from .types import Step, ToolCall

__all__ = ["approval_request", "call_key", "to_proposal"]


def to_proposal(proposal: Any) -> ToolCall | Step:
    """The typed proposal: a :class:`ToolCall` or :class:`Step` as is; a mapping with ``name`` (and a
    mapping ``arguments``) as a ToolCall; anything else raises InputError (the caller fails closed)."""
    if isinstance(proposal, (ToolCall, Step)):
        return proposal
    if isinstance(proposal, Mapping) and isinstance(proposal.get("name"), str):
        args = proposal.get("arguments", proposal.get("args", {}))
        if args is None:
            args = {}
        if not isinstance(args, Mapping):
            raise InputError(f"tool call {proposal['name']!r}: arguments must be an object, got {type(args).__name__}")
        return ToolCall(proposal["name"], dict(args), str(proposal.get("call_id") or proposal.get("id") or ""))
    raise InputError(f"cannot read a proposal of type {type(proposal).__name__} (expected a tool call or a step)")


def _canonical(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return {str(k): _canonical(v) for k, v in sorted(obj.items(), key=lambda kv: str(kv[0]))}
    if isinstance(obj, (list, tuple)):
        return [_canonical(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return {"$float": repr(obj)}
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    return {"$repr": f"{type(obj).__name__}:{obj!r}"}


#: one encoder (json.dumps with options builds a new one per call, which costs more than the encoding)
_ENCODER = json.JSONEncoder(sort_keys=True, ensure_ascii=True, separators=(",", ":"), allow_nan=False)


def _plain_keys(obj: Any) -> bool:
    """True when every dict inside ``obj`` has only string keys (the encoder would stringify others).
    Concrete types only: the encoder refuses any other mapping, which then takes the slow path."""
    if isinstance(obj, dict):
        return all(type(k) is str and _plain_keys(v) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return all(_plain_keys(v) for v in obj)
    return True


def call_key(call: Any) -> str:
    """The identity of a proposed call: the canonical JSON of its tool name and arguments (keys sorted,
    ASCII, no spaces; non-finite floats and non-JSON values spelled out, so ``inf`` and ``null`` differ),
    a string used as a dictionary key (no digest: nothing is stored or compared outside the process).
    Two calls with the same key are the same call whatever id the client gave them."""
    if isinstance(call, ToolCall):
        try:  # fast path: plain JSON arguments with string keys serialise canonically as they are
            raw = _ENCODER.encode([call.name, call.arguments])
            if _plain_keys(call.arguments):
                return "t" + raw
        except (TypeError, ValueError):  # a non-JSON value or a non-finite float: spelled out below
            pass
        body: Any = {"name": call.name, "arguments": _canonical(call.arguments)}
    elif isinstance(call, Step):
        a = call.action
        body = {"step": _canonical(a.to_dict() if isinstance(a, ToolCall) else a), "state": _canonical(call.state),
                "output": call.output}
    else:
        body = _canonical(call)
    return "c" + json.dumps(body, sort_keys=True, ensure_ascii=True, separators=(",", ":"), allow_nan=False)


def approval_request(outcome: Outcome) -> dict[str, Any]:
    """What an approver is shown for an ``ask`` outcome: the call, the reason, and every guard's verdict
    (so a human sees what each guard said, not only the one that asked)."""
    v = outcome.verdict
    trail = list((v.details or {}).get("verdicts") or [v.to_dict()]) if v is not None else []
    call = outcome.proposal
    lines = [f"- {t.get('guard') or '?'}: {t.get('decision')} ({t.get('reason', '')})" for t in trail]
    return {
        "call": call.to_dict() if hasattr(call, "to_dict") else call,
        "reason": v.reason if v is not None else "",
        "verdicts": trail,
        "text": (f"agentguard asks a human about {getattr(call, 'name', 'this action')}: "
                 f"{v.reason if v is not None else ''}\n" + "\n".join(lines)),
    }
