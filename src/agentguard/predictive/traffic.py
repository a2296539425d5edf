"""Traffic-law guards for the driving models of the Pro2Guard release (section 4 of the paper).

A driving model folder holds a DTMC over ``collision | reach | law-flag | predicate bits`` and, in
``abstraction.json``, the predicates (``["speed", ">", "0.5"]`` ...) and the id of its traffic law
(``rule38_1``). :func:`law_products` reduces a LawBreaker law (:mod:`agentguard.spec.stl`) to its
bounded-response rules and composes each rule's monitor (Definition 6) with the DTMC;
:func:`traffic_law_guard` wraps the product in a :class:`~agentguard.predictive.guard.ProductGuard`
that reads the simulator's signals (``{"speed": 3.2, "trafficLightAheadcolor": 3, ...}``) through
:func:`driving_abstraction`: a :class:`TrafficLawGuard`, the ``type = "traffic-law"`` guard of
guard-stack files (:meth:`TrafficLawGuard.from_config`).
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core.errors import InputError
from .dtmc import DTMC
from .guard import ProductGuard

__all__ = ["TrafficLawGuard", "driving_abstraction", "law_products", "read_driving_model", "traffic_law_guard"]

_OPS: dict[str, Callable[[float, float], bool]] = {
    "==": operator.eq, "!=": operator.ne, ">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}


def read_driving_model(folder: str | Path) -> tuple[DTMC, dict[str, Any]]:
    """``(DTMC with state names and labels, abstraction.json)`` of a driving model folder."""
    from .prism import read_pro2guard

    folder = Path(folder)
    try:
        ab = json.loads((folder / "abstraction.json").read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read {folder}/abstraction.json: {exc}") from None
    if not isinstance(ab, dict) or "collision" not in ab or "predicates" not in ab:
        raise InputError(f"{folder} is not a driving model (abstraction.json has no collision/predicates)")
    return read_pro2guard(folder), ab


def driving_abstraction(predicates: Sequence[Sequence[str]]) -> Callable[[Mapping[str, Any]], str]:
    """The abstract state name of a signal dict, as the release names its driving states.

    ``collision == 1`` -> ``1 0 0 0..``, ``reach_destination == 1`` -> ``0 1 0 0..``, a law violation
    flagged by the simulator (``law_violation == 1``) -> ``0 0 1 0..``; otherwise ``000`` followed by one
    bit per predicate ``[signal, op, value]``. A missing or non-numeric signal raises InputError (a
    guard stack turns that into a fail-closed verdict).
    """
    preds = [(str(sig), _OPS[op], float(val)) for sig, op, val in predicates]
    tail = "0" * len(preds)

    def num(state: Mapping[str, Any], sig: str) -> float:
        if sig not in state:
            raise InputError(f"the driving state has no signal {sig!r} (needs {sorted({p[0] for p in preds})})")
        try:
            x = float(state[sig])
        except (TypeError, ValueError):
            raise InputError(f"signal {sig!r} is not a number: {state[sig]!r}") from None
        if x != x:  # NaN: every comparison is False, so the predicate bit would silently read 0
            raise InputError(f"signal {sig!r} is NaN")
        return x

    def flag(state: Mapping[str, Any], sig: str) -> bool:
        return sig in state and bool(state[sig]) and num(state, sig) == 1

    def abstract(state: Mapping[str, Any]) -> str:
        if not isinstance(state, Mapping):
            raise InputError(f"a driving state is a mapping of signals, got {type(state).__name__}")
        if flag(state, "collision"):
            return "100" + tail
        if flag(state, "reach_destination"):
            return "010" + tail
        if flag(state, "law_violation"):
            return "001" + tail
        return "000" + "".join("1" if op(num(state, sig), v) else "0" for sig, op, v in preds)

    return abstract


def law_products(model: DTMC, abstraction: Mapping[str, Any], laws: Mapping[str, Any], law: str | None = None, *,
                 unknown: str = "error", steps_per_unit: int = 50) -> list[tuple[Any, Any, list[str]]]:
    """``[(rule, product, unobserved atoms), ...]`` for the law (default: the model's own rule) among
    ``laws`` (as :func:`agentguard.spec.stl.parse_laws` returns them).

    ``steps_per_unit``: DTMC steps per LawBreaker time unit (50: Example 2 writes law 38's ``F[0,2]``
    as ``F[0,100]``).
    """
    from ..spec.stl import bounded_response, law_of_rule, rule_vectors
    from .monitor import BoundedResponse, product

    if int(steps_per_unit) < 1:
        raise InputError("steps_per_unit must be >= 1")
    name = law or law_of_rule(str(abstraction.get("rule", "")))
    if name not in laws:
        raise InputError(f"no law {name!r} among {', '.join(laws)}")
    out = []
    for r in bounded_response(laws[name], name):
        trig, resp, unobserved = rule_vectors(r, model.state_names, abstraction["predicates"], unknown=unknown)
        rule = BoundedResponse(trig, resp, r.K * int(steps_per_unit))
        prod = product(model, rule)
        prod.model.meta["rule"] = f"{r} [K = {rule.K} steps]"
        out.append((r, prod, unobserved))
    return out


class TrafficLawGuard(ProductGuard):
    """A :class:`~agentguard.predictive.guard.ProductGuard` for one traffic law over a driving model
    folder, built by :func:`traffic_law_guard` (or :meth:`from_config`); ``model_path`` is the folder."""

    CONFIG_KEYS = ("decision", "law", "laws", "model", "name", "steps_per_unit", "threshold", "unknown")

    @classmethod
    def from_config(cls, params: Mapping[str, Any]) -> "TrafficLawGuard":
        """The guard of a configuration table (TOML ``type = "traffic-law"``): the keyword arguments
        of :func:`traffic_law_guard` (``model`` and ``laws`` required); an unknown key is an InputError."""
        extra = sorted(set(params) - set(cls.CONFIG_KEYS))
        if extra:
            raise InputError(f"traffic-law guard: unknown keys {extra} (allowed: {', '.join(cls.CONFIG_KEYS)})")
        missing = [k for k in ("model", "laws") if k not in params]
        if missing:
            raise InputError(f"traffic-law guard: missing {', '.join(missing)}")
        return traffic_law_guard(**params)


def traffic_law_guard(*, model: str, laws: str, law: str | None = None, threshold: float = 0.5,
                      unknown: str = "error", steps_per_unit: int = 50, decision: str = "REJECT",
                      name: str = "traffic-law") -> TrafficLawGuard:
    """A ProductGuard for a traffic law over a driving model folder (one rule: the law must reduce to
    a single STL_LB rule; for a conjunction, give each sub-law its own guard).

    The guard reads ``context.state`` as a signal dict (or an abstract state name) and alarms when
    the predicted probability of never violating the rule is below ``threshold``.
    """
    from ..spec.stl import parse_laws

    dtmc, ab = read_driving_model(model)
    try:
        text = Path(laws).read_text()
    except OSError as exc:
        raise InputError(f"cannot read laws file {laws}: {exc.strerror or exc}") from None
    made = law_products(dtmc, ab, parse_laws(text), law, unknown=unknown, steps_per_unit=steps_per_unit)
    if len(made) != 1:
        raise InputError(f"law {law or ab.get('rule')!r} reduces to {len(made)} rules; give each sub-law its own guard")
    rule, prod, _ = made[0]
    g = TrafficLawGuard(prod, threshold, abstraction=driving_abstraction(ab["predicates"]), decision=decision, name=name)
    g.bind_names(dtmc.state_names)
    g.model_path = str(model)
    return g
