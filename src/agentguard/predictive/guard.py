"""The proactive runtime guard (Algorithm 2 and section 3.3 of the Pro2Guard paper).

At each step the guard abstracts the current concrete state ``v_i`` to ``s_i = s_P(v_i)``, looks up
``P_safe(s_i) = P[psi | pi]`` and raises an alarm when ``P_safe < theta`` (Algorithm 2, lines 3-5).
For a safety property ``psi = G !unsafe`` over a DTMC the conditioned probability depends on the trace
``pi`` only through its last state (Markov property), so ``P_safe`` is precomputed once per state,
``P_safe(s) = 1 - P_s[F unsafe]``, and a decision is one abstraction plus one dictionary lookup (the
paper's "caching mechanism", section 5.2 RQ3). States the model never saw are handled by the
``unseen`` policy of :mod:`agentguard.spec.unseen` (the same names as in spec files): ``"nearest"``
(the closest known bit-vector state in Hamming distance, the lower probability on ties; the last bit
is taken as the unsafe bit: an unseen state with it set has P_safe = 0), ``"pessimistic"`` (the
known state of lowest P_safe; the default, so an unseen state never reads safer than the riskiest state
the model knows), ``"alarm"`` (P_safe = 0, fail closed), ``"allow"`` (P_safe = 1) or ``"error"`` (the
guard raises, so a stack fails closed).

The verdict carries what the enforcement strategies need (:class:`~agentguard.core.strategies.Reflect`
builds its alert from it): ``numbers = {probability: P_safe, threshold: theta}``,
``details = {state, state_text, property}``. A blocking decision is REJECT by default, so any strategy
applies: Stop ends the run, Reflect re-prompts, HumanInTheLoop asks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ..core.errors import InputError, ModelError
from ..core.guard import BaseGuard
from ..core.limits import probability, refusing
from ..core.runs import RunMemory
from ..core.types import Context, Decision, Step, Verdict
from ..spec.unseen import DEFAULT_UNSEEN, check_unseen_policy, resolve_unseen
from .dtmc import DTMC

__all__ = ["MinProbabilityGuard", "ProactiveGuard", "ProductGuard", "reach_probability", "safety_values"]


def reach_probability(model: DTMC, target: np.ndarray) -> np.ndarray:
    """``x_s = P_s[F target]`` for every state (unbounded reachability in a DTMC), by the project's
    model checker (:func:`agentguard.predictive.checker.reach`: graph pre-computation, then the linear
    system of Baier & Katoen, Thm. 10.19). Errors propagate, so a guard built on it fails closed.

    The model is validated first (:meth:`DTMC.validate`): on a matrix that is not stochastic the
    linear system answers numbers that are not probabilities of anything (a row ``[1.2, 0.3, -0.5]``
    read P_safe = 1 next to a 0.5 step into ``unsafe``), so such a model is a ModelError."""
    from .checker import reach

    model.validate()
    return np.asarray(reach(model.matrix, np.asarray(target, dtype=bool)), dtype=float)


#: how far a computed probability may leave [0, 1] by rounding before it is an error (then clipped)
PROB_TOL = 1e-9


def _check_probabilities(values: Any, n: int) -> np.ndarray:
    """``values`` as ``n`` probabilities in [0, 1] (rounding up to :data:`PROB_TOL` clipped), or
    ModelError: a NaN P_safe compares false with every threshold (``nan < theta`` is False), so it
    would silently ALLOW; a value outside [0, 1] is not a probability."""
    try:
        vals = np.array(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"P_safe values must be numbers: {exc}") from None
    if vals.shape != (n,):
        raise ModelError(f"{vals.shape[0] if vals.ndim else 0} values for {n} states")
    bad = np.flatnonzero(~np.isfinite(vals) | (vals < -PROB_TOL) | (vals > 1 + PROB_TOL))
    if bad.size:
        i = int(bad[0])
        raise ModelError(f"P_safe of state {i} is {float(vals[i])!r}, not a probability in [0, 1] ({bad.size} bad values)")
    return np.clip(vals, 0.0, 1.0)


def _label_of(prop: str) -> str:
    """The unsafe label of ``psi = G !label``: accepts ``unsafe``, ``G !unsafe``, ``P=? [ G !"unsafe" ]``,
    ``AG !unsafe`` and ``F unsafe`` (its complement)."""
    s = re.sub(r"\s*\([^)]*\)\s*$", "", prop.strip())  # a trailing "(comment)" is allowed
    m = re.fullmatch(r'(?:P\s*=\s*\?\s*\[\s*)?(?:A?G\s*!\s*|F\s*)?"?([A-Za-z_][\w]*)"?\s*\]?', s)
    if not m:
        raise InputError(f"unsupported property {prop!r}: expected a label name or 'G !label'")
    return m.group(1)


def safety_values(model: DTMC, prop: str = "unsafe") -> np.ndarray:
    """``P_safe(s) = P_s[G !label] = 1 - P_s[F label]`` for every state of ``model``."""
    label = _label_of(prop)
    return 1.0 - reach_probability(model, model.label(label))


def current_state(context: Context, proposal: Any, who: str) -> Any:
    """The state a proactive guard decides on: ``context.state``, else ``proposal.state`` for a Step;
    InputError naming the guard ``who`` when neither is given."""
    state = context.state
    if state is None and isinstance(proposal, Step):
        state = proposal.state
    if state is None:
        raise InputError(f"{who} needs the current state in context.state")
    return state


class ProactiveGuard(BaseGuard):
    """``ProactiveGuard(model, property, threshold)``: alarm when the predicted P_safe < threshold.

    Args:
        model: the learned DTMC (its ``state_names`` are the abstract states, e.g. bit-vectors).
        property: the safety property, ``"G !unsafe"`` (or just the label name).
        threshold: theta in [0, 1]; the alarm fires when ``P_safe < theta``.
        abstraction: concrete state -> abstract state name; None when states are given abstract.
        state_text: abstract state -> words (for the reflection prompt); defaults to the name.
        unseen: ``"nearest"``, ``"pessimistic"`` (default), ``"alarm"``, ``"allow"`` or ``"error"`` (see
            the module docstring and :mod:`agentguard.spec.unseen`).
        decision: what a blocking verdict says (REJECT by default; HALT to stop whatever the strategy).
        values: precomputed P_safe per state (else computed with :func:`safety_values`).
        state_fn: ``(context, proposal) -> concrete state`` used when the decision brings no state
            (``context.state`` and the step's state are None), e.g. :func:`agentguard.spec.history.
            history_state` for a model learned on call histories.
        unsafe_fn: abstract state -> whether it is unsafe (the spec's ``unsafe``); an unseen state for
            which it holds has ``P_safe = 0`` whatever the unseen policy says.
        unsafe_bit: the bit that marks an unseen state unsafe (the Pro2Guard release's last bit, -1);
            None when no bit does (a bundle: ``unsafe_fn`` says it).
    """

    def __init__(self, model: DTMC, property: str = "G !unsafe", threshold: float = 0.5, *,
                 abstraction: Callable[[Any], str] | None = None,
                 state_text: Callable[[str], str] | None = None, unseen: str = DEFAULT_UNSEEN,
                 decision: Decision | str = Decision.REJECT, values: Sequence[float] | None = None,
                 name: str = "proactive", state_fn: Callable[[Context, Any], Any] | None = None,
                 unsafe_fn: Callable[[str], bool] | None = None, unsafe_bit: int | None = -1) -> None:
        if not isinstance(model, DTMC):
            raise InputError(f"model must be a DTMC, got {type(model).__name__}")
        if model.state_names is None:
            raise ModelError("the guard needs a model with state names (abstract states)")
        model.validate()  # stochastic rows, one name per state (3 states named ["a"] left 2 unseen)
        threshold = probability(threshold, "threshold")  # not false (0.0: never alarms), not "0.5", not nan
        check_unseen_policy(unseen)
        self.model = model
        self.property = property
        self.threshold = float(threshold)
        self.abstraction = abstraction
        self.state_text = state_text
        self.unseen = unseen
        self.decision = refusing(decision, f"{type(self).__name__} decision")  # never ALLOW: an alarm refuses
        self.name = name
        self.state_fn = state_fn
        self.unsafe_fn = unsafe_fn
        self.unsafe_bit = unsafe_bit
        self.values_ = _check_probabilities(values if values is not None else safety_values(model, property),
                                           model.n)
        self.table_: dict[str, float] = {s: float(v) for s, v in zip(model.state_names, self.values_)}
        self._unseen_cache: dict[str, float] = {}
        self._unseen_note: dict[str, str] = {}

    def __repr__(self) -> str:
        return (f"ProactiveGuard(states={self.model.n}, property={self.property!r}, threshold={self.threshold}, "
                f"unseen={self.unseen!r})")

    def with_threshold(self, threshold: float) -> "ProactiveGuard":
        """The same guard (shared tables) at another threshold."""
        g = object.__new__(ProactiveGuard)
        g.__dict__.update(self.__dict__)
        threshold = probability(threshold, "threshold")  # not false (0.0: never alarms), not "0.5", not nan
        g.threshold = float(threshold)
        return g

    @classmethod
    def from_config(cls, params: Mapping[str, Any]) -> "ProactiveGuard":
        """The guard of a configuration table (TOML ``type = "proactive"``), keys:

        ``model`` (required: a model path for :func:`~agentguard.predictive.load.load_dtmc`; a bundle
        that ``agentguard learn`` wrote carries its spec, :mod:`agentguard.predictive.bundle`),
        ``spec`` (a spec file, for a model without one), ``state`` (the state function for decisions
        that bring no state: ``"history"`` or ``"package.module:attr"``; default: the bundle's),
        ``property`` ("G !unsafe"), ``threshold`` (0.5), ``unseen`` (the spec's, else "pessimistic"),
        ``decision`` ("REJECT"), ``name`` ("proactive"). With a spec the guard abstracts concrete
        states (dicts) itself. The guard remembers the path as ``model_path``.
        """
        from ..spec.history import state_function
        from .bundle import load_bundle

        allowed = {"model", "spec", "state", "property", "threshold", "unseen", "decision", "name"}
        extra = sorted(set(params) - allowed)
        if extra:
            raise InputError(f"proactive guard: unknown keys {extra} (allowed: {', '.join(sorted(allowed))})")
        if "model" not in params:
            raise InputError("proactive guard: 'model' (a DTMC file or folder) is required")
        path = params["model"]
        model, ab = load_bundle(path, params.get("spec"))
        kw: dict[str, Any] = {}
        if ab is not None:
            kw = {"abstraction": ab.bits, "unsafe_bit": None,
                  "unsafe_fn": lambda b: bool(ab.label_vector([b], "unsafe")[0])}
        unseen = str(params.get("unseen", ab.unseen if ab is not None else DEFAULT_UNSEEN))
        g = cls(model, str(params.get("property", "G !unsafe")), params.get("threshold", 0.5),
                unseen=unseen, decision=params.get("decision", "REJECT"), name=str(params.get("name", "proactive")),
                state_fn=state_function(params.get("state", ab.state_fn if ab is not None else None)), **kw)
        g.model_path = str(path)
        g.spec = ab
        return g

    # --- the hot path ---------------------------------------------------------------------------
    def _lookup_unseen(self, key: str) -> float:
        hit = self._unseen_cache.get(key)
        if hit is not None:
            return hit
        if self.unsafe_fn is not None and _holds(self.unsafe_fn, key):
            p, note = 0.0, "the spec calls it unsafe"  # an unseen state the spec itself calls unsafe
        else:
            # -P_safe orders the states exactly as the risk 1 - P_safe does (negation is exact)
            res = resolve_unseen(key, self.model.state_names, self.unseen, -self.values_, unsafe_bit=self.unsafe_bit)
            p = float(self.values_[res.index]) if res.index is not None else (0.0 if res.unsafe else 1.0)
            note = (f"known state {self.model.state_names[res.index]} stands in (policy {self.unseen!r})"
                    if res.index is not None else res.reason)
        if len(self._unseen_cache) >= _UNSEEN_CACHE_MAX:  # run-time keys are attacker-chosen: bound the memory
            self._unseen_cache.clear()
            self._unseen_note.clear()
        self._unseen_cache[key] = p
        self._unseen_note[key] = note
        return p

    def probability(self, state: Any) -> tuple[float, str]:
        """``(P_safe, abstract state)`` for a concrete state (or an abstract state name)."""
        if isinstance(state, str):
            key = state
        elif self.abstraction is not None:
            key = self.abstraction(state)
        else:
            raise InputError(f"{self.name}: got a concrete state ({type(state).__name__}) but the model has no "
                             "spec to abstract it; use a bundle from agentguard learn, give spec = \"spec.yaml\", "
                             "or send abstract states (bit strings)")
        p = self.table_.get(key)
        if p is None:
            p = self._lookup_unseen(key)
        return p, key

    def _state(self, context: Context, proposal: Any) -> Any:
        if self.state_fn is not None and context.state is None and getattr(proposal, "state", None) is None:
            return self.state_fn(context, proposal)
        return current_state(context, proposal, self.name)

    def check(self, context: Context, proposal: Any = None) -> Verdict:
        """Verdict for the current state: ``context.state``, or ``proposal.state`` for a Step, else the
        state ``state_fn`` computes."""
        p, key = self.probability(self._state(context, proposal))
        nums = {"probability": p, "threshold": self.threshold}
        # a state the model never saw is never decided silently: the verdict says so and how it was resolved
        unseen = {} if key in self.table_ else {"unseen": self._unseen_note.get(key, "never seen in training")}
        if p < self.threshold:
            text = self.state_text(key) if self.state_text else key
            return Verdict(self.decision, f"predicted probability of staying safe {p:.3f} is below {self.threshold:g}",
                           self.name, nums,
                           details={"state": key, "state_text": text, "property": self.property, **unseen})
        why = f"predicted safe (unseen state: {unseen['unseen']})" if unseen else "predicted safe"
        return Verdict(Decision.ALLOW, why, self.name, nums, details={"state": key, **unseen})


#: unseen abstract states remembered per guard before the cache starts over
_UNSEEN_CACHE_MAX = 65_536


def _holds(fn: Callable[[str], bool], key: str) -> bool:
    try:
        return bool(fn(key))
    except InputError:
        return False  # not a state the spec reads (another width): the unseen policy decides


class MinProbabilityGuard(BaseGuard):
    """Several proactive guards (one per property / hazard family); the lowest P_safe speaks.

    ``prepare`` (optional) turns the concrete state into whatever the guards' abstractions accept,
    once per decision (the household guard parses the object list once for all families). The verdict
    is that of the guard with the smallest margin ``P_safe - threshold``, so the alert names the
    property most at risk.
    """

    def __init__(self, guards: Iterable[ProactiveGuard], name: str = "proactive",
                 prepare: Callable[[Any], Any] | None = None) -> None:
        self.guards = list(guards)
        if not self.guards:
            raise InputError("MinProbabilityGuard needs at least one guard")
        self.name = name
        self.prepare = prepare

    def __repr__(self) -> str:
        return f"MinProbabilityGuard({self.guards!r})"

    def with_threshold(self, threshold: float) -> "MinProbabilityGuard":
        return MinProbabilityGuard([g.with_threshold(threshold) for g in self.guards], self.name, self.prepare)

    def probability(self, state: Any) -> tuple[float, str]:
        """Lowest ``(P_safe, "guard:abstract state")`` over the guards."""
        s = self.prepare(state) if self.prepare is not None else state
        best_p, best_k = 2.0, ""
        for g in self.guards:
            p, key = g.probability(s)
            if p < best_p:
                best_p, best_k = p, f"{g.name}:{key}"
        return best_p, best_k

    def check(self, context: Context, proposal: Any = None) -> Verdict:
        state = current_state(context, proposal, "the proactive guard")
        s = self.prepare(state) if self.prepare is not None else state
        worst, margin, wp, wk = None, 2.0, 1.0, ""
        for g in self.guards:
            p, key = g.probability(s)
            m = p - g.threshold
            if m < margin:
                worst, margin, wp, wk = g, m, p, key
        g = worst
        nums = {"probability": wp, "threshold": g.threshold}
        if wp < g.threshold:
            text = g.state_text(wk) if g.state_text else wk
            return Verdict(g.decision, f"predicted probability of staying safe {wp:.3f} is below {g.threshold:g}",
                           g.name, nums, details={"state": wk, "state_text": text, "property": g.property})
        return Verdict(Decision.ALLOW, "predicted safe", g.name, nums, details={"state": wk})


class ProductGuard(BaseGuard):
    """The guard over a DTMC x monitor product (bounded-response rules, Definitions 5-6 of Pro2Guard).

    A rule ``G(trigger -> F[0,K] response)`` is not a state property of the DTMC: whether the run is
    safe depends on how long ago the trigger fired. The product ``M x A`` (``agentguard.predictive.
    monitor.product``) tracks that in the monitor state q, and ``P_safe((s, q)) = P[G !viol]`` is
    precomputed per product state. At run time the guard keeps q per run, keyed by ``context.run_id``
    (the vocabulary's key for per-run state; mirrored into ``context.metadata['monitor_q'][name]`` for
    inspection), advances it with the label of each new abstract state, and looks up ``(s, q)``: still
    one lookup per decision. The monitor states live in a :class:`~agentguard.core.runs.RunMemory`
    (at most ``max_runs`` runs, least recently used forgotten first; a run that was forgotten that way
    and comes back raises :class:`~agentguard.core.runs.RunEvicted`, never restarts its monitor):
    :meth:`end_run` forgets one run when it finishes, :meth:`reset` forgets every run. An abstract state the DTMC never saw, or a
    pair outside the built product, fails closed (P_safe = 0).
    """

    def __init__(self, prod: Any, threshold: float = 0.5, *, abstraction: Callable[[Any], str] | None = None,
                 state_text: Callable[[str], str] | None = None, decision: Decision | str = Decision.REJECT,
                 name: str = "proactive-product", max_runs: int = 100_000) -> None:
        threshold = probability(threshold, "threshold")  # not false (0.0: never alarms), not "0.5", not nan
        base = prod.model
        names = base.meta.get("base_state_names")
        self.prod = prod
        self.threshold = float(threshold)
        self.abstraction = abstraction
        self.state_text = state_text
        self.decision = refusing(decision, f"{type(self).__name__} decision")  # never ALLOW: an alarm refuses
        self.name = name
        self.property = str(base.meta.get("rule", "G !viol"))
        self.values_ = _check_probabilities(prod.safe_probability(), len(prod.pairs))
        self._pair = {(int(s), int(q)): float(self.values_[i]) for i, (s, q) in enumerate(prod.pairs)}
        self._base_index: dict[str, int] = {}
        self._names = names
        self._runs: RunMemory[int | None] = RunMemory(lambda: None, max_runs)

    def reset(self) -> None:
        """Forget the monitor state of every run (the next step of any run starts its monitor afresh)."""
        self._runs.clear()

    def end_run(self, run_id: str) -> None:
        """Forget the monitor state of ``run_id`` (no-op when unknown)."""
        self._runs.end_run(run_id)

    def bind_names(self, base_state_names: Sequence[str]) -> "ProductGuard":
        """Tell the guard the names of the base DTMC's states (abstract bit-vectors)."""
        self._base_index = {s: i for i, s in enumerate(base_state_names)}
        return self

    def step_probability(self, state: Any, q: int | None) -> tuple[float, str, int | None]:
        """``(P_safe, abstract state, new monitor state)`` after entering ``state`` with monitor in q."""
        key = state if (self.abstraction is None or isinstance(state, str)) else self.abstraction(state)
        s = self._base_index.get(key)
        if s is None:
            return 0.0, key, q
        q2 = self.prod.start(s)[1] if q is None else self.prod.advance(q, s)
        return self._pair.get((s, q2), 0.0), key, q2

    def check(self, context: Context, proposal: Any = None) -> Verdict:
        state = context.state
        if state is None:
            raise InputError("ProductGuard needs the current state in context.state")
        # get, not peek: a run whose monitor state was evicted raises RunEvicted (the caller fails closed)
        # instead of restarting its monitor at idle, which forgot a pending deadline
        p, key, q = self.step_probability(state, self._runs.get(context.run_id))
        self._runs.set(context.run_id, q)
        context.metadata.setdefault("monitor_q", {})[self.name] = q
        qname = self.prod.monitor.name(q) if q is not None else "?"
        nums = {"probability": p, "threshold": self.threshold}
        det = {"state": f"({key},{qname})", "property": self.property}
        if p < self.threshold:
            text = (self.state_text(key) if self.state_text else key) + f"; monitor {qname}"
            return Verdict(self.decision, f"predicted probability of satisfying {self.property} {p:.3f} "
                           f"is below {self.threshold:g}", self.name, nums, details={**det, "state_text": text})
        return Verdict(Decision.ALLOW, "predicted safe", self.name, nums, details=det)
