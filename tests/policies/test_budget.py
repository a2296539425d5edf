"""Run budgets (:mod:`agentguard.policies.budget`), tried as an attacker (session 20).

The hole: every limit the project shipped was on one call. The integration examples' verified policy refuses a
transfer over the user's limit (500), and two transfers of 400 went through. A budget counts what the run was
already allowed, before the call runs, so a split, a turn of side-by-side calls, a renamed or namespaced tool, an
amount nested in the arguments or spelled as text, and a restart of the service all meet the same total.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

from agentguard.config import load_stack
from agentguard.core.errors import InputError
from agentguard.core.guard import GuardStack, run_guard
from agentguard.core.pipeline import Pipeline
from agentguard.core.types import Context, Decision, ToolCall
from agentguard.policies.budget import Budget, RunBudgetGuard

TRANSFERS = {"name": "transfers", "tools": ["transfer_*"], "argument": "amount", "max_total": 1000, "max_calls": 5}


def guard(**kw) -> RunBudgetGuard:
    return RunBudgetGuard([{**TRANSFERS, **kw}])


def ask(g, amount, run="r", name="transfer_funds"):
    return g.check(Context(run_id=run), ToolCall(name, {"amount": amount, "to": "bob"})).decision


def test_a_split_transfer_meets_the_runs_total() -> None:
    g = guard()
    assert [ask(g, 400), ask(g, 400), ask(g, 400)] == [Decision.ALLOW, Decision.ALLOW, Decision.REJECT]
    assert ask(g, 200) is Decision.ALLOW  # exactly the total
    assert ask(g, 0.01) is Decision.REJECT
    assert ask(g, 400, run="other") is Decision.ALLOW  # per run
    g.end_run("r")
    assert ask(g, 400) is Decision.ALLOW  # a finished run's budget is forgotten on purpose


def test_every_spelling_of_the_tool_and_the_amount_counts() -> None:
    g = guard()
    for name in ("transfer_funds", "Transfer-Funds", "TRANSFER_FUNDS", "bank__transfer_funds"):
        assert ask(g, 150, name=name) is Decision.ALLOW, name  # 600 of 1000, 4 of 5 calls
    v = g.check(Context(run_id="r"), ToolCall("transfer_funds", {"batch": [{"amount": 300}, {"Amount": "200"}]}))
    assert v.decision is Decision.REJECT and "to 1100" in v.reason, v  # both nested amounts count
    g2 = guard()
    nested = {"payload": '{"amount": 900}'}  # a JSON text the tool parses
    assert g2.check(Context(run_id="n"), ToolCall("transfer_funds", nested)).decision is Decision.ALLOW
    assert ask(g2, 101, run="n") is Decision.REJECT


@pytest.mark.parametrize("amount", [-400, "-400", "nan", "inf", "1e400", float("nan"), True, False, None, [400],
                                    {"value": 400}, "400 EUR", "", object()])
def test_an_amount_it_cannot_read_is_refused(amount) -> None:
    assert ask(guard(), amount) is Decision.REJECT


def test_a_call_without_the_amount_is_refused_and_others_pass() -> None:
    g = guard()
    assert g.check(Context(run_id="r"), ToolCall("transfer_funds", {"to": "bob"})).decision is Decision.REJECT
    assert g.check(Context(run_id="r"), ToolCall("read_file", {"path": "x"})).decision is Decision.ALLOW
    deep: dict = {"amount": 1}
    for _ in range(200):
        deep = {"x": deep}
    assert g.check(Context(run_id="r"), ToolCall("transfer_funds", deep)).decision is Decision.REJECT


def test_calls_are_counted_and_an_escalation_counts() -> None:
    g = RunBudgetGuard([{"name": "mails", "tools": "send_*", "max_calls": 2, "decision": "escalate"}])
    calls = [g.check(Context(run_id="r"), ToolCall("send_email", {"to": "a"})).decision for _ in range(4)]
    assert calls == [Decision.ALLOW, Decision.ALLOW, Decision.ESCALATE, Decision.ESCALATE]


def test_side_by_side_calls_of_one_turn_are_counted_in_turn() -> None:
    p = Pipeline(GuardStack([guard()]))
    outs = p.decide_turn("turn", [ToolCall("transfer_funds", {"amount": 400}, f"c{i}") for i in range(3)])
    assert [o.execute for o in outs] == [True, True, False]


def test_a_run_let_go_is_never_new() -> None:
    g = guard(max_calls=None)
    g = RunBudgetGuard(g.budgets, max_runs=1)
    assert ask(g, 900, run="a") is Decision.ALLOW
    assert ask(g, 10, run="b") is Decision.ALLOW  # a leaves the memory
    v = run_guard(g, Context(run_id="a"), ToolCall("transfer_funds", {"amount": 900}))
    assert v.decision.refuses and (v.details or {}).get("error") == "RunEvicted", v


def test_configuration_errors_are_one_line() -> None:
    for bad, msg in [({"tools": ["t"]}, "max_total or max_calls"), ({"tools": ["t"], "max_total": 5}, "argument"),
                     ({"tools": [], "max_calls": 1}, "tools"), ({"tools": ["t"], "max_calls": -1}, "non-negative"),
                     ({"tools": ["t"], "max_calls": 1.5}, "integer"), ({"tools": ["t"], "max_total": math.inf,
                                                                        "argument": "a"}, "finite"),
                     ({"tools": ["t"], "max_calls": 1, "decision": "allow"}, "must refuse"),
                     ({"tools": ["t"], "max_calls": 1, "limit": 3}, "unknown key")]:
        with pytest.raises(InputError, match=msg):
            RunBudgetGuard([bad])
    with pytest.raises(InputError, match="at least one"):
        RunBudgetGuard([])


def test_the_stack_file_takes_it(tmp_path) -> None:
    f = tmp_path / "stack.toml"
    f.write_text('[[guards]]\ntype = "run-budget"\nname = "spend"\n[[guards.budgets]]\nname = "transfers"\n'
                 'tools = ["transfer_*"]\nargument = "amount"\nmax_total = 1000\n')
    stack = load_stack(f)
    c = Context(run_id="s")
    assert [stack.check(c, ToolCall("transfer_funds", {"amount": 600})).decision for _ in range(2)] == [
        Decision.ALLOW, Decision.REJECT]


AMOUNTS = st.one_of(st.integers(0, 700), st.floats(0, 700, allow_nan=False), st.integers(0, 700).map(str),
                    st.decimals(0, 700, places=2).map(lambda d: f"{d:f}"))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(AMOUNTS, st.sampled_from(["transfer_funds", "Transfer_Funds", "x__transfer_funds"])),
                max_size=12))
def test_property_the_allowed_calls_never_exceed_the_budget_and_nothing_within_it_is_refused(calls) -> None:
    """Oracle: exact arithmetic over the calls in order; a call is allowed iff it keeps the run within both limits."""
    g = guard()
    total, n = Fraction(0), 0
    for amount, name in calls:
        got = ask(g, amount, name=name)
        x = Fraction(amount) if not isinstance(amount, str) else Fraction(amount)
        fits = total + x <= 1000 and n + 1 <= 5
        assert got is (Decision.ALLOW if fits else Decision.REJECT), (amount, total, n)
        if fits:
            total, n = total + x, n + 1
    assert total <= 1000 and n <= 5


def test_budget_objects_say_what_they_count() -> None:
    b = Budget("t", ["transfer_*"], "amount", 10)
    assert b.counts("bank__Transfer_Funds") and not b.counts("read_file")
    assert b.amount({"amount": "2.5", "x": {"amount": 1}}) == Fraction(7, 2)
    assert isinstance(b.amount({"y": 1}), str)


# -- session 23: an amount spelled as text is read by one grammar (plain decimal), the one every reader agrees on --
# Before, the text went through Python's float()/Fraction(), which also read "1_000", " 5", "+5", "1e3", "5.", ".5",
# "007", Arabic-Indic and fullwidth digits: spellings JSON refuses and JavaScript's Number()/parseInt() read
# otherwise (parseInt("1e3") is 1), so the budget counted a number the tool's backend need not have read.

LENIENT = ["1_000", " 5", "5 ", "\t5", "+5", "1e3", "1E2", "0x10", "0o7", "0b1", "5.", ".5", "007", "00", "1.5e0",
           "\u0661\u0662\u0663", "\uff15", "5\u00a0000", "\u20075", "5\u2009000", "1,000", "Infinity", "NaN", "1.0.0",
           "٥", "5\n", "+0", "-0", "0.", b"1_000", b"\xd9\xa1", "1" * 401]


@pytest.mark.parametrize("amount", LENIENT)
def test_a_text_amount_not_in_plain_decimal_is_refused(amount) -> None:
    assert ask(guard(), amount) is Decision.REJECT, amount


@pytest.mark.parametrize("amount", ["0", "400", "400.50", "0.01", "999.999", b"400", "1000"])
def test_a_plain_decimal_text_counts(amount) -> None:
    g = guard()
    assert ask(g, amount) is Decision.ALLOW


def _json_reader(s: str):
    """Independent reader 1: JSON (RFC 8259) with exact decimals; None when it is not a JSON number."""
    import json
    from decimal import Decimal

    try:
        x = json.loads(s, parse_float=Decimal, parse_int=Decimal,
                       parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    except ValueError:
        return None
    return Fraction(x) if isinstance(x, Decimal) else None


def _js_parse_int(s: str):
    """Independent reader 2: JavaScript's parseInt(s, 10) (ECMA-262 21.1.2.13: leading white space, a sign, then the
    longest run of ASCII digits)."""
    import re as _re

    m = _re.match(r"[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]*([+-]?)([0-9]+)", s)
    return None if m is None else (-1 if m.group(1) == "-" else 1) * int(m.group(2))


SPELLING = st.one_of(
    st.text(st.sampled_from("0123456789._ +-eExXob,\u00a0\u2007\u0661\u0663\uff15\t\n"), max_size=8),
    st.from_regex(r"\A(0|[1-9][0-9]{0,6})(\.[0-9]{1,4})?\Z"),
    st.tuples(st.integers(0, 10**6), st.sampled_from(["{}", " {}", "{}_0", "+{}", "{}e0", "0{}", "{}.", "{:,}",
                                                     "{:_}", "{:x}"])).map(lambda t: t[1].format(t[0])),
)


@settings(max_examples=250, deadline=None)
@given(SPELLING)
def test_property_a_text_counts_only_as_every_reader_reads_it(s) -> None:
    """Oracle: a text counts iff JSON reads it as a number without sign, exponent or surrounding space, and then as
    the same number JSON, Decimal and (for whole numbers) JavaScript's parseInt read; everything else is refused."""
    from agentguard.policies.budget import _number

    got = _number(s)
    j = _json_reader(s)
    plain = j is not None and s[:1] != "-" and "e" not in s.lower() and s == s.strip(" \t\n\r")  # JSON's spaces
    assert (got is not None) == plain, (s, got, j)
    if got is not None:
        from decimal import Decimal

        assert got == j == Fraction(Decimal(s)), s
        if got.denominator == 1 and "." not in s:
            assert _js_parse_int(s) == got, s
