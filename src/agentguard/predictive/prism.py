"""PRISM import and export of DTMCs (the ``dtmc`` modules of the Pro2Guard release).

Supported input (the subset learned models use, plus what a hand-written model usually needs)::

    dtmc                                   // or 'probabilistic'
    const int K = 4;  const double p = 1/3; // constants (int, double, untyped); all must have values
    module NAME
        s : [0..K] init 2;                 // exactly ONE bounded integer variable
        [] s=0 -> 385/393 : (s'=0) + 8/393 : (s'=1);
        [] s>=1 & s<K -> p : (s'=s+1) + 1-p : (s'=0);   // any guard over s, updates may use s
        [] s=K -> (s'=K);                  // probability 1 may be omitted
    endmodule
    label "unsafe" = s=3 | s=4;            // labels, exported as DTMC.labels

State index = value of the variable minus its lower bound (for ``[0..K]`` it is the value itself);
``DTMC.variables`` keeps the values so ``s=3`` always means the value 3. Probabilities are evaluated in
exact rational arithmetic (``fractions.Fraction``; decimals such as ``0.1`` are read as 1/10) and
kept as strings in ``DTMC.exact``.

Semantics follow PRISM and Storm: a state that no guard enables is a deadlock and gets a self-loop
(recorded in ``meta['deadlocks_fixed']``). Unlike PRISM we refuse overlapping guards (two commands
enabled in one state) instead of silently choosing uniformly among them, and we require every row to
sum to 1 within ``tol`` (default 1e-9, evaluated exactly).

Errors: text that does not parse -> :class:`ParseError` with the line number; a row that does not sum
to 1, a successor outside the range, overlapping guards -> :class:`ModelError` naming the state.
"""


from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..core.errors import InputError, ModelError, ParseError
from .dtmc import DTMC
from .prism_syntax import FAST_GUARD, IDENT, STORM_RESERVED_LABELS, boolean_only, eval_num, fast_row, \
    fraction_str, split_updates, statements, subst_consts, update_row

__all__ = ["native_form", "read_prism", "read_pro2guard", "to_prism", "write_prism"]


# --- reading --------------------------------------------------------------------------------------
#: the native reader handles general guards (evaluated state by state) up to this many states;
#: larger ranges go to Storm unless every command is one ``s=K`` state (learned/written models)
NATIVE_GENERAL_MAX = 10**4
#: largest variable range the native reader allocates (a range like [0..2000000000] is refused)
NATIVE_MAX_RANGE = 10**7


def read_prism(path_or_text: str | Path, tol: float = 1e-9, constants: Mapping | str | None = None) -> DTMC:
    """Read a PRISM DTMC into a validated :class:`DTMC`.

    ``path_or_text`` is a path (a :class:`~pathlib.Path`, or a string without a newline) or the model
    text itself (a string with at least one newline). ``constants`` (``"N=5,p=0.3"`` or a mapping)
    give values to constants declared without one.
    """
    text, source = _source_text(path_or_text)
    pm = _parse(text, source, _consts_arg(constants))
    rows, owner = _transition_rows(pm)
    mat, exact, deadlocks = _matrix(pm, rows, owner, tol)
    labels = _labels(pm)
    lo, hi = pm.lo, pm.hi
    meta = {"source": source, "variable": pm.var, "range": [lo, hi], "reader": "native",
            "constants": {k: (int(v) if v.denominator == 1 else float(v)) for k, v in pm.consts.items()}}
    if deadlocks:
        meta["deadlocks_fixed"] = deadlocks
        meta["deadlock_states"] = [v - lo for v in deadlocks]
    return DTMC(mat, pm.init - lo, labels, {pm.var: pm.values}, None, None, exact, meta).validate(
        tol=max(tol, 1e-12))


def _source_text(path_or_text: str | Path) -> tuple[str, str]:
    """``(text, source name)`` of a path or of the model text itself."""
    if isinstance(path_or_text, Path) or "\n" not in str(path_or_text):
        p = Path(path_or_text)
        try:
            text = p.read_text()
        except OSError as exc:
            raise InputError(f"cannot read PRISM model {p}: {exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise ParseError(f"{p} is not a text file") from None
        return text, str(p)
    return str(path_or_text), "<text>"


@dataclass
class _Module:
    """What the statements of one PRISM DTMC declare (before any probability is checked)."""

    source: str
    consts: dict[str, Fraction] = field(default_factory=dict)
    var: str | None = None
    lo: int = 0
    hi: int = 0
    init: int = 0
    commands: list[tuple[int, str, str]] = field(default_factory=list)  # (line, guard, updates)
    labels_src: list[tuple[int, str, str]] = field(default_factory=list)
    given: dict[str, Fraction] = field(default_factory=dict)  # --const values

    @property
    def n(self) -> int:
        return self.hi - self.lo + 1

    @property
    def values(self) -> np.ndarray:
        return np.arange(self.lo, self.hi + 1, dtype=np.int64)


def _consts_arg(constants: Mapping | str | None) -> dict[str, Fraction]:
    if constants is None:
        return {}
    if isinstance(constants, str):
        from .prism_storm import parse_constants

        constants = parse_constants(constants)
    out = {}
    for k, v in constants.items():
        try:
            out[str(k)] = Fraction(str(v))
        except (ValueError, ZeroDivisionError):
            raise InputError(f"--const {k}={v}: not a number") from None
    return out


def native_form(text: str, constants: Mapping | str | None = None) -> bool:
    """True if the native reader reads ``text`` and should (it is fast there): one module with one
    bounded integer variable and no other construct, and either one ``s=K`` command per state (the
    learned/written form) or at most ``NATIVE_GENERAL_MAX`` states."""
    try:
        pm = _parse(text, "<text>", _consts_arg(constants))
    except (ParseError, ModelError, InputError):
        return False
    if pm.n <= NATIVE_GENERAL_MAX:
        return True
    return all(FAST_GUARD.match(g) for _, g, _ in pm.commands)


def _parse(text: str, source: str, given: Mapping[str, Fraction] | None = None) -> _Module:
    """The statements of ``text`` as a :class:`_Module`; ParseError with the line on anything else."""
    pm = _Module(source)
    pm.given = dict(given or {})
    header_seen = in_module = module_done = False
    for line, stmt in statements(text):
        if stmt in ("dtmc", "probabilistic"):
            header_seen = True
            continue
        if stmt in ("mdp", "ctmc", "pta"):
            raise ParseError(f"line {line}: model type {stmt!r} is not supported (only dtmc)")
        m = re.fullmatch(r"module\s+(" + IDENT + ")", stmt)
        if m:
            if module_done or in_module:
                raise ParseError(f"line {line}: only one module is supported (found module {m.group(1)!r})")
            in_module = True
            continue
        if stmt == "endmodule":
            if not in_module:
                raise ParseError(f"line {line}: 'endmodule' without 'module'")
            in_module, module_done = False, True
            continue
        m = re.fullmatch(rf"const\s+(?:(int|double|bool)\s+)?({IDENT})\s*(?:=\s*(.+))?", stmt, re.DOTALL)
        if m:
            _constant(pm, m, line)
            continue
        m = re.fullmatch(rf'label\s+"({IDENT})"\s*=\s*(.+)', stmt, re.DOTALL)
        if m:
            if m.group(1) in STORM_RESERVED_LABELS:
                raise ParseError(f"line {line}: {m.group(1)!r} is a reserved word, not a label name")
            dup = [ln for ln, name, _ in pm.labels_src if name == m.group(1)]
            if dup:
                raise ParseError(f"line {line}: duplicate label {m.group(1)!r} (first on line {dup[0]})")
            pm.labels_src.append((line, m.group(1), m.group(2)))
            continue
        if re.match(r"(formula|rewards|init\b|global|system)", stmt):
            raise ParseError(f"line {line}: {stmt.split()[0]!r} blocks are not supported")
        if not in_module:
            raise ParseError(f"line {line}: unexpected statement outside a module: {stmt[:60]!r}")
        m = re.fullmatch(rf"({IDENT})\s*:\s*\[(.+?)\.\.(.+?)\]\s*(?:init\s+(.+))?", stmt, re.DOTALL)
        if m:
            _variable(pm, m, line)
            continue
        m = re.fullmatch(r"\[\s*(" + IDENT + r")?\s*\]\s*(.+?)\s*->\s*(.+)", stmt, re.DOTALL)
        if m:
            if m.group(1):
                raise ParseError(f"line {line}: synchronising action [{m.group(1)}] is not supported")
            pm.commands.append((line, m.group(2), m.group(3)))
            continue
        raise ParseError(f"line {line}: cannot parse {stmt[:60]!r}")
    if not header_seen:
        raise ParseError(f"{source}: not a PRISM DTMC (missing 'dtmc' keyword)")
    if in_module:
        raise ParseError(f"{source}: module not closed by 'endmodule'")
    if pm.var is None:
        raise ParseError(f"{source}: no state variable declared (expected 's : [0..K] init i;')")
    return pm


def _constant(pm: _Module, m: re.Match[str], line: int) -> None:
    if m.group(2) in pm.consts:
        raise ParseError(f"line {line}: duplicate constant {m.group(2)!r}")
    if m.group(2) == pm.var:
        raise ParseError(f"line {line}: constant {m.group(2)!r} has the name of the state variable")
    if m.group(3) is None:
        if m.group(2) not in pm.given:
            raise ParseError(f"line {line}: constant {m.group(2)!r} has no value (pass --const {m.group(2)}=...)")
        val = pm.given[m.group(2)]
    else:
        if m.group(2) in pm.given:
            raise InputError(f"--const {m.group(2)}: constant {m.group(2)!r} already has a value (line {line})")
        val = eval_num(m.group(3), pm.consts, line)
    if m.group(1) == "int" and val.denominator != 1:
        raise ParseError(f"line {line}: int constant {m.group(2)!r} is not an integer")
    pm.consts[m.group(2)] = val


def _variable(pm: _Module, m: re.Match[str], line: int) -> None:
    if pm.var is not None:
        raise ParseError(f"line {line}: only one state variable is supported "
                         f"(found {pm.var!r} and {m.group(1)!r})")
    var = m.group(1)
    if var in pm.consts:
        raise ParseError(f"line {line}: variable {var!r} has the name of a constant")
    vals = [eval_num(g, pm.consts, line) for g in (m.group(2), m.group(3))]
    if any(v.denominator != 1 for v in vals):
        raise ParseError(f"line {line}: range of {var!r} must be integers")
    lo, hi = int(vals[0]), int(vals[1])
    if hi < lo:
        raise ParseError(f"line {line}: empty range [{lo}..{hi}] for {var!r}")
    if hi - lo + 1 > NATIVE_MAX_RANGE:
        raise ModelError(f"line {line}: variable {var!r} has range [{lo}..{hi}] ({hi - lo + 1} values); "
                         f"at most {NATIVE_MAX_RANGE} values are supported")
    init = lo
    if m.group(4) is not None:
        iv = eval_num(m.group(4), pm.consts, line)
        if iv.denominator != 1 or not lo <= int(iv) <= hi:
            raise ModelError(f"line {line}: initial value {iv} of {var!r} outside [{lo}..{hi}]")
        init = int(iv)
    pm.var, pm.lo, pm.hi, pm.init = var, lo, hi, init


def _transition_rows(pm: _Module) -> tuple[dict[int, dict[int, tuple[int, int]]], dict[int, int]]:
    """Each state's distribution (successor -> exact (num, den)) and the line of the command that set it."""
    from ..spec.pctl import parse_state_formula

    var, lo, hi, n = pm.var, pm.lo, pm.hi, pm.n
    assert var is not None
    rows: dict[int, dict[int, tuple[int, int]]] = {}
    owner: dict[int, int] = {}
    env_vars = {var: pm.values}
    for line, guard, upd in pm.commands:
        fm = FAST_GUARD.match(guard)
        if fm and fm.group(1) == var:
            g = int(fm.group(2))
            if not lo <= g <= hi:
                continue  # a guard no state satisfies, as in PRISM
            states = [g - lo]
        else:
            try:
                gf = parse_state_formula(subst_consts(guard, pm.consts))
            except ParseError as exc:
                raise ParseError(f"line {line}: bad guard {guard!r}: {exc}") from None
            boolean_only(gf, f"guard {guard!r}", line)
            try:
                states = np.flatnonzero(gf.evaluate_env(n, {}, env_vars)).tolist()
            except ModelError as exc:
                raise ParseError(f"line {line}: {exc}") from None
        fast = fast_row(upd, var, lo, hi, states[0] + lo, line) if len(states) == 1 else None
        parts = split_updates(upd, line) if fast is None else []
        for i in states:
            if i in owner:
                raise ModelError(f"state {var}={i + lo} is enabled by two commands (lines {owner[i]} and "
                                 f"{line}); overlapping guards are not supported")
            owner[i] = line
            rows[i] = fast if fast is not None else update_row(parts, var, lo, hi, i + lo, pm.consts, line)
    return rows, owner


def _matrix(pm: _Module, rows: Mapping[int, dict[int, tuple[int, int]]], owner: Mapping[int, int],
            tol: float) -> tuple[sp.csr_matrix, dict[int, dict[int, str]], list[int]]:
    """The transition matrix, its exact entries as strings, and the deadlock states given a self-loop;
    every row must sum to 1 within ``tol`` (checked in exact integer arithmetic)."""
    var, lo, n = pm.var, pm.lo, pm.n
    exact: dict[int, dict[int, str]] = {}
    deadlocks = []
    r_idx, c_idx, data = [], [], []
    for i in range(n):
        row = rows.get(i)
        if row is None:
            deadlocks.append(i + lo)
            row = {i: (1, 1)}
        # exact row sum with integers only: sum a_k/b_k = S/L with L = lcm(b_k)
        L = math.lcm(*(d for _, d in row.values()))
        S = sum(a * (L // d) for a, d in row.values())
        if abs(S - L) > tol * L:
            total = Fraction(S, L)
            raise ModelError(f"row of state {var}={i + lo} sums to {float(total):.12g} "
                             f"(exactly {fraction_str(total)}), not 1 (line {owner.get(i, '?')})")
        exact[i] = {}
        for j, (a, d) in sorted(row.items()):
            if a == 0:
                continue
            r_idx.append(i)
            c_idx.append(j)
            data.append(a / d)
            exact[i][j] = str(a) if d == 1 else f"{a}/{d}"
    mat = sp.csr_matrix((np.asarray(data, dtype=np.float64), (r_idx, c_idx)), shape=(n, n))
    return mat, exact, deadlocks


def _labels(pm: _Module) -> dict[str, np.ndarray]:
    from ..spec.pctl import parse_state_formula

    labels: dict[str, np.ndarray] = {}
    env_vars = {pm.var: pm.values}
    for line, name, expr in pm.labels_src:
        try:
            f = parse_state_formula(subst_consts(expr, pm.consts))
            boolean_only(f, f"label {name!r}", line)
            labels[name] = f.evaluate_env(pm.n, labels, env_vars)
        except (ParseError, ModelError) as exc:
            raise ParseError(f"line {line}: label {name!r}: {exc}") from None
    return labels


# --- writing ----------------------------------------------------------------------------------
def to_prism(model: DTMC, module: str = "dtmc_model") -> str:
    """PRISM text of ``model``: one variable (the model's own variable when it numbers the states
    0..n-1, else ``s``), exact rationals where ``model.exact`` has them (checked against the matrix),
    shortest round-tripping decimals otherwise, and one ``label`` per model label."""
    model.validate()
    n = model.n
    var = "s"
    if len(model.variables) == 1:
        name, vals = next(iter(model.variables.items()))
        if np.array_equal(vals, np.arange(n)):
            var = name
    lines = ["dtmc", "", f"module {module}", "", f"    {var} : [0..{n - 1}] init {model.initial};", ""]
    P = model.matrix.tocsr()
    P.sort_indices()
    for i in range(n):
        lo_, hi_ = P.indptr[i], P.indptr[i + 1]
        cols, vals_ = P.indices[lo_:hi_], P.data[lo_:hi_]
        keep = vals_ > 0
        cols, vals_ = cols[keep], vals_[keep]
        ex = (model.exact or {}).get(i)
        probs: list[str]
        if ex is not None and _exact_matches(ex, cols, vals_):
            probs = [ex[int(j)] for j in cols]
        else:
            probs = [repr(float(v)) for v in vals_]
        name = f"  // {model.state_names[i]}" if model.state_names else ""
        body = " + ".join(f"{p} : ({var}'={int(j)})" for p, j in zip(probs, cols))
        lines.append(f"    [] {var}={i} -> {body};{name}")
    lines += ["", "endmodule", ""]
    for lname, vec in model.labels.items():
        if not re.fullmatch(IDENT, lname):
            raise ModelError(f"label name {lname!r} is not a PRISM identifier")
        idx = np.flatnonzero(vec)
        expr = " | ".join(f"{var}={int(i)}" for i in idx) if idx.size else "false"
        lines.append(f'label "{lname}" = {expr};')
    return "\n".join(lines) + "\n"


def _exact_matches(ex: Mapping[int, str], cols: np.ndarray, vals: np.ndarray) -> bool:
    if {int(c) for c in cols} != {int(k) for k in ex}:
        return False
    try:
        fr = {int(k): Fraction(v) for k, v in ex.items()}
    except (ValueError, ZeroDivisionError):
        return False
    if sum(fr.values(), Fraction(0)) != 1:
        return False
    return all(abs(float(fr[int(j)]) - v) <= 1e-12 for j, v in zip(cols, vals))


def write_prism(model: DTMC, path: str | Path) -> None:
    """Write ``model`` as a PRISM DTMC that PRISM and Storm read back (see :func:`to_prism`)."""
    Path(path).write_text(to_prism(model))


# --- the Pro2Guard release's model folders ----------------------------------------------------
def _spec_holds(interp, specs: list[dict]) -> bool:
    """An unsafe spec of ``spec_state.jsonl`` (a conjunction of object clauses) in one abstract state:
    every clause needs an object of its ``objectType`` whose listed attributes have the given values
    (``parentReceptacles``: the listed receptacles are among the object's)."""
    if not isinstance(interp, list):
        return False  # the 'finish' state and non-object interpretations are never unsafe
    for clause in specs:
        ok = False
        for obj in interp:
            if not isinstance(obj, dict) or obj.get("objectType") != clause.get("objectType"):
                continue
            good = True
            for k, v in clause.items():
                if k == "objectType":
                    continue
                if k == "parentReceptacles":
                    good = set(v) <= set(obj.get(k) or [])
                else:
                    good = obj.get(k) == v
                if not good:
                    break
            if good:
                ok = True
                break
        if not ok:
            return False
    return True


def _spec_applies(abstraction: dict, specs: list[dict]) -> bool:
    """The spec speaks only of object types, attributes and receptacles this abstraction tracks."""
    for clause in specs:
        if clause.get("objectType") not in abstraction.get("objectTypes", []):
            return False
        for k, v in clause.items():
            if k == "objectType":
                continue
            if k == "parentReceptacles":
                if not set(v) <= set(abstraction.get("parentReceptacles", [])):
                    return False
            elif k not in abstraction.get("keys", []):
                return False
    return True


def read_pro2guard(folder: str | Path, spec_state: str | Path | None = None) -> DTMC:
    """A model folder of the Pro2Guard release (``dtmc.prism`` + ``model.json`` + ``abstraction.json``)
    as a DTMC with state names and the labels the safety property needs.

    Unsafe set (label ``"unsafe"``), decided from the data, not from the indices of
    ``spec_state.jsonl``: those indices do not match these models (the file has no model key; for
    163 of the 193 household models no applicable spec lists exactly the states whose objects
    satisfy it, e.g. for ``log_raw_t108`` "ScrubBrush in Toilet" lists state 0, whose name ``10``
    means the brush is *not* in the toilet), so we recompute the sets from the specs themselves:

    * driving models (``abstraction.json`` has ``collision``): state names are
      ``collision | reach | law-flag | predicate bits``; ``"collision"`` = first bit, ``"reach"`` =
      second, ``"violation"`` = third (the traffic law of ``abstraction.json['rule']`` is broken),
      and ``"unsafe"`` = collision or violation.
    * household models: ``"unsafe"`` = the states whose objects (``model.json['state_interpret']``)
      satisfy some unsafe spec of ``spec_state.jsonl`` that this abstraction can express (its object
      types, attributes and receptacles all appear in ``abstraction.json``); ``"finish"`` = the
      terminal state. ``spec_state`` defaults to the ``spec_state.jsonl`` found in a parent folder.
    """
    import json

    folder = Path(folder)
    model = read_prism(folder / "dtmc.prism")
    try:
        info = json.loads((folder / "model.json").read_text())
        abstraction = json.loads((folder / "abstraction.json").read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read the release files in {folder}: {exc}") from None
    names = [""] * model.n
    for name, idx in info.get("state_index", {}).items():
        if not 0 <= int(idx) < model.n:
            raise ModelError(f"{folder}/model.json: state {name!r} has index {idx} outside 0..{model.n - 1}")
        names[int(idx)] = name
    model.state_names = names
    if isinstance(abstraction, dict) and "collision" in abstraction:
        bits = np.array([[c == "1" for c in name[:3]] for name in names], dtype=bool)
        model.labels.update({"collision": bits[:, 0], "reach": bits[:, 1], "violation": bits[:, 2],
                             "unsafe": bits[:, 0] | bits[:, 2]})
        model.meta["unsafe_rule"] = "collision bit or law-violation bit (driving)"
        model.meta["law"] = abstraction.get("rule")
    else:
        if spec_state is None:
            for parent in folder.resolve().parents:
                if (parent / "spec_state.jsonl").exists():
                    spec_state = parent / "spec_state.jsonl"
                    break
        if spec_state is None:
            raise InputError(f"no spec_state.jsonl above {folder}; pass spec_state=")
        specs = [json.loads(line)["specs"] for line in Path(spec_state).read_text().splitlines() if line.strip()]
        interp = info.get("state_interpret", {})
        unsafe = np.zeros(model.n, dtype=bool)
        used = 0
        for spec in specs:
            if isinstance(abstraction, dict) and _spec_applies(abstraction, spec):
                used += 1
                unsafe |= np.array([_spec_holds(interp.get(nm), spec) for nm in names], dtype=bool)
        model.labels["unsafe"] = unsafe
        model.labels["finish"] = np.array([nm == "finish" for nm in names], dtype=bool)
        model.meta["unsafe_rule"] = f"states satisfying one of the {used} applicable specs of spec_state.jsonl"
    model.meta["folder"] = str(folder)
    return model.validate()
