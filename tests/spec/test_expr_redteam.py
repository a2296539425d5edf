"""Red team of the spec expression language (session 21): an attacker writes the predicates of a Pro2Guard spec
file (a spec copied from the internet, a file an agent could write), which the guard evaluates at every decision.

Hole found and fixed: ``*`` and ``+`` checked the *length* of the value they built, not its size. ``[[1] * 100000] *
100000`` is 10**5 long and holds one inner list 10**5 times, so ``max(...)`` of it ran 19 s; a comprehension built
a fresh ``[1] * 100000`` per item, 2.3 GB for 3000 items (76 GB for the 100000 the item budget allowed). Now the
cells of a built value are counted deep (:func:`~agentguard.spec._expr_base._cells`) and every value built, and the
work of ``min``/``max``/``any_of``/``all_of``/``lower``, is spent from the one per-evaluation budget. The property:
an evaluation either returns within its budget or fails closed with an InputError (never a bit), and the compiled
closures and the reference interpreter agree on which.
"""

from __future__ import annotations

import time
import tracemalloc

import pytest
from hypothesis import given, settings, strategies as st

from agentguard import InputError, ParseError
from agentguard.spec._expr_base import MAX_ITEMS, MAX_VALUE, _cells
from agentguard.spec.expr import Expr

ATTACKS = [
    "max([[1] * 100000] * 100000)",                               # 19 s before
    "len([[1] * 100000 for a in [1] * 3000])",                    # 2.3 GB before
    "([[1] * 100000] * 1000) == ([[1] * 100000] * 1000)",
    '("a" * 99999 + "b") in (["a" * 100000] * 100000)',           # 0.4 s before, 10**10 character compares
    "[[1] * 50000] + [[1] * 50000] + [[1] * 50000]",
    "min([[1] * 100000] * 2)",
    'lower("A" * 100000) == lower("A" * 100000) and lower("A" * 100000) == lower("A" * 100000)',
    "any_of([1] * 100000, [2] * 100000)",
]


@pytest.mark.parametrize("text", ATTACKS)
def test_attack_a_small_expression_that_builds_or_compares_a_huge_value_fails_closed(text):
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        for run in (Expr(text).evaluate, Expr(text).interpret):
            with pytest.raises(InputError):
                run({})
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert time.perf_counter() - t0 < 5 and peak < 64 * 2**20, (time.perf_counter() - t0, peak)


def test_cells_count_deep_and_stop_early():
    inner = [1] * 10
    assert _cells([inner] * 3) == 3 + 30 and _cells("abc") == 3 and _cells(["ab", ("c",)]) == 2 + 2 + 2
    huge = [[1] * 100000] * 100000
    t0 = time.perf_counter()
    assert _cells(huge) > MAX_VALUE and time.perf_counter() - t0 < 1  # stops past the limit


def test_ordinary_predicates_are_unaffected():
    state = {"objects": [{"objectType": "Fork", "name": "f" * 50}] * 200, "xs": list(range(1000))}
    for text, want in [("len([o for o in objects]) == 200", True), ("max(xs) == 999 and min(xs) == 0", True),
                       ('any_of("Fork", [o.objectType for o in objects])', True), ("len(xs + xs) == 2000", True),
                       ('lower(objects[0].name) == "f" * 50', True), ("len([1] * 100000) == 100000", True)]:
        assert Expr(text).evaluate(state) is want or Expr(text).evaluate(state) == want, text


# a generator of variants: nests of repetition, concatenation, comprehension and displays with sizes near the limits
SIZES = st.sampled_from([1, 2, 10, 1000, 50000, 100000])


@st.composite
def builders(draw, depth=0):
    leaf = draw(st.sampled_from(["[1]", '"ab"', "[x]", "xs"]))
    if depth >= 3:
        return leaf
    inner = draw(builders(depth=depth + 1))
    kind = draw(st.sampled_from(["mul", "add", "comp", "display", "leaf"]))
    n = draw(SIZES)
    if kind == "mul":
        return f"({inner}) * {n}"
    if kind == "add":
        return f"({inner}) + ({inner})"
    if kind == "comp":
        return f"[{inner} for a in [1] * {min(n, 1000)}]"  # the item budget's own tests cover longer loops
    if kind == "display":
        return f"[{inner}, {inner}]"
    return leaf


@settings(max_examples=80, deadline=None)
@given(body=builders(), use=st.sampled_from(["len({})", "max([{}])", "{} == {}", "1 in {}", "count({}, True)"]))
def test_property_every_evaluation_is_bounded_or_fails_closed_the_same_way_in_both_evaluators(body, use):
    text = use.format(body, body)
    try:
        expr = Expr(text)
    except ParseError:
        return
    scope = {"x": 1, "xs": list(range(100))}
    outcomes = []
    t0 = time.perf_counter()
    for run in (expr.evaluate, expr.interpret):
        try:
            outcomes.append(("value", run(scope)))
        except InputError as exc:
            outcomes.append(("refused", type(exc).__name__))
    assert time.perf_counter() - t0 < 30, text  # the budget's bound (about 0.5 s per run unloaded), with slack
    assert outcomes[0][0] == outcomes[1][0], (text, outcomes)
    if outcomes[0][0] == "value":
        assert outcomes[0][1] == outcomes[1][1]


def test_the_budget_is_per_evaluation():
    e = Expr("len([1] * 100000) + len([1] * 100000)")
    for _ in range(5):  # 200000 cells each time, within MAX_ITEMS: the budget starts afresh per evaluation
        assert e.evaluate({}) == 200000
    assert MAX_ITEMS >= 200000


# -- a spec's unsafe/labels/infeasible are conditions over truth values (session 21) -------------------------------

from agentguard.spec.predicates import Abstraction  # noqa: E402

PREDICATES = {"a": "x > 1", "b": "y"}
STATES = ["00", "01", "10", "11"]


@pytest.mark.parametrize("unsafe", [
    "a == 'x'",            # a bool compared with text: False in every state, nothing was ever unsafe (silent allow)
    "a == 'True'", "b != 'false'", "a == 2", "a + b", "a * 2", "'yes'", "[]", "a if b else 'x'", "len(a)",
    "exists(a, b)", "a.real", "a[0]", "a in [1]", "a is True",
    "False", "0", "None", "true",                     # names no predicate
    "a and not a", "a != a", "not (a or not a)",    # true in no state
])
def test_attack_an_unsafe_condition_that_never_holds_or_is_not_about_truth_values_is_refused_at_load(unsafe):
    with pytest.raises(ParseError, match="unsafe"):
        Abstraction.from_dict({"predicates": PREDICATES, "unsafe": unsafe})


@pytest.mark.parametrize("key", ["labels", "infeasible"])
@pytest.mark.parametrize("cond", ["a == 'x'", "a + b", "'x'", "a * 2", "a in [1]"])
def test_labels_and_infeasible_are_conditions_too(key, cond):
    value = {"l": cond} if key == "labels" else [cond]
    with pytest.raises(ParseError):
        Abstraction.from_dict({"predicates": PREDICATES, "unsafe": "a", key: value})


@pytest.mark.parametrize("unsafe, want", [("a and b", [0, 0, 0, 1]), ("a or b", [0, 1, 1, 1]), ("a != b", [0, 1, 1, 0]),
                                          ("a if b else False", [0, 0, 0, 1]), ("a > b", [0, 0, 1, 0]),
                                          ("not (a and b)", [1, 1, 1, 0]), ("a == True", [0, 0, 1, 1])])
def test_ordinary_conditions_load_and_mean_what_they_say(unsafe, want):
    ab = Abstraction.from_dict({"predicates": PREDICATES, "unsafe": unsafe})
    assert [int(v) for v in ab.label_vector(STATES, "unsafe")] == want


CONDITION_PARTS = st.recursive(
    st.sampled_from(["a", "b", "True", "False", "None", "0", "1", "'x'", "2", "a + b", "[a]"]),
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(["and", "or", "==", "!=", ">", "<="]), inner).map(" ".join),
        inner.map(lambda e: f"not ({e})"), st.tuples(inner, inner, inner).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})")),
    max_leaves=6)


@settings(max_examples=200, deadline=None)
@given(unsafe=CONDITION_PARTS)
def test_property_an_unsafe_that_loads_is_a_bit_in_every_state_or_an_error_never_a_silent_false(unsafe):
    try:
        ab = Abstraction.from_dict({"predicates": PREDICATES, "unsafe": unsafe})
    except ParseError:
        return
    try:
        vec = ab.label_vector(STATES, "unsafe")
    except InputError:
        return  # fails closed at decision time (e.g. a None branch), as before
    assert vec.any(), unsafe  # it loaded, so some state is unsafe


# -- the PCTL and STL parsers: one ParseError for any text, never a RecursionError/ValueError (session 21) -----------

from agentguard.spec import stl  # noqa: E402
from agentguard.spec.pctl import parse_property, parse_state_formula  # noqa: E402


@pytest.mark.parametrize("parse, text", [
    (stl.parse_formula, "(" * 100000 + "a > 1" + ")" * 100000),    # RecursionError before
    (stl.parse_formula, "~" * 100000 + "(a > 1)"),                 # RecursionError before
    (stl.parse_formula, "G (a > 1 -> F[0, " + "9" * 400 + "] (b > 1))"),  # float('9' * 400) is inf: no bound
    (parse_state_formula, "x=" + "9" * 100000),                   # ValueError (int digit limit) before
    (parse_property, "P>=" + "9" * 5000 + " [F \"unsafe\"]"),
    (parse_state_formula, "(" * 100000 + "true" + ")" * 100000),  # already refused
    (parse_state_formula, "!" * 100000 + "true"),                 # already refused
])
def test_attack_formula_texts_are_one_parse_error(parse, text):
    with pytest.raises(ParseError):
        parse(text)


@settings(max_examples=100, deadline=None)
@given(text=st.text(alphabet="()~!&|-><=[],0123456789. aFGPXU\"", max_size=60))
def test_property_the_formula_parsers_raise_only_parse_errors(text):
    for parse in (stl.parse_formula, parse_state_formula, parse_property):
        try:
            parse(text)
        except ParseError:
            pass
