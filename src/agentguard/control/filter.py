"""The control-theoretic safety filter of section 3.3 of the ReGuard paper, as an agentguard Guard.

A safety filter is the tuple (fallback policy pi, monitor Delta, intervention scheme phi). From a
Q-function over latent states and actions (:class:`QFunction`) all three follow:

- monitor ``Delta(z, a) = Q(z, a)``;
- fallback policy ``pi(z) = argmax_a Q(z, a)``;
- least-restrictive switching ``phi(z, a_task) = a_task if Q(z, a_task) > epsilon else pi(z)``.

:meth:`SafetyFilter.certify` returns a core :class:`~agentguard.core.types.Verdict`: ALLOW with the
Q-values, or RECOVER with the fallback action in ``verdict.action`` (enforce it with
:class:`~agentguard.core.strategies.Fallback`). With ``intervention="stop"`` the filter is a
LlamaGuard-style monitor without a recovery policy and answers HALT instead.

Bad input has a defined behaviour, never an exception and never ALLOW:
- an observation the encoder cannot read (``ParseError`` or anything else it raises) -> RECOVER with
  this run's last fallback action (or ``default_action`` if the run has none), reason says why;
- a proposed action the parser does not know (``"D"``, free text) -> RECOVER with ``pi(z)``.

When no action is certified (``max_a Q(z, a) <= epsilon``) the paper's phi still executes ``pi(z)``,
which may be the very action it replaces; ``details["fallback_certified"]`` says so, and
``uncertified="stop"`` makes such a verdict HALT instead (no uncertified action is ever executed).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..core.errors import InputError
from ..core.guard import BaseGuard
from ..core.loading import Builds, built, load_callable
from ..core.runs import RunMemory
from ..core.types import Context, Decision, Step, Verdict

__all__ = ["QFunction", "SafetyFilter", "observation_of"]


@runtime_checkable
class QFunction(Protocol):
    """``q_values(z) -> (n, n_actions)`` for a batch of latents ``z``."""

    def q_values(self, z: np.ndarray) -> np.ndarray: ...


def observation_of(context: Context | Any) -> Any:
    """The current observation: ``context.state``, else the last step's observation/state."""
    if not isinstance(context, Context):
        return context
    if context.state is not None:
        return context.state
    if context.trace.steps:
        last = context.trace.steps[-1]
        return last.observation if last.observation is not None else last.state
    return None


class SafetyFilter(BaseGuard):
    """Least-restrictive safety filter: ``certify(context, proposed_action) -> Verdict``.

    ``encoder.encode([observation]) -> z``; ``q.q_values(z) -> Q``; ``actions`` names the actions
    (the verdict's fallback action is one of these names); ``parse_action(proposal) -> index`` raises
    InputError on unknown actions. ``epsilon`` is the switching threshold (intervene when
    ``Q(z, a) <= epsilon``). ``intervention`` is ``"fallback"`` (RECOVER) or ``"stop"`` (HALT).
    ``uncertified`` says what happens when the fallback itself is not certified (``Q(z, pi(z)) <=
    epsilon``: no action is; or the observation is unreadable, so the fallback is the last state's):
    ``"fallback"`` (default, the paper's phi: RECOVER with pi(z) anyway, best effort, since an embodied
    system cannot stop) or ``"stop"`` (HALT: no uncertified action is ever executed). Every RECOVER
    says in ``details["fallback_certified"]`` whether its action is certified.
    """

    def __init__(self, q: QFunction, encoder: Any, actions: Sequence[str],
                 parse_action: Callable[[Any], int] | None = None, epsilon: float = 0.0,
                 default_action: int | None = None, intervention: str = "fallback", name: str = "reguard",
                 max_runs: int = 10_000, uncertified: str = "fallback"):
        if intervention not in ("fallback", "stop"):
            raise InputError("intervention must be 'fallback' or 'stop'")
        if uncertified not in ("fallback", "stop"):
            raise InputError("uncertified must be 'fallback' or 'stop'")
        self.uncertified = uncertified
        self.q, self.encoder, self.actions = q, encoder, list(actions)
        if not self.actions:
            raise InputError("a safety filter needs at least one action")
        self._parse = parse_action or self._default_parse
        self.epsilon = _finite(epsilon, "epsilon")
        if default_action is not None and (isinstance(default_action, bool) or not isinstance(
                default_action, (int, np.integer)) or not 0 <= int(default_action) < len(self.actions)):
            raise InputError(f"default_action must be an action index in 0..{len(self.actions) - 1}, "
                             f"got {default_action!r}")
        self.default_action = None if default_action is None else int(default_action)
        self.intervention = intervention
        self.name = name
        # per run: the last fallback action (what an unreadable observation falls back to)
        self._runs: RunMemory[int | None] = RunMemory(lambda: None, max_runs=max_runs)

    @classmethod
    def from_config(cls, params: Mapping[str, Any]) -> SafetyFilter:
        """Build a filter from a configuration table (``type = "safety-filter"``).

        Keys: ``model`` (a :class:`~agentguard.control.ddqn.QModel` file saved by ``QModel.save``) or
        ``q`` (``"package.module:factory"`` returning a :class:`QFunction`); ``encoder``
        (``"wordllama"``, ``"wordllama:<dim>"``, ``"minilm"`` or ``"package.module:factory"``, e.g.
        ``"agentguard.envs.driving.guard:make_text_encoder"``); ``actions`` (list of names); optional
        ``epsilon``, ``default_action``, ``intervention``, ``name``, ``max_runs``, ``uncertified``.
        """
        p = dict(params)
        known = {"model", "q", "encoder", "actions", "epsilon", "default_action", "intervention", "name",
                 "max_runs", "uncertified"}
        unknown = sorted(set(p) - known)
        if unknown:
            raise InputError(f"safety-filter: unknown keys {unknown} (known: {sorted(known)})")
        if ("model" in p) == ("q" in p):
            raise InputError("safety-filter: give exactly one of 'model' (a QModel file) and 'q' (a factory)")
        if "encoder" not in p or not p.get("actions"):
            raise InputError("safety-filter: 'encoder' and 'actions' are required")
        if "model" in p:
            from .ddqn import QModel

            q = QModel.load(str(p.pop("model")))
        else:
            q = _factory(str(p.pop("q")), "q")
        return cls(q, _encoder(str(p.pop("encoder"))), [str(a) for a in p.pop("actions")], **p)

    def __repr__(self) -> str:
        return (f"<SafetyFilter name={self.name!r} encoder={getattr(self.encoder, 'name', '?')} "
                f"epsilon={self.epsilon} intervention={self.intervention}>")

    def _default_parse(self, proposal: Any) -> int:
        if (isinstance(proposal, (int, np.integer)) and not isinstance(proposal, (bool, np.bool_))
                and 0 <= int(proposal) < len(self.actions)):  # True is not action 1
            return int(proposal)
        if isinstance(proposal, str) and proposal.strip() in self.actions:
            return self.actions.index(proposal.strip())
        raise InputError(f"unknown action {str(proposal)[:60]!r}; expected one of {', '.join(self.actions)}")

    # ------------------------------------------------------------------ batch path (benchmarks)
    def q_batch(self, observations: Sequence[Any]) -> np.ndarray:
        """Q-values for a batch of observations: (n, n_actions)."""
        return np.asarray(self.q.q_values(self.encoder.encode(list(observations))), dtype=float)

    def decide_batch(self, q: np.ndarray, proposed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Vectorised switching: (intervene mask, executed action indices) given Q and proposals.

        The same rule as :meth:`certify`: allow only where ``Q(z, a) > epsilon`` holds, so a NaN
        Q-value intervenes (``nan <= epsilon`` is False too, which would have allowed it); the fallback
        is the argmax over the finite Q-values of the row (a NaN is never the certified action)."""
        q = np.atleast_2d(np.asarray(q, dtype=float))
        raw = np.asarray(proposed)
        if raw.size and (raw.dtype.kind not in "iuf" or (raw.dtype.kind == "f" and not np.all(raw == np.floor(raw)))):
            raise InputError(f"proposed action indices must be whole numbers, got {str(raw.ravel()[0])[:30]!r}")
        proposed = raw.astype(int)  # 1.7 was truncated to action 1, True read as action 1
        if q.ndim != 2 or q.shape[1] != len(self.actions) or proposed.shape != (len(q),):
            raise InputError(f"decide_batch needs Q of shape (n, {len(self.actions)}) and n proposals; "
                             f"got {q.shape} and {proposed.shape}")
        if proposed.size and (proposed.min() < 0 or proposed.max() >= len(self.actions)):
            raise InputError(f"proposed action indices must lie in 0..{len(self.actions) - 1}")
        intervene = ~(q[np.arange(len(q)), proposed] > self.epsilon)
        nan = np.isnan(q)
        fallback = np.where(nan, -np.inf, q).argmax(axis=1)
        # a row whose best readable value is -inf: argmax may land on a NaN; take its first readable entry
        lost = nan[np.arange(len(q)), fallback] & ~nan.all(axis=1)
        fallback[lost] = (~nan[lost]).argmax(axis=1)
        return intervene, np.where(intervene, fallback, proposed)

    # ------------------------------------------------------------------ single decisions (the Guard)
    def _numbers(self, q: np.ndarray) -> dict[str, float]:
        nums = {f"q_{a}": float(v) for a, v in zip(self.actions, q)}
        nums["v"] = float(q.max())
        nums["epsilon"] = self.epsilon
        return nums

    def _remember(self, run_id: str, action: int) -> None:
        self._runs.set(run_id, action)

    def end_run(self, run_id: str) -> None:
        """Forget what this filter remembers of ``run_id`` (its last fallback action)."""
        self._runs.end_run(run_id)

    def _blocked(self, reason: str, action: int | None, numbers: dict, details: dict,
                 certified: bool = False) -> Verdict:
        if self.intervention == "stop":
            return Verdict(Decision.HALT, reason, self.name, numbers, None, details)
        if action is None:
            return Verdict(Decision.HALT, reason + "; no fallback action is known, so the run stops",
                           self.name, numbers, None, details)
        if not certified and self.uncertified == "stop":
            return Verdict(Decision.HALT, reason + "; the fallback is not certified safe either, so the run stops",
                           self.name, numbers, None, {**details, "fallback_certified": False})
        return Verdict(Decision.RECOVER, reason, self.name, numbers, self.actions[action],
                       {**details, "fallback_index": int(action), "fallback_certified": certified})

    def certify(self, context: Context | Any, proposed_action: Any) -> Verdict:
        """ALLOW when ``Q(z, a_task) > epsilon``; otherwise RECOVER with ``argmax_a Q(z, a)``."""
        t0 = time.perf_counter()
        run_id = context.run_id if isinstance(context, Context) else ""
        if isinstance(proposed_action, Step):
            proposed_action = proposed_action.action
        obs = observation_of(context)
        try:
            if obs is None:
                raise InputError("the context has no observation (context.state or a step's observation)")
            q = self.q_batch([obs])[0]
            if q.shape != (len(self.actions),):
                raise InputError(f"the Q-function returned {q.shape[0] if q.ndim else 0} values for "
                                 f"{len(self.actions)} actions")
            if not np.all(np.isfinite(q)):
                raise InputError("the Q-function returned non-finite values")
        except Exception as exc:  # unreadable observation: fail to the last known fallback
            last = self._runs.peek(run_id)
            fb = self.default_action if last is None else last
            return self._blocked(f"observation could not be evaluated ({type(exc).__name__}: {exc}); "
                                 f"using the fallback action", fb, {"epsilon": self.epsilon},
                                 {"error": type(exc).__name__, "latency_ms": 1e3 * (time.perf_counter() - t0)})
        fallback = int(np.argmax(q))
        self._remember(run_id, fallback)
        nums = self._numbers(q)
        try:
            a = self._parse(proposed_action)
        except Exception as exc:
            return self._blocked(f"unknown action ({exc}); replaced by the fallback action "
                                 f"{self.actions[fallback]}", fallback, nums,
                                 {"error": type(exc).__name__, "latency_ms": 1e3 * (time.perf_counter() - t0)},
                                 bool(q[fallback] > self.epsilon))
        nums["q_proposed"] = float(q[a])
        details = {"proposed_index": a, "latency_ms": 1e3 * (time.perf_counter() - t0)}
        if q[a] > self.epsilon:
            return Verdict(Decision.ALLOW, f"Q(z, {self.actions[a]}) = {q[a]:.3g} > epsilon = {self.epsilon:g}",
                           self.name, nums, None, details)
        if q[fallback] <= self.epsilon:
            why = (f"Q(z, {self.actions[a]}) = {q[a]:.3g} <= epsilon; no action is certified safe "
                   f"(max Q = {q[fallback]:.3g}), best-effort fallback {self.actions[fallback]}")
        else:
            why = (f"Q(z, {self.actions[a]}) = {q[a]:.3g} <= epsilon = {self.epsilon:g}; fallback "
                   f"{self.actions[fallback]} (Q = {q[fallback]:.3g})")
        return self._blocked(why, fallback, nums, details, bool(q[fallback] > self.epsilon))

    def check(self, context: Context, proposal: Any) -> Verdict:
        return self.certify(context, proposal)

    def fallback_action(self, observation: Any) -> str:
        """pi(z) = argmax_a Q(z, a) for one observation."""
        return self.actions[int(np.argmax(self.q_batch([observation])[0]))]


def _finite(value: Any, what: str) -> float:
    """``value`` as a finite float, or a one-line InputError (a NaN epsilon makes every comparison false)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{what} must be a number, got {value!r}") from None
    if isinstance(value, bool) or not np.isfinite(v):
        raise InputError(f"{what} must be a finite number, got {value!r}")
    return v


def _factory(path: str, what: str) -> Any:
    """``"package.module:attr"`` -> a Q function (``what == "q"``: built by a class with ``q_values`` or a function
    annotated to return one) or an encoder (one with ``encode``), by :func:`~agentguard.core.loading.load_callable`
    and :func:`~agentguard.core.loading.built` (what was built has the methods); one-line InputError otherwise."""
    builds = Builds("a Q function", methods=("q_values",)) if what == "q" else \
        Builds("an encoder", methods=("encode",))
    made = load_callable(path, f"safety filter {what}", builds)  # declared to build one: never os:abort
    return built(made, f"safety filter {what}", builds)


def _encoder(spec: str) -> Any:
    """An encoder from its configuration name (see :meth:`SafetyFilter.from_config`)."""
    from . import encoders

    kind, _, arg = spec.partition(":")
    if kind == "wordllama":
        return encoders.WordLlamaEncoder(int(arg) if arg else 64)
    if kind == "minilm" and not arg:
        return encoders.MiniLMEncoder()
    return _factory(spec, "encoder")
