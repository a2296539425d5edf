"""The core vocabulary: ToolCall, Step, Trace, Decision, Verdict, Context.

These are small, immutable-where-possible value types with a documented contract, shared by every
mechanism (verified policies, proactive prediction, calibrated monitoring, safety filters) and by
every adapter. Nothing here imports a heavy dependency.
"""

from __future__ import annotations

import enum
import json
import time
import uuid
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Iterable, Iterator, Mapping

from .errors import InputError

__all__ = ["Context", "Decision", "Step", "ToolCall", "Trace", "Verdict"]


@dataclass(frozen=True)
class ToolCall:
    """A tool call proposed by an agent: ``ToolCall(name, arguments, call_id)``."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    call_id: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InputError("ToolCall.name must be a non-empty string")
        if type(self.arguments) is not dict and not isinstance(self.arguments, Mapping):  # a dict: no ABC check
            raise InputError(f"ToolCall.arguments must be a mapping, got {type(self.arguments).__name__}")

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "arguments": dict(self.arguments), "call_id": self.call_id}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ToolCall":
        """Read a call ``{"name", "arguments", "call_id"}`` (``id``, as OpenAI names a tool call's id, is an
        alias of ``call_id``). Any other key is an error, never ignored: a misspelt ``"args"`` would
        otherwise be decided as a call without arguments."""
        if not isinstance(d, Mapping):
            raise InputError(f"a tool call must be an object, got {type(d).__name__}")
        unknown = sorted(str(k) for k in d if k not in _CALL_KEYS)
        if unknown:
            raise InputError(f"tool call has unknown key(s) {', '.join(map(repr, unknown))} "
                             f"(known: {', '.join(_CALL_KEYS)})")
        if "name" not in d:
            raise InputError("tool call is missing 'name'")
        arguments = d.get("arguments")
        if arguments is not None and not isinstance(arguments, Mapping):
            raise InputError(f"tool call 'arguments' must be an object, got {type(arguments).__name__}")
        if "id" in d and "call_id" in d and str(d["id"]) != str(d["call_id"]):
            raise InputError("tool call has both 'call_id' and 'id' (its alias) with different values")
        call_id = d["call_id"] if "call_id" in d else d.get("id", "")
        return cls(str(d["name"]), dict(arguments or {}), str(call_id if call_id is not None else ""))


#: the keys of a tool call's dict form (``id`` is the alias of ``call_id``)
_CALL_KEYS = ("name", "arguments", "call_id", "id")


class Decision(enum.IntEnum):
    """What a guard decides, ordered from most permissive to strictest.

    The integer values are stable (stored in traces). When guards compose, a stack returns the
    strictest verdict by :attr:`strictness`: ``ALLOW < MODIFY < RECOVER < ESCALATE < REJECT < HALT``
    (a refusal is never turned into something a human can approve).
    """

    ALLOW = 0  # go on unchanged
    MODIFY = 1  # go on with changed arguments
    RECOVER = 2  # replace the action by a fallback action
    REJECT = 3  # do not execute; tell the agent why; the run goes on
    ESCALATE = 4  # ask a human
    HALT = 5  # stop the run

    @property
    def strictness(self) -> int:
        """Rank used when verdicts combine: ``ALLOW < MODIFY < RECOVER < ESCALATE < REJECT < HALT``.

        A refusal (REJECT, HALT) dominates a request for approval (ESCALATE), so a human is only ever
        asked about a call that no guard refused (the integer order of the enum is kept for stored
        traces; composition uses this rank)."""
        return _STRICTNESS[self]

    @property
    def refuses(self) -> bool:
        """True for the decisions that may be a fail-closed answer: REJECT, ESCALATE, HALT."""
        return self in (Decision.REJECT, Decision.ESCALATE, Decision.HALT)

    @classmethod
    def parse(cls, value: "Decision | str | int") -> "Decision":
        if isinstance(value, Decision):
            return value
        if isinstance(value, bool):  # an int to Python, but `decision = false` is a typo, never ALLOW (the enum's 0)
            raise InputError(f"unknown decision {value!r}; expected one of {', '.join(d.name for d in cls)}")
        if isinstance(value, int) and value in cls._value2member_map_:
            return cls(value)
        try:
            return cls[str(value).strip().upper()]
        except KeyError:
            raise InputError(
                f"unknown decision {value!r}; expected one of {', '.join(d.name for d in cls)}"
            ) from None


_STRICTNESS = {Decision.ALLOW: 0, Decision.MODIFY: 1, Decision.RECOVER: 2, Decision.ESCALATE: 3,
               Decision.REJECT: 4, Decision.HALT: 5}


@dataclass(frozen=True)
class Verdict:
    """A guard's answer: a decision, always with a reason and the guard that spoke.

    ``numbers`` holds whatever quantities the decision rests on (probability, score, threshold,
    Q-values); ``action`` holds the replacement action for MODIFY/RECOVER.
    """

    decision: Decision
    reason: str = ""
    guard: str = ""
    numbers: Mapping[str, float] = field(default_factory=dict)
    action: Any = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """A decision given by name or number is read as a :class:`Decision` (``"allow"``, ``0``); a bool or
        anything else raises InputError, so a malformed verdict fails closed where it is made."""
        d = self.decision
        if type(d) is not Decision:
            if isinstance(d, bool) or not isinstance(d, (int, str)):
                raise InputError(f"a verdict's decision must be a Decision, not {type(d).__name__} {d!r}")
            object.__setattr__(self, "decision", Decision.parse(d))

    @property
    def allowed(self) -> bool:
        """True when the proposal may go ahead unchanged."""
        return self.decision is Decision.ALLOW

    @property
    def blocks(self) -> bool:
        """True when the proposal must not be executed as proposed."""
        return self.decision >= Decision.RECOVER

    def stricter_than(self, other: "Verdict") -> bool:
        """True when this verdict wins over ``other`` in a combination (:attr:`Decision.strictness`)."""
        return self.decision.strictness > other.decision.strictness

    @classmethod
    def allow(cls, guard: str = "", reason: str = "allowed", **numbers: float) -> "Verdict":
        return cls(Decision.ALLOW, reason, guard, dict(numbers))

    @classmethod
    def reject(cls, reason: str, guard: str = "", **numbers: float) -> "Verdict":
        return cls(Decision.REJECT, reason, guard, dict(numbers))

    @classmethod
    def halt(cls, reason: str, guard: str = "", **numbers: float) -> "Verdict":
        return cls(Decision.HALT, reason, guard, dict(numbers))

    def with_guard(self, guard: str) -> "Verdict":
        return replace(self, guard=guard)

    def to_dict(self) -> dict[str, Any]:
        d = {
            "decision": self.decision.name,
            "reason": self.reason,
            "guard": self.guard,
            "numbers": {k: float(v) for k, v in self.numbers.items()},
        }
        if self.action is not None:
            d["action"] = self.action.to_dict() if hasattr(self.action, "to_dict") else self.action
        if self.details:
            d["details"] = dict(self.details)
        return d

    def __str__(self) -> str:
        nums = ", ".join(f"{k}={v:.4g}" for k, v in self.numbers.items())
        return f"{self.decision.name} by {self.guard or '?'}: {self.reason}" + (f" ({nums})" if nums else "")


@dataclass
class Step:
    """What the agent saw and did at one time step.

    ``state`` is the concrete state (a dict, or anything the abstraction understands);
    ``action`` the proposed action or tool call; ``output`` an output chunk; ``signals`` named
    signal values (verifier scores, log-probabilities).
    """

    state: Any = None
    action: Any = None
    observation: Any = None
    output: str | None = None
    signals: dict[str, float] = field(default_factory=dict)
    time: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if isinstance(self.action, ToolCall):
            d["action"] = self.action.to_dict()
        return d


@dataclass
class Trace:
    """The steps of one run plus its outcome labels (for example ``{"unsafe": True}``)."""

    steps: list[Step] = field(default_factory=list)
    labels: dict[str, Any] = field(default_factory=dict)
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self) -> Iterator[Step]:
        return iter(self.steps)

    def append(self, step: Step) -> None:
        self.steps.append(step)

    @property
    def states(self) -> list[Any]:
        return [s.state for s in self.steps]

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "labels": dict(self.labels), "steps": [s.to_dict() for s in self.steps]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Trace":
        if not isinstance(d, Mapping) or "steps" not in d:
            raise InputError("a trace must be an object with a 'steps' list")
        steps = []
        for i, s in enumerate(d["steps"]):
            if not isinstance(s, Mapping):
                raise InputError(f"step {i} of trace {d.get('run_id', '?')} is not an object")
            action = s.get("action")
            if isinstance(action, Mapping) and "name" in action:
                action = ToolCall.from_dict(action)
            steps.append(
                Step(
                    state=s.get("state"),
                    action=action,
                    observation=s.get("observation"),
                    output=s.get("output"),
                    signals=dict(s.get("signals") or {}),
                    time=float(s.get("time", 0.0)),
                )
            )
        return cls(steps, dict(d.get("labels") or {}), str(d.get("run_id") or uuid.uuid4().hex))


def read_traces(path: str) -> list[Trace]:
    """Read traces from a JSON Lines file (one trace object per line); clear errors on bad input."""
    traces: list[Trace] = []
    try:
        fh = open(path, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read trace file {path}: {exc.strerror}") from None
    with fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from None
            traces.append(Trace.from_dict(obj))
    if not traces:
        raise InputError(f"trace file {path} is empty")
    return traces


def write_traces(path: str, traces: Iterable[Trace]) -> None:
    """Write traces as JSON Lines (the format :func:`read_traces` reads)."""
    with open(path, "w", encoding="utf-8") as fh:
        for t in traces:
            fh.write(json.dumps(t.to_dict(), default=str) + "\n")


@dataclass
class Context:
    """What a guard may know about the run when it decides.

    ``run_id`` keys per-run state; ``trace`` is the run so far; ``state`` the current concrete
    state; ``metadata`` anything else (user prompt, trusted data, session id).
    """

    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    trace: Trace = field(default_factory=Trace)
    state: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def step_index(self) -> int:
        return len(self.trace.steps)

