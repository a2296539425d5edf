"""The safe expression language of spec files (spec.expr): values, refusals, runtime errors, and the
compiled form equal to the tree interpreter (hypothesis)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentguard import InputError, ParseError
from agentguard.demo.dtmc_example import EXAMPLE_SPEC
from agentguard.spec.expr import Expr


KITCHEN = {
    "objects": [
        {"objectType": "Microwave", "isToggled": True, "isOpen": False, "receptacleObjectIds": ["Fork|1"]},
        {"objectType": "Fork", "isPickedUp": False, "parentReceptacles": ["Microwave"]},
        {"objectType": "Apple", "isPickedUp": True, "parentReceptacles": None, "temperature": 21.5},
    ],
    "agent": {"holding": "Apple"},
    "step": 4,
}


@pytest.mark.parametrize(
    "text, expected",
    [
        ('exists(objects, objectType == "Microwave" and isToggled)', True),
        ('exists(objects, objectType == "Microwave" and isOpen)', False),
        ('exists(objects, objectType == "Fork" and "Microwave" in parentReceptacles)', True),
        ('forall(objects, objectType != "Knife")', True),
        ("forall(objects, isPickedUp)", False),  # the microwave has no isPickedUp: a counterexample
        ("count(objects, has(it, 'parentReceptacles')) == 2", True),
        ('exists(o.objectType == "Apple" and o.temperature > 20 for o in objects)', True),
        ('any_of(get(objects[1], "parentReceptacles", []), ["Sink", "Microwave"])', True),
        ('"Fork|1" in objects[0].receptacleObjectIds and not objects[0].isOpen', True),
        ('agent.holding == "Apple" and step >= 4', True),
        ("len(objects) == 3 and -step < 0 and step % 2 == 0", True),
        ('agent["holding"] in ("Apple", "Pear")', True),
        ("1 < step <= 4", True),
        ("objects[2].parentReceptacles is None", True),
        ('lower("ABC") == "abc" if step > 0 else false', True),
        ('count(o for o in objects if o.objectType == "Fork") == 1', True),
    ],
)
def test_expression_language(text, expected):
    assert Expr(text).evaluate(KITCHEN) is expected or Expr(text).evaluate(KITCHEN) == expected


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os')",
        "open('/etc/passwd')",
        "objects.__class__",
        "().__class__.__bases__",
        "[x for x in ().__class__.__mro__]",
        "(lambda: 1)()",
        "exec('1')",
        "x := 1",
        "a.b()",
        "get(x, key='y')",
        "f'{x}'",
        "__builtins__",
    ],
)
def test_expression_language_refuses_code(text):
    with pytest.raises(ParseError):
        Expr(text)


def test_expression_runtime_errors_name_the_problem():
    with pytest.raises(InputError, match="unknown name 'nope'"):
        Expr("nope > 1").evaluate({})
    with pytest.raises(InputError, match="missing field 'speed'"):
        Expr("car.speed > 1").evaluate({"car": {}})
    with pytest.raises(InputError, match="cannot compare"):
        Expr("x < 1").evaluate({"x": "a"})


def test_boolean_operators_work_elementwise_on_arrays():
    a, b = np.array([True, False, True]), np.array([True, True, False])
    np.testing.assert_array_equal(Expr("a and not b or False").evaluate({"a": a, "b": b}), [False, False, True])


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["Fork", "Microwave", "a", ""]))


_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3),
    st.dictionaries(st.sampled_from(["objectType", "isOpen", "x", "it", "items"]), inner, max_size=3)), max_leaves=8)


_STATES = st.fixed_dictionaries({
    "objects": st.lists(st.dictionaries(st.sampled_from(["objectType", "isOpen", "x", "parentReceptacles", "it"]),
                                        _VALUES, max_size=4), max_size=4),
    "x": _VALUES, "y": _VALUES})


_ATOMS = st.sampled_from(["x", "y", "objectType", "isOpen", "it", "objects", "1", "0", "-2", "True", "None", "true",
                          "'Fork'", "\"Microwave\"", "[1, 'a']", "{1, 2}", "parentReceptacles", "x.isOpen",
                          "x['items']", "x[0]", "objects[0]"])


def _expr_text(depth: int):
    if depth == 0:
        return _ATOMS
    sub = _expr_text(depth - 1)
    return st.one_of(
        _ATOMS,
        st.tuples(sub, st.sampled_from(["and", "or"]), sub).map(" ".join),
        st.tuples(sub, st.sampled_from(["and", "or"]), sub, sub).map(lambda t: f"{t[0]} {t[1]} {t[2]} {t[1]} {t[3]}"),
        sub.map(lambda e: f"not ({e})"),
        sub.map(lambda e: f"-({e})"),
        st.tuples(sub, st.sampled_from(["==", "!=", "<", ">=", "in", "not in", "is", "is not", "+", "*", "//",
                                        "%", "-"]), sub).map(lambda t: f"({t[0]}) {t[1]} ({t[2]})"),
        st.tuples(sub, sub, sub).map(lambda t: f"({t[0]}) < ({t[1]}) <= ({t[2]})"),
        st.tuples(sub, sub, sub).map(lambda t: f"({t[0]}) if ({t[1]}) else ({t[2]})"),
        st.tuples(st.sampled_from(["exists", "forall", "count"]), sub).map(lambda t: f"{t[0]}(objects, {t[1]})"),
        st.tuples(st.sampled_from(["exists", "forall", "count"]), sub).map(lambda t: f"{t[0]}(x, {t[1]})"),
        sub.map(lambda e: f"exists(({e}) for o in objects)"),
        sub.map(lambda e: f"[({e}) for o in objects if o]"),
        st.tuples(st.sampled_from(["len", "abs", "lower", "has", "get", "any_of", "all_of", "min", "max"]), sub, sub)
          .map(lambda t: f"{t[0]}({t[1]})" if t[0] in ("len", "abs", "lower") else f"{t[0]}({t[1]}, {t[2]})"),
    )


def _outcome(fn, state):
    try:
        return ("value", fn(state))
    except InputError as exc:
        return ("InputError", str(exc))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_expr_text(3), states=st.lists(_STATES, min_size=1, max_size=3))
def test_compiled_expressions_equal_the_tree_interpreter(text, states):
    """Every generated expression gives the same value, or the same InputError, compiled and interpreted."""
    e = Expr(text)
    for s in states:
        assert _outcome(e.evaluate, s) == _outcome(e.interpret, s), text


def test_compiled_and_interpreted_agree_on_arrays_and_the_spec_examples():
    labels = {"a": np.array([True, False, True]), "b": np.array([False, False, True])}
    for text in ("a and b", "a or b", "not a", "a and True", "False or b", "a == b", "a and b and True"):
        e = Expr(text)
        assert np.array_equal(e.evaluate(labels), e.interpret(labels)), text
    for text in EXAMPLE_SPEC["predicates"].values():
        e = Expr(text)
        assert e.evaluate(KITCHEN) == e.interpret(KITCHEN), text


def test_compiled_expression_survives_pickling():
    import pickle

    e = pickle.loads(pickle.dumps(Expr('exists(objects, objectType == "Fork")')))
    assert e.evaluate(KITCHEN) is True


def test_order_comparisons_refuse_nan_whatever_the_spelling():
    """``nan > 5`` and ``nan <= 5`` are both False in Python, so ``x > 5`` and ``not (x <= 5)`` gave a NaN
    field different bits; both are now the same one-line InputError (as ``None > 5`` already was). Equality
    keeps Python's meaning (``nan == 5`` False, ``nan != 5`` True: the two spellings agree)."""
    import math as _math

    import numpy as _np
    import pytest as _pytest

    from agentguard.core.errors import InputError as _InputError
    from agentguard.spec.expr import compile_expr as _compile

    for text in ("x > 5", "not (x <= 5)", "5 < x", "x >= y", "0 < x < 9", "x < 5 or true"):
        for scope in ({"x": _math.nan, "y": 1.0}, {"x": 1.0, "y": float("nan")}):
            if "y" not in text and _math.isnan(scope["x"]) is False:
                continue
            with _pytest.raises(_InputError, match="NaN") as e:
                _compile(text).evaluate(scope)
            assert "\n" not in str(e.value)
    with _pytest.raises(_InputError, match="NaN"):
        _compile("x > 5").evaluate({"x": _np.array([1.0, _np.nan])})
    assert _compile("x == 5").evaluate({"x": _math.nan}) is False
    assert _compile("x != 5").evaluate({"x": _math.nan}) is True
    assert _compile("x > 5").evaluate({"x": _math.inf}) is True
    assert _compile("x > 5").evaluate({"x": 6}) is True
