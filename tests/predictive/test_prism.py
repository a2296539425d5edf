"""PRISM import/export (agentguard.predictive.prism), including round trips through Storm."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

from agentguard.core.errors import InputError, ModelError, ParseError
from agentguard.predictive.checker import check
from agentguard.predictive.dtmc import DTMC
from agentguard.predictive.prism import read_prism, to_prism, write_prism

SMALL = """dtmc

module m
    s : [0..3] init 1;   // a comment
    [] s=0 -> 1 : (s'=0);
    [] s=1 -> 1/3 : (s'=0) + 2/3 : (s'=2);
    [] s=2 -> 0.5 : (s'=1) + 0.25 : (s'=2) + 0.25 : (s'=3);
    [] s=3 -> (s'=3);
endmodule

label "unsafe" = s=3;
label "safe_end" = s=0;
"""


def test_read_small_model():
    m = read_prism(SMALL)
    assert m.n == 4 and m.initial == 1
    assert m.exact[1] == {0: "1/3", 2: "2/3"}
    assert m.exact[2] == {1: "1/2", 2: "1/4", 3: "1/4"}  # decimals become exact rationals
    assert m.labels["unsafe"].tolist() == [False, False, False, True]
    assert m.variables["s"].tolist() == [0, 1, 2, 3]
    # P[F s=3]: x1 = 2/3 x2, x2 = 1/2 x1 + 1/4 x2 + 1/4  ->  (5/12) x2 = 1/4: x2 = 3/5, x1 = 2/5
    r = check(m, 'P=? [F "unsafe"]')
    np.testing.assert_allclose(r.values, [0, 2 / 5, 3 / 5, 1], atol=1e-14)
    assert r.initial == pytest.approx(2 / 5)


def test_paper_row_of_log_raw_t103(data_dir):
    """The Pro2Guard paper's '31/184' example (Eq. 1): row of state 01001000 is 151/184, 31/184, 1/184, 1/184."""
    m = read_prism(data_dir / "pro2guard/embodied_dtmcs/log_raw_t103/dtmc.prism")
    assert m.exact[0] == {0: "151/184", 1: "1/184", 2: "31/184", 4: "1/184"}
    assert m.matrix[0, 2] == 31 / 184


def test_constants_general_guards_and_arithmetic_updates():
    text = """dtmc
const int N = 4;
const double p = 1/4;
module walk
    x : [1..N] init 2;
    [] x=1 | x=N -> true;
    [] x>1 & x<N -> p : (x'=x-1) + 1-p : (x'=x+1);
endmodule
label "top" = x=N;
"""
    m = read_prism(text)
    assert m.n == 4 and m.initial == 1 and m.variables["x"].tolist() == [1, 2, 3, 4]
    assert m.exact[1] == {0: "1/4", 2: "3/4"}
    assert m.exact[0] == {0: "1"}
    # biased walk on 1..4 absorbed at both ends, up-probability 3/4: P[F x=4] from x=2 is 9/13... check exactly
    r = check(m, 'P=? [F "top"]')
    # x2 = 1/4*0 + 3/4 x3 ; x3 = 1/4 x2 + 3/4  ->  x2 = 9/13, x3 = 12/13
    np.testing.assert_allclose(r.values, [0, 9 / 13, 12 / 13, 1], atol=1e-14)
    assert check(m, "P=? [F x=4]").values.tolist() == r.values.tolist()  # comparisons use the value, not the index


def test_decimal_fraction_forms(data_dir):
    m = read_prism(data_dir / "pro2guard/examples/candle_cabinet/dtmc.prism")  # "5.0/16.0", "1.0: (s'=2)"
    assert m.exact[1] == {0: "5/16", 1: "11/16"}


def test_deadlock_states_get_self_loops():
    m = read_prism("dtmc\nmodule m\n s : [0..2] init 0;\n [] s=0 -> 0.5:(s'=1) + 0.5:(s'=2);\nendmodule\n")
    assert m.meta["deadlocks_fixed"] == [1, 2]
    assert m.matrix[1, 1] == 1 and m.matrix[2, 2] == 1


@pytest.mark.parametrize("text,line", [
    ("dtmc\nmodule m\n s : [0..2] init 0;\n [] s=0 -> 0.5:(s'=1) + 0.5(s'=2);\nendmodule\n", 4),
    ("dtmc\nmodule m\n s : [0..2] init 0;\n [] s=0 -> 1:(s'=1)\nendmodule\n", 4),
    ("dtmc\nmodule m\n s : [0..2] init 0;\n\n [] s=0 -> 1:(t'=1);\nendmodule\n", 5),
    ("dtmc\nmodule m\n s : [0..2] init 0;\n [] s=0 -> 1/0:(s'=1);\nendmodule\n", 4),
    ("dtmc\nmodule m\n s : [0..2] init 0;\n [a] s=0 -> 1:(s'=1);\nendmodule\n", 4),
    ("dtmc\nmodule m\n s : [0..2] init 0;\n [] s=0 -> q:(s'=1);\nendmodule\n", 4),
    ("dtmc\nmodule m\n s : [0..2] init 0;\n t : [0..1] init 0;\nendmodule\n", 4),
    ("dtmc\nmodule m\n s : [0..2] init 0;\n [] s=0 -> 1:(s'=1);\nendmodule\nlabel \"x\" = s==;\n", 6),
    ("dtmc\nconst int K;\nmodule m\n s : [0..K] init 0;\nendmodule\n", 2),
    ("dtmc\nmodule m\n s : [0..2] init 0;\n garbage here;\nendmodule\n", 4),
])
def test_malformed_prism_names_the_line(text, line):
    with pytest.raises(ParseError, match=f"line {line}"):
        read_prism(text)


@pytest.mark.parametrize("text", [
    "module m\n s : [0..1] init 0;\nendmodule\n",  # no dtmc keyword
    "mdp\nmodule m\n s : [0..1] init 0;\nendmodule\n",
    "dtmc\nmodule m\n s : [0..1] init 0;\n",  # unclosed
    "dtmc\nmodule m\nendmodule\n",  # no variable
])
def test_malformed_prism_other(text):
    with pytest.raises(ParseError):
        read_prism(text)


def test_bad_rows_name_the_state():
    with pytest.raises(ModelError, match=r"state s=1 sums to 0\.9"):
        read_prism("dtmc\nmodule m\n s : [0..2] init 0;\n [] s=0 -> (s'=0);\n"
                   " [] s=1 -> 1/2:(s'=0) + 2/5:(s'=2);\nendmodule\n")
    with pytest.raises(ModelError, match="s=0"):
        read_prism("dtmc\nmodule m\n s : [0..2] init 0;\n [] s=0 -> 1:(s'=5);\nendmodule\n")
    with pytest.raises(ModelError, match="two commands"):
        read_prism("dtmc\nmodule m\n s : [0..2] init 0;\n [] s<=1 -> (s'=0);\n [] s>=1 -> (s'=2);\nendmodule\n")
    with pytest.raises(ModelError, match="outside"):
        read_prism("dtmc\nmodule m\n s : [0..2] init 0;\n [] s=0 -> 3/2:(s'=0) + -1/2 : (s'=1);\nendmodule\n")


def test_missing_file():
    with pytest.raises(InputError, match="cannot read"):
        read_prism("/nonexistent/model.prism")


def test_write_read_round_trip(tmp_path):
    m = read_prism(SMALL)
    path = tmp_path / "m.prism"
    write_prism(m, path)
    back = read_prism(path)
    assert back.exact == m.exact and back.initial == m.initial
    assert (back.matrix != m.matrix).nnz == 0
    assert {k: v.tolist() for k, v in back.labels.items()} == {k: v.tolist() for k, v in m.labels.items()}


def test_write_float_model_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    n = 30
    dense = rng.random((n, n)) * (rng.random((n, n)) < 0.2)
    dense[np.arange(n), np.arange(n)] += 0.01
    dense /= dense.sum(1, keepdims=True)
    m = DTMC(sp.csr_matrix(dense), 3, {"bad": np.arange(n) % 7 == 0}, state_names=[f"q{i}" for i in range(n)])
    write_prism(m, tmp_path / "f.prism")
    back = read_prism(tmp_path / "f.prism")
    assert np.array_equal(back.matrix.toarray(), m.matrix.toarray())  # repr() floats round-trip exactly
    np.testing.assert_allclose(check(back, 'P=? [F "bad"]').values, check(m, 'P=? [F "bad"]').values, atol=1e-15)


def test_exact_strings_only_when_consistent():
    m = read_prism(SMALL)
    m.exact[1] = {0: "1/2", 2: "1/2"}  # stale exact row: must not be written
    text = to_prism(m)
    assert "1/2 : (s'=0) + 1/2" not in text


def test_round_trip_through_storm(tmp_path, data_dir):
    """What we write, Storm reads back and gives the same values (state valuations map the indices)."""
    pytest.importorskip("stormpy")
    from agentguard.predictive.storm_engine import check_storm

    for src in [SMALL, data_dir / "pro2guard/av_dtmcs/s3/dtmc.prism",
                data_dir / "pro2guard/embodied_dtmcs/log_raw_t103/dtmc.prism"]:
        m = read_prism(src)
        out = tmp_path / "w.prism"
        write_prism(m, out)
        prop = "P=? [F s=0 | s=3]"
        ours = check(m, prop).values
        storm = check_storm(read_prism(out), prop, mode="exact", prism=out).values
        assert np.max(np.abs(ours - storm)) < 1e-12
        assert Fraction(read_prism(out).exact[1][next(iter(m.exact[1]))]) == Fraction(m.exact[1][next(iter(m.exact[1]))])
