"""The general PRISM DTMC language (and Storm's DRN format) read by Storm's own parser and builder.

The native reader (:mod:`agentguard.predictive.prism`) reads the one-command-per-state files that
learned models and :func:`~agentguard.predictive.prism.write_prism` produce, fast. Everything else of
the PRISM language (several modules and variables, ``bool``, unbounded ``int``, ``global``,
``formula``, ``init ... endinit``, module renaming, synchronising actions, ``min``/``max``/``mod``/
``?:``, ``rewards`` blocks, ...) is parsed and built by Storm (stormpy), and the built model is
converted to a :class:`~agentguard.predictive.dtmc.DTMC` with

* the states Storm builds (those reachable from the initial states, as in PRISM and Storm), in
  Storm's state order;
* every variable (``DTMC.variables``; Booleans as 0/1) from Storm's state valuations;
* every label of the file (``"init"`` and ``"deadlock"`` stay built-in: ``meta['initial_states']``,
  ``meta['deadlock_states']``);
* every reward model, reduced to one expected reward per state and step (state rewards +
  action rewards + expected transition rewards: what ``R=? [F phi]`` accumulates), in
  ``DTMC.rewards`` (the unnamed reward structure is ``""``);
* the file's constants in ``meta['constants']`` (so properties may use them).

The matrix comes out of Storm through its UMB export (binary arrays read with numpy), not through a
Python loop over entries. Guarantees: a file is refused with one line naming the problem (Storm's
parse error with its line and column, an undefined constant, a model type other than DTMC, a
duplicate constant or label, a variable range above :data:`MAX_RANGE` values, checked before
anything is built); Storm's own log output is kept off the terminal.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tarfile
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..core.errors import DependencyError, InputError, ModelError, ParseError, require
from .dtmc import DTMC

__all__ = ["MAX_RANGE", "check_duplicates", "parse_constants", "read_drn", "read_prism_storm", "storm_program",
           "storm_to_dtmc"]

#: a single variable may take at most this many values (a range such as [0..2000000000] is refused)
MAX_RANGE = 10**7


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Silence Storm's C++ log output (written straight to file descriptors 1 and 2) for the block."""
    import sys

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, ValueError, OSError):  # pragma: no cover - closed or odd streams
            pass
    try:
        saved = [os.dup(1), os.dup(2)]
    except OSError:  # pragma: no cover - no standard streams at all
        yield
        return
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            os.dup2(null.fileno(), 2)
            try:
                yield
            finally:
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
    finally:
        for fd in saved:
            os.close(fd)


def storm_error(exc: BaseException) -> str:
    """Storm's exception text as one line: ``Parsing error at 3:10: expecting ... ('const int N=4;')``."""
    text = str(exc).strip()
    text = re.sub(r"^\w+Exception:\s*", "", text)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not set(ln.strip()) <= {"^"}]
    if not lines:
        return type(exc).__name__
    head = re.sub(r"\s+", " ", lines[0].rstrip(","))
    m = re.match(r"Parsing error at (\d+):(\d+):\s*(.*?)(?:,\s*here:)?$", head)
    if m:
        head = f"line {m.group(1)}, column {m.group(2)}: {m.group(3).rstrip(':, ')}"
        if len(lines) > 1:
            head += f" (at {lines[1][:60]!r})"
    elif len(lines) > 1 and len(head) < 40:
        head += " " + " ".join(lines[1:3])
    return head[:300]


def parse_constants(text: str | Mapping[str, Any] | None) -> dict[str, str]:
    """``"N=5,p=0.3"`` (the ``--const`` syntax of PRISM and Storm) as ``{"N": "5", "p": "0.3"}``."""
    if text is None:
        return {}
    if isinstance(text, Mapping):
        return {str(k): str(v) for k, v in text.items()}
    out: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in str(text).split(","))):
        m = re.fullmatch(r"([A-Za-z_]\w*)\s*=\s*(-?[0-9.]+(?:[eE][-+]?\d+)?(?:/[0-9]+)?|true|false)", part)
        if not m:
            raise InputError(f"bad constant definition {part!r} (expected NAME=VALUE, e.g. N=5,p=0.3)")
        if m.group(1) in out:
            raise InputError(f"constant {m.group(1)!r} defined twice in --const")
        out[m.group(1)] = m.group(2)
    return out


def check_duplicates(text: str, source: str) -> None:
    """A constant, formula or label declared twice is an error (PRISM and Storm refuse it too)."""
    seen: dict[tuple[str, str], int] = {}
    clean = re.sub(r"//[^\n]*", "", text)
    pat = re.compile(r'(?:^|;|\n)\s*(?:(const)\s+(?:int\s+|double\s+|bool\s+)?([A-Za-z_]\w*)'
                     r'|(formula)\s+([A-Za-z_]\w*)|(label)\s+"([^"]*)")')
    for m in pat.finditer(clean):
        kind = m.group(1) or m.group(3) or m.group(5)
        name = m.group(2) or m.group(4) or m.group(6)
        line = clean.count("\n", 0, m.start(2) if m.group(2) else m.start(4) if m.group(4) else m.start(6)) + 1
        key = ("name" if kind != "label" else "label", name)
        if key in seen:
            what = "label" if kind == "label" else kind if kind == "formula" else "constant"
            raise ParseError(f"{source}: duplicate {what} {name!r} (lines {seen[key]} and {line})")
        seen[key] = line


def _stormpy():
    return require("stormpy", "storm")


def storm_program(path_or_text: str | Path, constants: Mapping[str, Any] | str | None = None,
                  source: str | None = None):
    """Parse a PRISM DTMC with Storm, define ``constants``, check ranges and type; the program."""
    sp_ = _stormpy()
    consts = parse_constants(constants)
    is_text = not isinstance(path_or_text, Path) and "\n" in str(path_or_text)
    source = source or ("<text>" if is_text else str(path_or_text))
    if is_text:
        text = str(path_or_text)
    else:
        try:
            text = Path(path_or_text).read_text()
        except OSError as exc:
            raise InputError(f"cannot read PRISM model {source}: {exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise ParseError(f"{source} is not a text file") from None
    check_duplicates(text, source)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.prism"
        path.write_text(text)
        try:
            with quiet():
                prog = sp_.parse_prism_program(str(path))
        except RuntimeError as exc:
            raise ParseError(f"{source}: {storm_error(exc)}") from None
    from stormpy import io as sio

    if prog.model_type != sio.PrismModelType.DTMC:
        kind = str(prog.model_type).rsplit(".", 1)[-1].lower()
        raise ModelError(f"{source}: model type {kind!r} is not supported (only dtmc)")
    prog = _define(sp_, prog, consts, source)
    _check_ranges(prog, source)
    return prog


def _define(sp_, prog, consts: Mapping[str, str], source: str):
    known = {c.name: c for c in prog.constants}
    for name in consts:
        if name not in known:
            raise InputError(f"--const {name}: the model has no constant {name!r} "
                             f"(its constants: {', '.join(sorted(known)) or 'none'})")
    em = prog.expression_manager
    defs = {}
    for name, val in consts.items():
        c = known[name]
        if c.defined:
            raise InputError(f"--const {name}: constant {name!r} already has a value in {source}")
        t = c.type
        if t.is_boolean:
            if val not in ("true", "false"):
                raise InputError(f"--const {name}={val}: {name!r} is a bool constant (true or false)")
            defs[c.expression_variable] = em.boolean(val == "true")
        elif t.is_integer:
            if not re.fullmatch(r"-?\d+", val):
                raise InputError(f"--const {name}={val}: {name!r} is an int constant")
            defs[c.expression_variable] = em.integer(int(val))
        else:
            defs[c.expression_variable] = em.rational(sp_.Rational(val))
    missing = [c.name for c in prog.constants if not c.defined and c.name not in consts]
    if missing:
        raise InputError(f"{source}: constant{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                         f"{'have' if len(missing) > 1 else 'has'} no value; pass --const "
                         + ",".join(f"{m}=..." for m in missing))
    try:
        with quiet():
            return prog.define_undefined_constants(defs).substitute_constants() if defs else \
                prog.substitute_constants()
    except RuntimeError as exc:
        raise ModelError(f"{source}: {storm_error(exc)}") from None


def _check_ranges(prog, source: str) -> None:
    variables = list(prog.global_integer_variables)
    for mod in prog.modules:
        variables += list(mod.integer_variables)
    for v in variables:
        if "notinitialized" in str(v.lower_bound_expression) + str(v.upper_bound_expression):
            continue  # unbounded int (evaluating its missing bounds crashes Storm): bounded by reachability
        try:
            lo = v.lower_bound_expression.evaluate_as_int()
            hi = v.upper_bound_expression.evaluate_as_int()
        except (RuntimeError, AttributeError):
            continue  # unbounded int: Storm bounds it by what is reachable
        if hi - lo + 1 > MAX_RANGE:
            raise ModelError(f"{source}: variable {v.name!r} has range [{lo}..{hi}] ({hi - lo + 1} values); "
                             f"at most {MAX_RANGE} values per variable are supported")


def read_prism_storm(path_or_text: str | Path, constants: Mapping[str, Any] | str | None = None,
                     source: str | None = None) -> DTMC:
    """Any PRISM DTMC, parsed and built by Storm, as a :class:`DTMC` (see the module docstring)."""
    sp_ = _stormpy()
    prog = storm_program(path_or_text, constants, source)
    src = source or (str(path_or_text) if "\n" not in str(path_or_text) else "<text>")
    opts = sp_.BuilderOptions()
    opts.set_build_all_reward_models()
    opts.set_build_all_labels()
    opts.set_build_state_valuations()
    try:
        with quiet():
            model = sp_.build_model(prog, options=opts)
    except RuntimeError as exc:
        raise ModelError(f"{src}: Storm cannot build the model: {storm_error(exc)}") from None
    dtmc = storm_to_dtmc(model, src)
    dtmc.meta["constants"] = _constant_values(prog)
    dtmc.meta["reader"] = "storm"
    return dtmc


def _constant_values(prog) -> dict[str, float | int | bool]:
    out: dict[str, float | int | bool] = {}
    for c in prog.constants:
        if not c.defined:
            continue
        try:
            t = c.type
            out[c.name] = (c.definition.evaluate_as_bool() if t.is_boolean else
                           c.definition.evaluate_as_int() if t.is_integer else c.definition.evaluate_as_double())
        except RuntimeError:  # pragma: no cover - a definition Storm cannot evaluate
            continue
    return out


def read_drn(path: str | Path) -> DTMC:
    """A DTMC in Storm's explicit DRN format (``@type: DTMC``), built by Storm."""
    sp_ = _stormpy()
    p = Path(path)
    if not p.is_file():
        raise InputError(f"model file not found: {p}")
    head = p.read_text(errors="replace")[:2000]
    m = re.search(r"@type:\s*(\w+)", head)
    if m and m.group(1).upper() != "DTMC":
        raise ModelError(f"{p}: DRN model type {m.group(1)!r} is not supported (only DTMC)")
    if re.search(r"@parameters\s*\n\s*\S", head) and not re.search(r"@parameters\s*\n\s*@", head):
        raise ModelError(f"{p}: parametric DRN models are not supported")
    try:
        with quiet():
            model = sp_.build_model_from_drn(str(p))
    except RuntimeError as exc:
        raise ParseError(f"{p}: {storm_error(exc)}") from None
    dtmc = storm_to_dtmc(model, str(p))
    dtmc.meta["reader"] = "storm-drn"
    return dtmc


def _umb_arrays(model) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row pointers, columns, probabilities) of Storm's matrix via its UMB export (binary arrays)."""
    from stormpy import io as sio

    opts = sio.UmbExportOptions()
    opts.compression = sio.CompressionMode.NO_COMPRESSION
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.umb"
        with quiet():
            sio.export_to_umb(model, str(path), options=opts)
        with tarfile.open(path) as tf:
            def arr(name: str, dtype) -> np.ndarray:
                f = tf.extractfile(name)
                assert f is not None
                return np.frombuffer(f.read(), dtype=dtype)

            index = json.loads(tf.extractfile("index.json").read())  # type: ignore[union-attr]
            ts = index["transition-system"]
            ptype = ts.get("branch-probability-type", {})
            if ptype.get("type") != "double" or ptype.get("size") != 64:
                raise ModelError(f"unexpected probability encoding in Storm's export: {ptype}")
            if ts["#choices"] != ts["#states"]:
                raise ModelError("the model has nondeterministic choices (not a DTMC)")
            ptr = arr("choice-to-branches.bin", np.uint64).astype(np.int64)
            cols = arr("branch-to-target.bin", np.uint64).astype(np.int64)
            vals = arr("branch-to-probability.bin", np.float64).copy()
    return ptr, cols, vals


def storm_to_dtmc(model, source: str) -> DTMC:
    """A built Storm DTMC (float) as our :class:`DTMC`, same state order (see the module docstring)."""
    n = int(model.nr_states)
    if model.is_nondeterministic_model or not model.is_discrete_time_model:
        raise ModelError(f"{source}: not a DTMC ({model.model_type})")
    ptr, cols, vals = _umb_arrays(model)
    mat = sp.csr_matrix((vals, cols, ptr), shape=(n, n))
    mat.sum_duplicates()
    init = [int(i) for i in model.initial_states]
    labels: dict[str, np.ndarray] = {}
    deadlock = np.zeros(n, dtype=bool)
    for name in sorted(model.labeling.get_labels()):
        vec = np.zeros(n, dtype=bool)
        idx = list(model.labeling.get_states(name))
        if idx:
            vec[np.asarray(idx, dtype=np.int64)] = True
        if name == "deadlock":
            deadlock = vec
        elif name != "init":
            labels[name] = vec
    variables: dict[str, np.ndarray] = {}
    if model.has_state_valuations():
        sv = model.state_valuations
        for v in sv.get_all_variables():
            if v.has_boolean_type():
                vec = np.zeros(n, dtype=np.int64)
                vec[np.asarray(list(sv.get_boolean_values(v)), dtype=np.int64)] = 1  # a BitVector: set indices
                variables[v.name] = vec
            elif v.has_integer_type():
                variables[v.name] = np.asarray(sv.get_int64_values(v), dtype=np.int64)
    rewards = _rewards(model, mat, n)
    meta: dict[str, Any] = {"source": source, "initial_states": init,
                            "deadlock_states": np.flatnonzero(deadlock).tolist()}
    return DTMC(mat, init[0] if init else 0, labels, variables, None, None, None, meta,
                rewards=rewards).validate()


def _rewards(model, mat: sp.csr_matrix, n: int) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for name, rm in model.reward_models.items():
        r = np.zeros(n)
        if rm.has_state_rewards:
            r += np.asarray(rm.state_rewards, dtype=np.float64)
        if rm.has_state_action_rewards:
            r += np.asarray(rm.state_action_rewards, dtype=np.float64)
        if rm.has_transition_rewards:
            raise ModelError(f"reward model {name!r} has transition rewards, which are not supported")
        out[str(name)] = r
    return out
