"""Red team of the spec language (session 11): a spec file or a state that makes a predicate fail must never
make it read as False ("safe"); a spec file never runs code, never expands, never lets a second key win."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from agentguard import InputError
from agentguard.core.errors import ParseError
from agentguard.spec.expr import Expr
from agentguard.spec.predicates import Abstraction, Predicate, load_spec
from agentguard.spec.spec_file import read_document

BASE = {"predicates": {"hot": "temperature > 50", "open": "door_open"}, "unsafe": "hot and open"}


def _spec(tmp_path, text, suffix=".yaml"):
    p = tmp_path / f"s{suffix}"
    p.write_text(text, encoding="utf-8")
    return p


# -- predicates that fail or return non-Booleans fail closed ---------------------------------------------------

@pytest.mark.parametrize("expr, state", [
    ('get(it, "unsafe_flag")', {"it": {}}),                 # None from get with no default: was False
    ("count(objects, isDirty)", {"objects": [{"isDirty": True}, {"isDirty": True}]}),  # 2: a number
    ('"yes"', {}),
    ("[hot]", {"hot": True}),
])
def test_a_predicate_that_returns_no_boolean_is_an_error_not_false(expr, state):
    p = Predicate.of("p", expr)
    with pytest.raises(InputError, match="not a Boolean"):
        p(state)
    ab = Abstraction([p])
    with pytest.raises(InputError, match="not a Boolean"):
        ab.abstractor()(state)


def test_a_type_error_inside_a_quantifier_propagates_a_missing_field_does_not():
    # before: any InputError inside exists(...) counted as False, so a sensor reporting "HOT" (text) made
    # exists(objects, temperature > 50) False: the unsafe state read as safe
    p = Predicate.of("hot", "exists(objects, temperature > 50)")
    with pytest.raises(InputError, match="cannot compare"):
        p({"objects": [{"temperature": "HOT"}]})
    for state in ({"objects": [{"name": "fork"}]}, {"objects": [{"temperature": None}]},
                  {"objects": [{"temperature": float("nan")}]}):
        assert p(state) is False  # absent (no field, null, NaN): the item does not satisfy the condition
    assert p({"objects": [{"name": "fork"}, {"temperature": 90}]}) is True
    arith = Predicate.of("a", 'exists(objects, weight - 2 > 10)')
    with pytest.raises(InputError, match="arithmetic"):
        arith({"objects": [{"weight": []}]})


@settings(max_examples=60, deadline=None)
@given(items=st.lists(st.one_of(
    st.fixed_dictionaries({"t": st.integers(-100, 100)}), st.fixed_dictionaries({"t": st.none()}),
    st.fixed_dictionaries({}), st.fixed_dictionaries({"t": st.text(max_size=3)})), max_size=5),
    quant=st.sampled_from(["exists", "forall", "count"]))
def test_quantifiers_compiled_and_interpreted_agree_on_errors(items, quant):
    e = Expr(f"{quant}(objects, t > 0)")
    outcomes = []
    for run in (e.evaluate, e.interpret):
        try:
            outcomes.append(("ok", run({"objects": items})))
        except InputError as exc:
            outcomes.append(("error", type(exc).__name__))
    assert outcomes[0] == outcomes[1], (items, outcomes)
    first_text = next((i for i, it in enumerate(items) if isinstance(it.get("t"), str)), None)
    if first_text is not None and quant == "count":
        assert outcomes[0][0] == "error"  # a text temperature is never silently not-hot


def test_unsafe_and_labels_must_evaluate_to_booleans():
    ab = Abstraction([Predicate.of("a", "x"), Predicate.of("b", "y")], unsafe="a if b else None")
    with pytest.raises(InputError, match="not a Boolean"):
        ab.label_vector(["00", "11"], "unsafe")
    assert list(Abstraction([Predicate.of("a", "x")], unsafe="a").label_vector(["0", "1"], "unsafe")) == [False, True]


# -- spec files ---------------------------------------------------------------------------------------------------

def test_yaml_tags_that_build_objects_are_refused(tmp_path):
    for tag in ("!!python/object/apply:os.system ['true']", "!!python/name:os.system", "!!binary aGk="):
        p = _spec(tmp_path, f"predicates:\n  a: x\nname: {tag}\n")
        with pytest.raises(ParseError):
            load_spec(p)


def test_yaml_aliases_are_refused_a_billion_laughs_reads_in_bounded_time(tmp_path):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    lines += ["predicates:\n  p: x", "infeasible: *a8"]
    with pytest.raises(ParseError, match="alias"):
        load_spec(_spec(tmp_path, "\n".join(lines)))


@pytest.mark.parametrize("suffix, text", [
    (".yaml", "predicates:\n  hot: temperature > 50\nunsafe: hot\nunsafe: 'False'\n"),
    (".json", '{"predicates": {"hot": "temperature > 50"}, "unsafe": "hot", "unsafe": "False"}'),
    (".yaml", "predicates:\n  hot: temperature > 50\n  hot: 'False'\n"),
])
def test_a_duplicate_key_is_refused_not_silently_last(tmp_path, suffix, text):
    with pytest.raises(ParseError, match="duplicate key"):
        load_spec(_spec(tmp_path, text, suffix))


@pytest.mark.parametrize("field, value", [
    ("unsafe", False), ("unsafe", ["hot"]), ("unsafe", 1), ("infeasible", [["hot"]]), ("infeasible", [False]),
    ("labels", {"l": True}), ("valid_transition", 5), ("unseen", 3), ("name", ["x"]),
])
def test_expressions_are_text_not_the_repr_of_a_value(tmp_path, field, value):
    # before: unsafe: false (a YAML bool) became the expression "False": a spec that is never unsafe
    with pytest.raises(ParseError, match=field):
        Abstraction.from_dict({**BASE, field: value})


def test_unknown_keys_and_predicate_name_typos_are_one_line_errors():
    with pytest.raises(ParseError, match=r"unknown key\(s\) \['unsafe_when'\]") as e:
        Abstraction.from_dict({**BASE, "unsafe_when": "hot"})
    assert "\n" not in str(e.value)
    with pytest.raises(ParseError, match=r"unknown predicate\(s\) \['hott'\]") as e:
        Abstraction.from_dict({**BASE, "unsafe": "hott and open"})
    assert "\n" not in str(e.value)
    with pytest.raises(ParseError, match="call of 'exsts'"):
        Abstraction.from_dict({"predicates": {"p": "exsts(objects, isOpen)"}})


def test_read_document_bounds_and_strictness():
    with pytest.raises(ParseError, match="longer than"):
        read_document("x" * 1_000_001, "big.json", yaml=False)
    with pytest.raises(ParseError, match="not valid JSON"):
        read_document("[" * 100_000 + "]" * 100_000, "deep.json", yaml=False)
    assert read_document(json.dumps(BASE), "ok.json", yaml=False) == BASE
    assert read_document("a: 1\nb: [x, y]\n", "ok.yaml", yaml=True) == {"a": 1, "b": ["x", "y"]}


# -- resource exhaustion: an expression from a spec file is evaluated in bounded time and memory -----------------

@pytest.mark.parametrize("text, state, match", [
    ('"a" * 300000000 == ""', {}, "larger than"),                      # 300 MB allocated per state (was 0.6 s)
    ("objects * 100000000 == []", {"objects": [1, 2]}, "larger than"),
    ('"%0100000000d" % 1 == ""', {}, "arithmetic only"),                # string formatting with a width
    ("count([1 for a in objects for b in objects for c in objects]) > 0", {"objects": list(range(300))},
     "more than"),                                                      # 27 million items (minutes, before)
    ("exists(objects, exists(objects, exists(objects, it < 0)))", {"objects": list(range(300))}, "more than"),
    ("x * x * x * x * x * x * x * x > 0", {"x": 10**20000}, "wider than"),
])
def test_an_expression_that_would_exhaust_time_or_memory_fails_closed(text, state, match):
    for run in ("evaluate", "interpret"):
        with pytest.raises(InputError, match=match):
            getattr(Expr(text), run)(state)
    with pytest.raises(InputError, match=match):  # a predicate reports it; never a bit
        Abstraction([Predicate.of("p", text)]).abstractor()(state)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(0, 40), k=st.integers(-3, 2000), s=st.text(max_size=20))
def test_bounded_arithmetic_equals_python_within_the_bound(n, k, s):
    """Below the bound the checked operators compute what Python computes (the differential oracle)."""
    state = {"n": n, "k": k, "s": s, "xs": list(range(n))}
    for text, expected in (("s * k", s * k), ("xs * k", list(range(n)) * k), ("n % 7 + k", n % 7 + k),
                           ("s + s", s + s), ("n * k", n * k)):
        assert Expr(text).evaluate(state) == expected == Expr(text).interpret(state)


def test_a_predicate_entry_with_an_unknown_key_is_refused():
    spec = {"predicates": [{"name": "hot", "expr": "temperature > 50", "unsafe_when": "temperature > 90"}]}
    with pytest.raises(ParseError, match=r"unknown key\(s\) \['unsafe_when'\] in a predicate"):
        Abstraction.from_dict(spec)
    ok = {"predicates": [{"name": "hot", "expr": "temperature > 50", "description": "too hot"}]}
    assert Abstraction.from_dict(ok).names == ["hot"]
