"""The native PRISM reader against Storm's parser and builder (stormpy, the independent oracle), on
files a hand-written model may hold (session 21 red team): the native reader builds Storm's chain
and labels, or refuses with ParseError/ModelError; it never reads a file Storm refuses.

Holes found and fixed: ``label "init" = ...`` (and other words Storm reserves) replaced the built-in
initial-state label (``P=? [F "init"]`` became 0.5 on a file Storm refuses); ``label "u" = s`` and the
guard ``s`` read an integer as ``s != 0``; ``label "b" = "a" | ...`` let labels refer to labels;
``const int s = 1`` beside the variable ``s`` was accepted. Storm refuses each."""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentguard.core.errors import InputError, ModelError, ParseError
from agentguard.predictive.prism import read_prism
from agentguard.predictive.prism_syntax import STORM_RESERVED_LABELS

stormpy = pytest.importorskip("stormpy")


def _storm(text: str) -> tuple[dict, dict, list] | None:
    """Transitions by variable value, labels, initial values as Storm builds them; None if refused."""
    with tempfile.NamedTemporaryFile("w", suffix=".prism", delete=False) as f:
        f.write(text)
    try:
        prog = stormpy.parse_prism_program(f.name)
        opts = stormpy.BuilderOptions()
        opts.set_build_state_valuations()
        opts.set_build_all_labels()
        m = stormpy.build_model(prog, options=opts)
    except RuntimeError:
        return None
    finally:
        os.unlink(f.name)
    var = [v for mod in prog.modules for v in mod.integer_variables][0]
    vals = [int(x) for x in m.state_valuations.get_int64_values(var.expression_variable)]
    P: dict = {}
    for s in m.states:
        for a in s.actions:
            for t in a.transitions:
                P[(vals[s.id], vals[t.column])] = P.get((vals[s.id], vals[t.column]), 0.0) + float(t.value)
    labels = {lab: sorted(vals[s] for s in m.labeling.get_states(lab)) for lab in m.labeling.get_labels()
              if lab != "init" and (lab != "deadlock" or "label \"deadlock\"" in text)}
    return P, labels, sorted(vals[s] for s in m.initial_states)


def _native(text: str) -> tuple[dict, dict, list] | None:
    try:
        m = read_prism(text)
    except (ParseError, ModelError, InputError):
        return None
    vals = m.variables[next(iter(m.variables))]
    A = m.matrix.tocoo()
    P = {(int(vals[i]), int(vals[j])): float(v) for i, j, v in zip(A.row, A.col, A.data)}
    labels = {k: sorted(int(vals[i]) for i in np.flatnonzero(v)) for k, v in m.labels.items()}
    return P, labels, [int(vals[m.initial])]


def assert_native_is_storm_or_refuses(text: str) -> None:
    ours = _native(text)
    if ours is None:
        return  # refusing is allowed (the native reader reads a subset)
    theirs = _storm(text)
    assert theirs is not None, f"the native reader read a file Storm refuses:\n{text}"
    (P, L, I), (Ps, Ls, Is) = ours, theirs
    reach = {k[0] for k in Ps} | set(Is)
    P = {k: v for k, v in P.items() if k[0] in reach}
    assert P.keys() == Ps.keys() and all(abs(P[k] - Ps[k]) < 1e-12 for k in P), text
    assert set(L) == set(Ls), text
    assert all([x for x in L[k] if x in reach] == Ls[k] for k in L), text
    assert I == Is, text


B = " [] s=0 -> 1/2 : (s'=1) + 1/2 : (s'=2);\n [] s=1 -> (s'=1);\n [] s=2 -> (s'=2);"


def _mod(body: str = B, tail: str = "", pre: str = "", var: str = "s : [0..2] init 0;") -> str:
    return f"dtmc\n{pre}\nmodule m\n {var}\n{body}\nendmodule\n{tail}"


CASES = {
    "label init": _mod(tail='label "init" = s=2;'),
    "label true": _mod(tail='label "true" = s=2;'),
    "label int": _mod(tail='label "u" = s;'),
    "label not int": _mod(tail='label "u" = !s;'),
    "label int and": _mod(tail='label "u" = s & s=1;'),
    "label refers to label": _mod(tail='label "a" = s=1;\nlabel "b" = "a" | s=2;'),
    "label refers unquoted": _mod(tail='label "a" = s=1;\nlabel "b" = a | s=2;'),
    "guard int": _mod(" [] s -> true;\n [] s=0 -> (s'=1);"),
    "const shadows var": _mod(pre="const int s = 1;"),
    "basic": _mod(tail='label "u" = s=2;'),
    "comment in command": _mod(" [] s=0 -> 1/2 : (s'=1) // c\n + 1/2 : (s'=2);\n [] s>0 -> true;"),
    "decimals": _mod(" [] s=0 -> .1 : (s'=1) + 9e-1 : (s'=2);\n [] s>0 -> true;"),
    "sum < 1": _mod(" [] s=0 -> 0.3 : (s'=1) + 0.3 : (s'=2);\n [] s>0 -> true;"),
    "sum > 1": _mod(" [] s=0 -> 0.7 : (s'=1) + 0.7 : (s'=2);\n [] s>0 -> true;"),
    "rounded third": _mod(" [] s=0 -> 1/3 : (s'=1) + 0.6666666666666666 : (s'=2);\n [] s>0 -> true;"),
    "negative": _mod(" [] s=0 -> -0.5 : (s'=1) + 1.5 : (s'=2);\n [] s>0 -> true;"),
    "same target twice": _mod(" [] s=0 -> 0.5 : (s'=1) + 0.5 : (s'=1);\n [] s>0 -> true;"),
    "constants": _mod(" [] s=0 -> 1/K : (s'=1) + (K-1)/K : (s'=2);\n [] s>0 -> true;", pre="const int K = 2+1;"),
    "formula": _mod(" [] f -> 1 : (s'=1);\n [] !f -> true;", pre="formula f = s=0;"),
    "overlap": _mod(" [] s=0 -> (s'=1);\n [] s<=1 -> (s'=2);\n [] s=2 -> true;"),
    "deadlock": _mod(" [] s=0 -> (s'=1);\n"),
    "lower bound": _mod(" [] s=3 -> 1/2 : (s'=4) + 1/2 : (s'=5);\n [] s>3 -> true;", var="s : [3..5] init 3;"),
    "negative range": _mod(" [] s=-1 -> (s'=0);\n [] s>=0 -> true;", var="s : [-1..1] init -1;"),
    "crlf": _mod(tail='label "u" = s=2;').replace("\n", "\r\n"),
    "unicode comment": _mod(tail='// ünïcode ☃\nlabel "u" = s=2;'),
    "label deadlock": _mod(" [] s=0 -> (s'=1);\n", 'label "deadlock" = s=0;'),
    "init block": _mod() + "init s=1 endinit\n",
    "prob uses var": _mod(" [] s<2 -> (s+1)/4 : (s'=s+1) + (3-s)/4 : (s'=2);\n [] s=2 -> true;"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_native_reader_is_storm_or_refuses(name: str) -> None:
    assert_native_is_storm_or_refuses(CASES[name])


@pytest.mark.parametrize("word", sorted(STORM_RESERVED_LABELS))
def test_reserved_label_names_are_storms(word: str) -> None:
    """The list is Storm's: Storm refuses each as a label name, and so does the native reader."""
    text = _mod(tail=f'label "{word}" = s=2;')
    assert _storm(text) is None
    with pytest.raises(ParseError):
        read_prism(text)


def test_a_label_named_init_no_longer_replaces_the_initial_state() -> None:
    with pytest.raises(ParseError, match="reserved"):
        read_prism(_mod(tail='label "init" = s=2;'))


ATOM = st.sampled_from(["s=0", "s=1", "s>=1", "s!=2", "true", "false", "s", '"a"', "a", "s+1>2", "2>s"])


@st.composite
def label_exprs(draw: st.DrawFn, depth: int = 3) -> str:
    if depth == 0 or draw(st.booleans()):
        return draw(ATOM)
    op = draw(st.sampled_from(["&", "|", "!", "=>", "()"]))
    a = draw(label_exprs(depth - 1))
    if op == "!":
        return f"!({a})"
    if op == "()":
        return f"({a})"
    return f"({a}) {op} ({draw(label_exprs(depth - 1))})"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expr=label_exprs(), name=st.sampled_from(["u", "b", "init", "min", "x_1", "bool", "ok"]),
       guard=st.sampled_from(["s=0", "s<1", "(s=0)", "s", "!(s>0)", "0=s"]))
def test_generated_labels_and_guards_match_storm_or_are_refused(expr: str, name: str, guard: str) -> None:
    text = _mod(f" [] {guard} -> 1/2 : (s'=1) + 1/2 : (s'=2);\n [] s=1 -> (s'=1);\n [] s=2 -> (s'=2);",
                tail=f'label "a" = s=1;\nlabel "{name}" = {expr};')
    assert_native_is_storm_or_refuses(text)
