"""Predicate abstraction: the safe expression language, Python combinators, specs, unseen states."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agentguard import InputError, ParseError
from agentguard.demo.dtmc_example import EXAMPLE_SPEC
from agentguard.spec.expr import Expr
from agentguard.spec.predicates import (
    Abstraction,
    Predicate,
    exists,
    forall,
    hamming1,
    load_spec,
    resolve_state,
    where,
)

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


def test_python_combinators_match_text_predicates():
    py = Predicate.of("mw_on", exists(where(objectType="Microwave", isToggled=True)))
    txt = Predicate.of("mw_on", 'exists(objects, objectType == "Microwave" and isToggled)')
    assert py(KITCHEN) is txt(KITCHEN) is True
    nothing_held = forall(where(isPickedUp=lambda v: not v))
    assert nothing_held(KITCHEN) is False
    assert Predicate.of("fast", lambda s: s["step"] > 3)(KITCHEN) is True
    bad = Predicate.of("boom", lambda s: 1 / 0)
    with pytest.raises(InputError, match="predicate 'boom' failed: ZeroDivisionError"):
        bad(KITCHEN)
    with pytest.raises(InputError, match="not a Boolean"):
        Predicate.of("s", lambda s: "yes")(KITCHEN)


def test_abstraction_bits_valid_transitions_and_infeasible_states():
    ab = Abstraction.from_dict({
        "predicates": {"a": "x > 0", "b": "y", "c": "z == 'on'"},
        "infeasible": ["a and b and c"],
        "valid_transition": "changed <= 1 or (not src.a and dst.a)",
        "unsafe": "a and c",
        "labels": {"quiet": "not b"},
        "terminal": "end",
    })
    assert ab.abstract({"x": 1, "y": False, "z": "on"}) == "101"
    with pytest.raises(InputError, match="infeasible"):
        ab.abstract({"x": 1, "y": True, "z": "on"})
    assert ab.is_valid("000", "100") and ab.is_valid("000", "111")  # a switches on: anything may change
    assert not ab.is_valid("100", "011")
    assert ab.is_valid("011", "end") and not ab.is_valid("end", "000") and ab.is_valid("end", "end")
    names = ["000", "100", "011", "end"]
    V = ab.valid_matrix(names)
    for i, x in enumerate(names):
        for j, y in enumerate(names):
            assert V[i, j] == ab.is_valid(x, y)
    labels = ab.all_labels(["101", "001", "end"])
    assert labels["unsafe"].tolist() == [True, False, False]
    assert labels["quiet"].tolist() == [True, True, False] and labels["end"].tolist() == [False, False, True]
    assert labels["a"].tolist() == [True, False, False]


def test_hamming1_matrix_matches_the_function():
    ab = Abstraction([Predicate.of(f"p{i}", "True") for i in range(3)], valid_transition="hamming1", terminal="finish")
    names = ["000", "001", "011", "111", "finish"]
    V = ab.valid_matrix(names)
    for i, x in enumerate(names):
        for j, y in enumerate(names):
            assert V[i, j] == ab.is_valid(x, y), (x, y)
    assert hamming1("000", "001") and not hamming1("000", "011")


def test_unseen_state_policies():
    known = ["0000", "0011", "1100", "finish"]
    risk = np.array([0.1, 0.7, 0.4, 0.0])
    assert resolve_state("0011", known, "error") == 1
    assert resolve_state("0001", known, "nearest", risk) == 1  # distance 1 to 0011 vs 1 to 0000: ties to riskier
    assert resolve_state("0001", known, "nearest") == 0  # no risks: lowest index
    assert resolve_state("1000", known, "nearest", risk) == 2
    assert resolve_state("1000", known, "pessimistic", risk) == 1
    with pytest.raises(InputError, match="unknown state '1000'"):
        resolve_state("1000", known, "error")
    with pytest.raises(InputError, match="needs per-state risks"):
        resolve_state("1000", known, "pessimistic")
    with pytest.raises(InputError, match="unseen policy"):
        resolve_state("1000", known, "magic")


def test_example_spec_file_is_the_embedded_spec(tmp_path):
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    import yaml

    assert yaml.safe_load((repo / "examples" / "microwave_spec.yaml").read_text()) == EXAMPLE_SPEC
    ab = load_spec(repo / "examples" / "microwave_spec.yaml")
    assert ab.names == list(EXAMPLE_SPEC["predicates"]) and ab.options["epsilon"] == 0.1
    p = tmp_path / "spec.json"
    p.write_text(json.dumps(EXAMPLE_SPEC))
    assert load_spec(p).describe() == ab.describe()


def test_example_traces_file_is_what_the_generator_writes(tmp_path):
    from pathlib import Path

    from agentguard.demo.dtmc_example import write_example_files

    repo = Path(__file__).resolve().parents[2]
    write_example_files(tmp_path)
    assert (tmp_path / "microwave_traces.jsonl").read_text() == (repo / "examples" / "microwave_traces.jsonl").read_text()


def test_locate_applies_the_unseen_policy_and_python_infeasible_hooks():
    ab = Abstraction([Predicate.of("a", "x > 0"), Predicate.of("b", "y")], unseen="pessimistic",
                     infeasible=[lambda bits: bits == "11"])
    with pytest.raises(InputError, match="infeasible"):
        ab.abstract({"x": 1, "y": True})
    known = ["00", "10"]
    assert ab.locate({"x": 1, "y": False}, known, np.array([0.2, 0.9])) == (1, "10")
    assert ab.locate({"x": 0, "y": True}, known, np.array([0.2, 0.9])) == (1, "01")  # unseen: riskiest
    ab.unseen = "error"
    with pytest.raises(InputError, match="never seen"):
        ab.locate({"x": 0, "y": True}, known)


def test_state_space_prunes_infeasible_valuations():
    ab = Abstraction.from_dict(EXAMPLE_SPEC)
    space = ab.state_space()
    assert len(space) == 16 - 4  # microwave open and on: 4 of the 16 valuations are infeasible
    assert all(not (b[2] == "1" and b[3] == "1") for b in space)
    wide = Abstraction([Predicate.of(f"p{i}", "True") for i in range(20)])
    with pytest.raises(InputError, match="exceed"):
        wide.state_space()


# --- issue 14: the closure compiler equals the reference tree interpreter -------------------------------
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

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


def test_abstractor_equals_abstract_including_errors():
    from agentguard.demo.dtmc_example import generate_example_traces

    spec = Abstraction.from_dict(EXAMPLE_SPEC)
    fast = spec.abstractor()
    for tr in generate_example_traces(20, seed=3):
        for s in tr.states:
            assert fast(s) == spec.abstract(s)
    for bad in ({"objects": "no list"}, {}, {"objects": [{"objectType": "Microwave", "isOpen": True, "isToggled": True}]}):
        assert _outcome(fast, bad) == _outcome(spec.abstract, bad)
