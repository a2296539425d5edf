"""The native PRISM reader on oddly formatted files, against Storm's parser, builder and exact checker.

Hypothesis writes a random DTMC (exact rational rows, absorbing and deadlock states, unreachable unsafe
states) as PRISM text with the formatting a hand-written file has: comments at line ends and on their own
lines, commands split over lines, tabs, no spaces, decimals, sums and fractions as probabilities, constants,
probability 1 left out, a label over parentheses. The native reader must build the same chain (every row,
the deadlock self-loops) and give Storm's exact ``P=? [F "unsafe"]`` in every state."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentguard.predictive import checker as C
from agentguard.predictive.prism import read_prism
from agentguard.spec.pctl import parse_property

stormpy = pytest.importorskip("stormpy")


def _prob_text(p: Fraction, style: int) -> str:
    if style == 0 or p.denominator not in (1, 2, 4, 5, 8, 10, 20, 25):
        return f"{p.numerator}/{p.denominator}" if style != 2 else f"( {p.numerator} / {p.denominator} )"
    if style == 1:
        return format(float(p), ".10g")  # an exact decimal (denominator divides a power of 10)
    half = p / 2
    return f"{half.numerator}/{half.denominator}+{half.numerator}/{half.denominator}"


@st.composite
def prism_models(draw):
    n = draw(st.integers(1, 6))
    rows: dict[int, dict[int, Fraction]] = {}
    for i in range(n):
        kind = draw(st.sampled_from(["deadlock", "absorbing", "one", "random", "random"]))
        if kind == "deadlock":
            continue  # no command: PRISM and Storm add a self-loop
        if kind == "absorbing":
            rows[i] = {i: Fraction(1)}
        elif kind == "one":
            rows[i] = {draw(st.integers(0, n - 1)): Fraction(1)}
        else:
            succ = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=min(n, 3), unique=True))
            w = [draw(st.sampled_from([1, 2, 3, 4, 5])) for _ in succ]
            rows[i] = {j: Fraction(x, sum(w)) for j, x in zip(succ, w)}
    unsafe = sorted(draw(st.sets(st.integers(0, n - 1), max_size=n)))
    styles = draw(st.lists(st.integers(0, 3), min_size=4, max_size=4))
    return n, rows, unsafe, styles


def _text(n: int, rows, unsafe, styles) -> str:
    split, comments, tight, prob_style = styles
    sp_ = "" if tight == 1 else (" " if tight == 0 else "\t ")
    out = ["// generated", "dtmc", "", f"const int N{sp_}={sp_}{n - 1};   // top state", "module  M",
           f"\ts{sp_}:{sp_}[0..N] init 0;"]
    for i, row in rows.items():
        ups = [f"(s'={j})" if len(row) == 1 and comments % 2 == 0 else f"{_prob_text(p, prob_style)}{sp_}:{sp_}(s'={j})"
               for j, p in row.items()]
        guard = f"s={i}" if tight != 2 else f"(s = {i})"
        if split % 2:
            cmd = f"[]{sp_}{guard}\n  ->\n    " + f"{sp_}+\n    ".join(ups) + ";"
        else:
            cmd = f"[]{sp_}{guard}{sp_}->{sp_}" + f"{sp_}+{sp_}".join(ups) + ";"
        out.append(cmd + ("  // row " + str(i) if comments else ""))
        if comments == 3:
            out.append("// between commands")
    out.append("endmodule")
    lab = " | ".join(f"(s={u})" for u in unsafe) if unsafe else "false"
    out.append(f'label "unsafe" = {lab};')
    return "\n".join(out) + "\n"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prism_models())
def test_native_reader_agrees_with_storm_on_odd_formatting(model):
    from agentguard.predictive.storm_engine import check_program

    n, rows, unsafe, styles = model
    text = _text(n, rows, unsafe, styles)
    native = read_prism(text)
    want = np.zeros((n, n))
    for i in range(n):
        for j, p in rows.get(i, {i: Fraction(1)}).items():
            want[i, j] = float(p)
    np.testing.assert_allclose(native.matrix.toarray(), want, atol=1e-15, err_msg=text)
    assert native.labels["unsafe"].tolist() == [i in unsafe for i in range(n)], text
    prop = parse_property('P=? [F "unsafe"]')
    storm_model, (ref,) = check_program(text, [prop], mode="exact")
    # Storm builds the states reachable from init only, in its own order; a variable no command writes
    # leaves no valuation (then only the initial state s = 0 is built)
    s_of = storm_model.variables.get("s", np.zeros(storm_model.n, dtype=int))
    got = C.check(native, prop).values
    np.testing.assert_allclose(got[s_of], ref.values, atol=1e-12, err_msg=text)


@pytest.mark.parametrize("cmd,row", [
    ("1/2+1/2 : (s'=0)", [1.0, 0.0]),                       # was ParseError "cannot parse update '1/2'"
    ("1/4+1/4 : (s'=0) + 1/2 : (s'=1)", [0.5, 0.5]),
    ("1/4 + 1/8+1/8:(s'=1) + 1/2:(s'=0)", [0.5, 0.5]),
    ("1/2 : (s'=1) + 1/2 : (s'=1)", [0.0, 1.0]),            # the same successor twice adds
])
def test_a_plus_inside_a_probability_is_addition(cmd, row):
    text = f"dtmc\nmodule M\n s : [0..1] init 0;\n [] s=0 -> {cmd};\n [] s=1 -> true;\nendmodule\n"
    assert read_prism(text).matrix.toarray()[0].tolist() == row


@pytest.mark.parametrize("cmd", ["1/2 : (s'=1) + 1/2", "1/2 : (s'=1) + 1/4 + 1/4"])
def test_a_trailing_probability_without_an_update_is_a_parse_error(cmd):
    from agentguard.core.errors import ParseError

    text = f"dtmc\nmodule M\n s : [0..1] init 0;\n [] s=0 -> {cmd};\n [] s=1 -> true;\nendmodule\n"
    with pytest.raises(ParseError, match="line 4: cannot parse update") as e:
        read_prism(text)
    assert "\n" not in str(e.value)
