"""Storm (stormpy >= 2.0) as a second, independent model-checking engine (the oracle of the tests).

Two routes, both returning values in *our* state-index order:

* :func:`check_storm` with ``prism=`` a PRISM file or text: Storm parses and builds the model itself
  (its own parser, its own deadlock handling); values are mapped back through Storm's **state
  valuations** (index = value of the variable minus its lower bound), never through Storm's
  exploration order, which differs (Storm numbers the initial state 0).
* :func:`check_storm` without ``prism``: the DTMC's matrix is handed to Storm explicitly
  (``SparseMatrixBuilder`` + ``StateLabeling``); the property's state formulas are evaluated by our
  parser into fresh labels, so any saved agentguard model can be checked.

``mode`` selects Storm's solver environment: ``"default"`` (Storm's defaults: an approximate
iterative method, relative precision 1e-6), ``"sound"`` (sound value iteration with guaranteed
bounds) or ``"exact"`` (rational arithmetic, exact results; the PRISM route builds a rational
model, the explicit route uses the model's exact rationals when it has them).
stormpy is imported lazily; a missing install raises DependencyError naming the ``storm`` extra.
"""

from __future__ import annotations

import re
import tempfile
import time
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.errors import AgentGuardError, DependencyError, InputError, ModelError, require

if TYPE_CHECKING:  # pragma: no cover
    from ..spec.pctl import Property
    from .dtmc import DTMC

__all__ = ["available", "check_program", "check_storm", "prism_values", "storm_values", "to_storm"]

MODES = ("default", "sound", "exact")


def _stormpy():
    return require("stormpy", "storm")


def available() -> bool:
    """True when stormpy can be imported."""
    try:
        _stormpy()
    except DependencyError:
        return False
    return True


def _environment(sp, mode: str):
    if mode not in MODES:
        raise InputError(f"unknown Storm mode {mode!r} (use {', '.join(MODES)})")
    if mode == "default":
        return sp.Environment()
    return sp.environments.sound() if mode == "sound" else sp.environments.exact()


def _last_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[-1] if text else type(exc).__name__


def _vector(result, exact: bool) -> np.ndarray:
    vals = result.get_value_vector()
    if exact:
        return np.array([float(Fraction(str(v))) for v in vals], dtype=np.float64)
    return np.asarray(vals, dtype=np.float64)


def to_storm(model: DTMC, labels: dict[str, np.ndarray] | None = None, exact: bool = False):
    """An explicit Storm ``SparseDtmc`` of ``model`` with the given Boolean vectors as labels
    (plus ``init``); states keep our indices. ``exact`` builds it over Storm's rationals."""
    sp = _stormpy()
    from stormpy import datastructures as D
    from stormpy import models as M

    P = model.matrix.tocsr()
    P.sort_indices()
    n = model.n
    counts = np.diff(P.indptr)
    rows = np.repeat(np.arange(n), counts)
    if exact:
        B = D.SparseMatrixBuilder[sp.Rational](n, n, P.nnz, True, False, 0)
        ex = model.exact or {}
        for i, j, v in zip(rows.tolist(), P.indices.tolist(), P.data.tolist()):
            s = ex.get(i, {}).get(j)
            B.add_next_value(i, j, sp.Rational(s) if s is not None else sp.Rational(Fraction(v).limit_denominator(10**12).__str__()))
        comp_cls, dtmc_cls = M.SparseModelComponents[sp.Rational], M.SparseDtmc[sp.Rational]
    else:
        B = D.SparseMatrixBuilder[float](n, n, P.nnz, True, False, 0)
        B.add_next_values(rows.tolist(), P.indices.tolist(), P.data.tolist())
        comp_cls, dtmc_cls = M.SparseModelComponents[float], M.SparseDtmc[float]
    mat = B.build()
    lab = M.StateLabeling(n)
    lab.add_label("init")
    lab.add_label_to_state("init", int(model.initial))
    for name, vec in (labels or {}).items():
        lab.add_label(name)
        for i in np.flatnonzero(vec).tolist():
            lab.add_label_to_state(name, i)
    return dtmc_cls(comp_cls(transition_matrix=mat, state_labeling=lab))


def storm_values(model: DTMC, prop: Property, mode: str = "default") -> np.ndarray:
    """``P=?`` values of ``prop`` on ``model`` via the explicit route (see module docstring)."""
    sp = _stormpy()
    path = prop.path
    rhs = path.right.evaluate(model)
    labels = {"__r": rhs}
    negate = False
    b = f"<={path.bound}" if path.bound is not None else ""
    if path.op == "U":
        labels["__l"] = path.left.evaluate(model)  # type: ignore[union-attr]
        text = f'P=? ["__l" U{b} "__r"]'
    elif path.op == "G":  # P[G phi] = 1 - P[F !phi]
        labels["__r"] = ~rhs
        negate = True
        text = f'P=? [F{b} "__r"]'
    else:
        text = f'P=? [{path.op}{b} "__r"]'
    exact = mode == "exact"
    dtmc = to_storm(model, labels, exact=exact)
    formula = sp.parse_property(text)
    res = sp.model_checking(dtmc, formula, only_initial_states=False, environment=_environment(sp, mode))
    v = _vector(res, exact)
    return 1.0 - v if negate else v


def _all_initial(text: str) -> str:
    """The same PRISM program with every state initial (``init true endinit``), so that Storm builds
    and solves the whole state space rather than only the part reachable from ``init``."""
    text = re.sub(r"(:\s*\[[^\]]*\.\.[^\]]*\])\s*init\s+[^;]+;", r"\1;", text)
    return text.rstrip() + "\n\ninit true endinit\n"


def prism_values(prism: str | Path, props: list[Property | str], mode: str = "default",
                 lo: int = 0, extra_labels: dict[str, np.ndarray] | None = None,
                 variable: str = "s", source: str | None = None) -> list[np.ndarray]:
    """``P=?`` values of each property, in our index order, via Storm's own PRISM parser.

    The model is parsed and built once (every state made initial, see :func:`_all_initial`) and
    Storm's results are mapped back through its state valuations: index = value - ``lo`` (the
    variable's declared lower bound). Properties may use the file's labels and variables, and the
    ``extra_labels`` (boolean vectors over our indices) that are appended to the program as
    ``label "name" = s=i | ...;`` (how labels computed outside the file reach Storm)."""
    from ..spec.pctl import parse_property

    sp = _stormpy()
    source = source or (str(prism) if "\n" not in str(prism) else "<PRISM text>")
    if "\n" in str(prism):
        text = str(prism)
    else:
        try:
            text = Path(prism).read_text()
        except OSError as exc:
            raise InputError(f"cannot read PRISM model {prism}: {exc.strerror or exc}") from None
    for name, vec in (extra_labels or {}).items():
        idx = np.flatnonzero(vec)
        expr = " | ".join(f"{variable}={int(i) + lo}" for i in idx) if idx.size else "false"
        text = text.rstrip() + f'\nlabel "{name}" = {expr};\n'
    with tempfile.TemporaryDirectory() as tmpdir:
        path = Path(tmpdir) / "model.prism"
        path.write_text(_all_initial(text))
        try:
            prog = sp.parse_prism_program(str(path))
        except Exception as exc:  # noqa: BLE001 - Storm's parser errors become our one-line ModelError
            raise ModelError(f"Storm could not parse {source}: {_last_line(exc)}") from None
    formulas = []
    for prop in props:
        p = parse_property(prop) if isinstance(prop, str) else prop
        text_p = f"P=? [{p.path}]"
        try:
            formulas.append(sp.parse_property(text_p, prog))
        except Exception as exc:  # noqa: BLE001 - as above
            raise ModelError(f"Storm rejected property {text_p!r}: {_last_line(exc)}") from None
    opts = sp.BuilderOptions(formulas)
    opts.set_build_state_valuations()
    exact = mode == "exact"
    model = sp.build_model[sp.Rational](prog, options=opts) if exact else sp.build_model(prog, options=opts)
    sv = model.state_valuations
    variables = list(sv.get_all_variables())
    if len(variables) != 1:
        raise ModelError(f"Storm route needs exactly one state variable, model has {len(variables)}")
    index = np.asarray(sv.get_int64_values(variables[0]), dtype=np.int64) - lo
    env = _environment(sp, mode)
    outs = []
    for f in formulas:
        res = sp.model_checking(model, f, only_initial_states=False, environment=env)
        out = np.full(int(index.max()) + 1, np.nan)
        out[index] = _vector(res, exact)
        outs.append(out)
    return outs


def check_storm(model: DTMC, prop: Property | str, mode: str = "default",
                prism: str | Path | None = None):
    """Check ``prop`` with Storm; returns a :class:`~agentguard.predictive.result.CheckResult`.

    With ``prism`` (a PRISM path or text) Storm parses the model itself, with every state made
    initial so that it builds and solves all of them. Without it the explicit route is used.
    """
    from ..spec.pctl import parse_property
    from .result import CheckResult, compare

    p = parse_property(prop) if isinstance(prop, str) else prop
    # evaluate our formulas first: unknown labels/variables give our one-line ModelError
    p.path.right.evaluate(model)
    if p.path.left is not None:
        p.path.left.evaluate(model)
    t0 = time.perf_counter()
    info: dict[str, Any] = {"mode": mode}
    try:
        if prism is not None:
            text = Path(prism).read_text() if "\n" not in str(prism) else str(prism)
            extra = {k: v for k, v in model.labels.items()
                     if not re.search(rf'label\s+"{re.escape(k)}"', text) and re.fullmatch(r"[A-Za-z_]\w*", k)}
            values = prism_values(text, [p], mode, int(model.meta.get("range", [0])[0]), extra,
                                  str(model.meta.get("variable", "s")),
                                  source=str(prism) if "\n" not in str(prism) else None)[0]
            info["route"] = "prism"
            if values.shape[0] < model.n:
                values = np.concatenate([values, np.full(model.n - values.shape[0], np.nan)])
            values = values[: model.n]
        else:
            values = storm_values(model, p, mode)
            info["route"] = "explicit"
    except AgentGuardError:
        raise
    except Exception as exc:  # noqa: BLE001 - Storm's own exceptions: one line, our exception tree
        raise ModelError(f"Storm failed on {p}: {_last_line(exc)}") from None
    seconds = time.perf_counter() - t0
    sat = compare(values, p.comparison, p.threshold) if not p.is_query else None  # type: ignore[arg-type]
    res = CheckResult(values, float(values[model.initial]), seconds, str(p), "storm", sat, info)
    res._initial_index = model.initial
    return res


def check_program(path_or_text: str | Path, props: list[Property], constants=None, mode: str = "default",
                  source: str | None = None) -> tuple[DTMC, list]:
    """Storm end to end on any PRISM DTMC: its parser, its builder, its model checker (no native
    parsing). Returns the built model as a :class:`DTMC` (same state order, see
    :func:`~agentguard.predictive.prism_storm.storm_to_dtmc`) and one
    :class:`~agentguard.predictive.result.CheckResult` per property (``P``, ``R``, ``S``, ``filter``
    and nested formulas as Storm reads them; the file's labels, variables and constants)."""
    from .prism_storm import quiet, storm_error, storm_program, storm_to_dtmc
    from .result import CheckResult, compare, filter_value

    sp = _stormpy()
    prog = storm_program(path_or_text, constants, source)
    src = source or (str(path_or_text) if "\n" not in str(path_or_text) else "<text>")
    from ..spec.pctl import Property as Prop

    formulas = []
    for p in props:  # Storm answers the query; thresholds and filters are applied to its values
        text = str(Prop(p.path, None, None, p.kind, p.reward, p.state))
        try:
            with quiet():
                formulas.append(sp.parse_property(text, prog))
        except RuntimeError as exc:
            raise ModelError(f"Storm rejected property {text!r}: {storm_error(exc)}") from None
    opts = sp.BuilderOptions(formulas)  # the labels its formulas need
    opts.set_build_all_reward_models()
    opts.set_build_all_labels()
    opts.set_build_state_valuations()
    exact = mode == "exact"
    try:
        with quiet():
            t0 = time.perf_counter()
            fmodel = sp.build_model(prog, options=opts)
            build = time.perf_counter() - t0
            smodel = sp.build_model[sp.Rational](prog, options=opts) if exact else fmodel
    except RuntimeError as exc:
        raise ModelError(f"{src}: Storm cannot build the model: {storm_error(exc)}") from None
    dtmc = storm_to_dtmc(fmodel, src)
    env = _environment(sp, mode)
    results = []
    for p, f in zip(props, formulas):
        t0 = time.perf_counter()
        try:
            with quiet():
                res = sp.model_checking(smodel, f, only_initial_states=False, environment=env)
        except RuntimeError as exc:
            raise ModelError(f"Storm failed on {p}: {storm_error(exc)}") from None
        seconds = time.perf_counter() - t0
        info: dict[str, Any] = {"mode": mode, "route": "storm-program", "build_seconds": build}
        values = _vector(res, exact)
        sat = compare(values, p.comparison, p.threshold) if not p.is_query else None
        initial = float(values[dtmc.initial])
        if p.filter is not None:
            op, states = p.filter
            sel = states.evaluate(dtmc) if states is not None else np.ones(dtmc.n, dtype=bool)
            initial = filter_value(op, values, sat, sel, str(p))
            info["filter"] = p.filter[0]
        r = CheckResult(values, initial, seconds, str(p), "storm", sat, info)
        r._initial_index = dtmc.initial
        results.append(r)
    return dtmc, results
