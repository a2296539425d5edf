"""Parser and evaluation of PCTL properties and state formulas (agentguard.spec.pctl)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from agentguard.core.errors import ModelError, ParseError
from agentguard.predictive.dtmc import DTMC
from agentguard.spec.pctl import parse_property, parse_state_formula


@pytest.fixture
def model() -> DTMC:
    n = 6
    P = sp.identity(n, format="csr")
    unsafe = np.array([0, 0, 0, 1, 0, 1], bool)
    return DTMC(P, 0, {"unsafe": unsafe, "goal": np.eye(n, dtype=bool)[2]}, {"s": np.arange(n)})


@pytest.mark.parametrize("text,expected", [
    ("s=3|s=5", [3, 5]),
    ("s>=2 & s<4", [2, 3]),
    ("s!=1 & !(s>2)", [0, 2]),
    ('"unsafe"', [3, 5]),
    ('"unsafe" | "goal"', [2, 3, 5]),
    ("true", [0, 1, 2, 3, 4, 5]),
    ("false", []),
    ('s=3 => "goal"', [0, 1, 2, 4, 5]),
    ("!s=3 | s=3", [0, 1, 2, 3, 4, 5]),  # ! binds tighter than |, comparisons tighter than !
    ("s=1 | s=2 & s=3", [1]),  # & binds tighter than |
    ("(s=1 | s=2) & s=2", [2]),
    ("s > -1 & s <= 0", [0]),
    ("false => false => false", [0, 1, 2, 3, 4, 5]),  # => is right-associative (left would give [])
])
def test_state_formula_semantics(model, text, expected):
    got = np.flatnonzero(parse_state_formula(text).evaluate(model)).tolist()
    assert got == expected


def test_property_forms():
    p = parse_property("P=? [F s=3|s=7]")
    assert p.is_query and p.path.op == "F" and p.path.bound is None
    p = parse_property('P=? [ G !"unsafe" ]')
    assert p.path.op == "G"
    p = parse_property("P=? [F<=10 s=1]")
    assert p.path.bound == 10
    p = parse_property("P=? [F<10 s=1]")
    assert p.path.bound == 9
    p = parse_property('P=? [ !"unsafe" U<=4 s=2 ]')
    assert p.path.op == "U" and p.path.bound == 4 and p.path.left is not None
    p = parse_property("P>=0.9 [G s!=3]")
    assert p.comparison == ">=" and p.threshold == 0.9 and not p.is_query
    p = parse_property("P=? [X s=1]")
    assert p.path.op == "X"


def test_round_trip_text():
    for text in ["P=? [F s=3 | s=7]", 'P=? [!"unsafe" U<=3 s=2]', "P=? [G !(s=1)]", "P<0.5 [F s>=2 & s<4]"]:
        p = parse_property(text)
        assert parse_property(str(p)) == p


@pytest.mark.parametrize("bad", [
    "", "P=? F s=1", "P=? [F s=1", "P=? [F s=]", "P=? [s=1]", "P=? [F s=1] extra", "Q=? [F s=1]",
    "P=? [F s=1 &]", "P=? [F (s=1]", "P=? [F s=1 # 2]", "P>1.5 [F s=1]", "P=? [F<=-1 s=1]", 'P=? [F ""]',
])
def test_bad_properties_raise_parse_error(bad):
    with pytest.raises(ParseError):
        parse_property(bad)


def test_parse_error_names_column():
    with pytest.raises(ParseError, match="column 10"):
        parse_property("P=? [F s=]")


def test_unknown_names_listed(model):
    f = parse_state_formula('"nope" | t=2 | "unsafe" | "missing"')
    with pytest.raises(ModelError) as ei:
        f.evaluate(model)
    msg = str(ei.value)
    assert "missing" in msg and "nope" in msg and "t" in msg and '"unsafe"' in msg  # known labels listed


def test_bare_identifier_is_variable_or_label():
    n = 3
    m = DTMC(sp.identity(n, format="csr"), 0, {"unsafe": np.array([1, 0, 0], bool)},
             {"s": np.arange(n), "viol": np.array([0, 0, 1])})
    assert parse_state_formula("viol").evaluate(m).tolist() == [False, False, True]
    assert parse_state_formula("unsafe").evaluate(m).tolist() == [True, False, False]


def test_printed_formulas_parse_back_to_the_same_semantics(model):
    """Property-based: any formula tree prints to PRISM text that parses back to the same truth
    values on every state (the text is also what the Storm engine receives)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from agentguard.spec.pctl import And, Compare, Const, Implies, Label, Not, Or

    atoms = st.one_of(
        st.builds(Const, st.booleans()),
        st.builds(Label, st.sampled_from(["unsafe", "goal"])),
        st.builds(Compare, st.just("s"), st.sampled_from(["=", "!=", "<", "<=", ">", ">="]), st.integers(-1, 6)),
    )
    formulas = st.recursive(atoms, lambda sub: st.one_of(
        st.builds(Not, sub), st.builds(And, sub, sub), st.builds(Or, sub, sub), st.builds(Implies, sub, sub)),
        max_leaves=12)

    @settings(max_examples=150, deadline=None)
    @given(formulas)
    def check(f):
        again = parse_state_formula(str(f))
        assert again.evaluate(model).tolist() == f.evaluate(model).tolist()

    check()
