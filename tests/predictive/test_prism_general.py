"""Issue 14: the general PRISM front end (Storm's parser/builder), new properties against Storm,
structure-chosen solvers, huge step bounds, and one-line errors on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from agentguard.cli import main
from agentguard.core.errors import InputError, ModelError, ParseError
from agentguard.predictive import checker as C
from agentguard.predictive.dtmc import DTMC
from agentguard.predictive.prism import read_prism, write_prism
from agentguard.spec.pctl import parse_properties, parse_property

DATA = Path(__file__).parent / "data" / "external"
stormpy = pytest.importorskip("stormpy")


def run(capsys, *args):
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("name,props", [
    ("two_dice.pm", ['P=? [F "sum7"]', 'R=? [F "done"]', "P=? [F d1+d2=12]", 'P=? [F[2,6] "done"]']),
    ("herman3.pm", ['P=? [F "stable"]', 'R{"steps"}=? [F "stable"]', 'P=? [F<=2 "stable"]']),
    ("queue_bd.pm", ['S=? ["even"]', "S=? [broken]", 'P=? [F<=C "full"]', 'P=? [X P>0.5 [F<=5 "full"]]']),
    ("gambler.pm", ['P=? [F "rich"]', 'R=? [F "broke" | "rich"]', 'filter(max, P=? [F "rich"], x>=N-2)',
                    'P=? [F "init"]', 'P=? [F "deadlock"]']),
    ("sync_counter.pm", ['P=? [F "end" & "b0"]', 'R=? [F "end"]', "P=? [F g+1=M]"]),
])
def test_general_prism_agrees_with_storm_exact(name, props):
    """Native values on Storm-built models vs Storm's own exact checker, every state."""
    from agentguard.predictive.storm_engine import check_program

    from agentguard.predictive.load import load_dtmc

    path = DATA / name
    model = load_dtmc(path)
    assert model.meta["reader"] == "storm"
    consts = model.meta.get("constants") or {}
    dtmc, exact = check_program(path, [parse_property(p, consts) for p in props], mode="exact")
    assert dtmc.n == model.n
    for text, ref in zip(props, exact):
        got = C.check(model, parse_property(text, consts))
        a, b = got.values, ref.values
        assert np.array_equal(np.isinf(a), np.isinf(b)), text
        fin = np.isfinite(b)
        assert np.max(np.abs(a[fin] - b[fin]), initial=0) <= 1e-9, text
        assert got.initial == pytest.approx(ref.initial, abs=1e-9), text


def test_cli_reads_the_general_language_with_const_and_several_properties(capsys):
    wheel = Path(stormpy.__file__).parent / "examples" / "files"
    code, out, err = run(capsys, "check", str(wheel / "pdtmc" / "parametric_die.pm"), "--const", "p=0.5,q=0.5",
                         "-p", 'P=? [F "one"]', "-p", 'R=? [F "done"]', "--json")
    assert code == 0, err
    d = json.loads(out)
    assert [r["initial"] for r in d["results"]] == pytest.approx([1 / 6, 11 / 3])
    code, out, err = run(capsys, "check", str(wheel / "pdtmc" / "parametric_die.pm"), "-p", 'P=? [F "one"]')
    assert code == 2 and err.count("\n") == 1 and "--const p=...,q=..." in err
    code, out, err = run(capsys, "check", str(DATA / "two_dice.pm"), "-p", 'P=? [F "sum7"]', "-e", "storm", "--json")
    assert code == 0 and json.loads(out)["initial"] == pytest.approx(1 / 6)


def test_props_file_drn_and_trailing_semicolon(capsys, tmp_path):
    props = tmp_path / "g.props"
    props.write_text('// two properties\nconst int K = 3;\n"r": P=? [F "rich"];\nP=? [F<=K "broke"];\n')
    code, out, err = run(capsys, "check", str(DATA / "gambler.pm"), "--props", str(props), "--json")
    assert code == 0, err
    res = json.loads(out)["results"]
    assert len(res) == 2 and res[1]["property"] == 'P=? [F<=3 "broke"]'
    code, out, err = run(capsys, "check", str(DATA / "gambler.drn"), "-p", 'P=? [F "rich"];', "--json")
    assert code == 0, err
    assert json.loads(out)["initial"] == pytest.approx(res[0]["initial"], abs=1e-12)
    assert len(parse_properties("P=? [F s=1]; P=? [G s=2]")) == 2


def test_write_prism_label_of_1000_states_reads_back(tmp_path):
    n = 1200
    P = sp.identity(n, format="csr")
    lab = np.zeros(n, bool)
    lab[::1] = True
    lab[5] = False
    m = DTMC(P, 0, {"many": lab}, {"s": np.arange(n)})
    write_prism(m, tmp_path / "m.prism")
    back = read_prism(tmp_path / "m.prism")
    assert np.array_equal(back.labels["many"], lab)


def test_huge_step_bound_is_instant_and_right():
    """F<=10^7 on a small model: squaring/fixed point, equal to the unbounded value (it converges)."""
    import time

    n = 50
    p = 0.45
    rows, cols, vals = [], [], []
    for i in range(n):
        if i in (0, n - 1):
            rows.append(i), cols.append(i), vals.append(1.0)
        else:
            rows += [i, i]
            cols += [i + 1, i - 1]
            vals += [p, 1 - p]
    P = sp.csr_matrix((vals, (rows, cols)), shape=(n, n))
    t = np.zeros(n, bool)
    t[-1] = True
    t0 = time.perf_counter()
    x = C.bounded_until(P, None, t, 10_000_000)
    assert time.perf_counter() - t0 < 2.0
    np.testing.assert_allclose(x, C.reach(P, t), atol=1e-12)
    y = C.bounded_until(P, None, t, 100)  # and a mid-size bound against plain iteration
    z = t.astype(float)
    for _ in range(100):
        z = np.where(t, 1.0, P @ z)
    np.testing.assert_allclose(y, z, atol=1e-13)


@pytest.mark.parametrize("n,p", [(3000, 0.5), (3000, 0.50001)])
def test_chains_use_the_banded_solver_and_match_the_closed_form(n, p):
    i = np.arange(n)
    P = sp.lil_matrix((n, n))
    P[0, 0] = P[n - 1, n - 1] = 1.0
    for k in range(1, n - 1):
        P[k, k + 1], P[k, k - 1] = p, 1 - p
    t = i == n - 1
    x = C.reach(P.tocsr(), t)
    assert C.last_solve_info().method == "banded"
    r = (1 - p) / p
    exact = i / (n - 1) if p == 0.5 else np.expm1(i * np.log(r)) / np.expm1((n - 1) * np.log(r))
    assert np.max(np.abs(x - exact)) < 1e-9


BAD = {
    "rewards_typo.pm": "dtmc\nmodule m\n x:[0..2] init 0;\n [] x<2 -> (x'=x+1);\nendmodule\nrewards \"r\" true 1; endrewards\n",
    "dup_label.pm": "dtmc\nmodule m\n x:[0..2] init 0;\n [] x<2 -> (x'=x+1);\nendmodule\nlabel \"a\"=x=1;\nlabel \"a\"=x=2;\n",
    "dup_const.pm": "dtmc\nconst int N=2;\nconst int N=3;\nmodule m\n x:[0..N] init 0;\n [] x<N -> (x'=x+1);\nendmodule\n",
    "huge_range.pm": "dtmc\nmodule m\n x:[0..2000000000] init 0;\n [] x<5 -> (x'=x+1);\n [] x>=5 -> true;\nendmodule\n",
    "mdp.nm": "mdp\nmodule m\n x:[0..1] init 0;\n [] true -> (x'=1);\n [] true -> (x'=0);\nendmodule\n",
    "garbage.pm": "dtmc\nmodule m\n x:[0..1] init 0;\n [] x=0 -> 0.5:(x'=1) + ;\nendmodule\n",
    "sum.pm": "dtmc\nmodule m\n x:[0..1] init 0;\n [] x=0 -> 0.5:(x'=1) + 0.4:(x'=0);\nendmodule\n",
    "undefined.pm": "dtmc\nconst double p;\nmodule m\n x:[0..1] init 0;\n [] x=0 -> p:(x'=1) + 1-p:(x'=0);\nendmodule\n",
    "binary.pm": None,
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_gives_one_line_and_exit_2(capsys, tmp_path, name):
    f = tmp_path / name
    if BAD[name] is None:
        f.write_bytes(b"\x00\xff\xfe" * 50)
    else:
        f.write_text(BAD[name])
    code, out, err = run(capsys, "check", str(f), "-p", "P=? [F x=1]")
    assert code == 2, (name, out, err)
    assert err.startswith("error: ") and err.count("\n") == 1, err


@pytest.mark.parametrize("prop", ["P=? [F " + "(" * 5000 + "x=1" + ")" * 5000 + "]",
                                  "P=? [F " + "!" * 3000 + "x=1]", "P=? [F<=99999999999999999999999 x=1]x",
                                  "P=? [F x=1e999999]"])
def test_bad_properties_give_one_line(capsys, tmp_path, prop):
    f = tmp_path / "m.pm"
    f.write_text("dtmc\nmodule m\n x:[0..2] init 0;\n [] x<2 -> (x'=x+1);\n [] x=2 -> true;\nendmodule\n")
    code, out, err = run(capsys, "check", str(f), "-p", prop)
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err


def test_duplicate_label_and_constant_are_errors_in_both_readers():
    text = "dtmc\nconst int N=2;\nconst int N=3;\nmodule m\n s:[0..2] init 0;\n [] s=0 -> (s'=1);\nendmodule\n"
    with pytest.raises(ParseError, match="duplicate constant"):
        read_prism(text)
    from agentguard.predictive.prism_storm import read_prism_storm

    with pytest.raises(ParseError, match="duplicate constant 'N'"):
        read_prism_storm(text)
    with pytest.raises((InputError, ModelError)):
        read_prism_storm("dtmc\nmodule m\n x:[0..2000000000] init 0;\n [] x<5 -> (x'=x+1);\nendmodule\n")
