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
        return f"[{inner} for a in [1] * {min(n, 100000)}]"
    if kind == "display":
        return f"[{inner}, {inner}]"
    return leaf


@settings(max_examples=120, deadline=None)
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
    assert time.perf_counter() - t0 < 10, text
    assert outcomes[0][0] == outcomes[1][0], (text, outcomes)
    if outcomes[0][0] == "value":
        assert outcomes[0][1] == outcomes[1][1]


def test_the_budget_is_per_evaluation():
    e = Expr("len([1] * 100000) + len([1] * 100000)")
    for _ in range(5):  # 200000 cells each time, within MAX_ITEMS: the budget starts afresh per evaluation
        assert e.evaluate({}) == 200000
    assert MAX_ITEMS >= 200000
