"""`agentguard check`: JSON output, Storm engine, readable table, and one-line errors on bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from agentguard.cli import main
from agentguard.predictive.dtmc import DTMC

MODEL = """dtmc
module m
    s : [0..4] init 1;
    [] s=0 -> (s'=0);
    [] s=1 -> 1/2 : (s'=2) + 1/2 : (s'=3);
    [] s=2 -> 1/4 : (s'=0) + 3/4 : (s'=4);
    [] s=3 -> 1/3 : (s'=1) + 2/3 : (s'=3);
    [] s=4 -> (s'=4);
endmodule
label "unsafe" = s=0;
"""
# P[F s=0]: x2 = 1/4, x3 = x1 (it can only go back to 1 or stay), x1 = 1/2 x2 + 1/2 x3 -> x1 = 1/4
EXPECTED = [1.0, 0.25, 0.25, 0.25, 0.0]


def run(capsys, *args):
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def prism_file(tmp_path):
    p = tmp_path / "m.prism"
    p.write_text(MODEL)
    return p


def test_json_output(capsys, prism_file):
    code, out, err = run(capsys, "check", str(prism_file), "--property", "P=? [F s=0]", "--json")
    assert code == 0, err
    d = json.loads(out)
    np.testing.assert_allclose(d["values"], EXPECTED, atol=1e-12)
    assert d["initial"] == pytest.approx(0.25) and d["seconds"] >= 0
    code, out, _ = run(capsys, "check", str(prism_file), "--property", 'P=? [F "unsafe"]', "--json")
    assert code == 0 and json.loads(out)["values"] == d["values"]


def test_storm_engine_json(capsys, prism_file):
    pytest.importorskip("stormpy")
    code, out, err = run(capsys, "check", str(prism_file), "-p", 'P=? [F "unsafe"]', "--engine", "storm", "--json")
    assert code == 0, err
    d = json.loads(out)
    np.testing.assert_allclose(d["values"], EXPECTED, atol=1e-6)
    assert d["engine"] == "storm"
    code, out, _ = run(capsys, "check", str(prism_file), "-p", "P=? [F s=0]", "-e", "storm", "--storm-mode", "exact",
                       "--json")
    assert json.loads(out)["values"] == EXPECTED


def test_storm_index_order_is_the_variable_value(capsys, tmp_path):
    """Storm explores the initial state first; --engine storm must still list values by s."""
    pytest.importorskip("stormpy")
    text = MODEL.replace("init 1", "init 3")
    p = tmp_path / "m3.prism"
    p.write_text(text)
    _, out, _ = run(capsys, "check", str(p), "-p", "P=? [F s=0|s=4]", "-e", "storm", "--json")
    _, out2, _ = run(capsys, "check", str(p), "-p", "P=? [F s=0|s=4]", "--json")
    np.testing.assert_allclose(json.loads(out)["values"], json.loads(out2)["values"], atol=1e-6)
    _, out, _ = run(capsys, "check", str(p), "-p", "P=? [F<=2 s=0]", "-e", "storm", "--json")
    np.testing.assert_allclose(json.loads(out)["values"], [1, 0.125, 0.25, 0, 0], atol=1e-12)


def test_saved_json_model(capsys, tmp_path):
    m = DTMC(sp.csr_matrix(np.array([[0.5, 0.5, 0], [0, 1, 0], [0.2, 0.3, 0.5]])), 2,
             {"bad": np.array([False, True, False])}, state_names=["a", "b", "c"])
    path = tmp_path / "m.json"
    m.save(path)
    code, out, err = run(capsys, "check", str(path), "-p", 'P=? [G !"bad"]', "--json")
    assert code == 0, err
    assert json.loads(out)["values"] == pytest.approx([0, 0, 0])
    pytest.importorskip("stormpy")
    code, out, err = run(capsys, "check", str(path), "-p", 'P=? [F<=1 "bad"]', "-e", "storm", "--json")
    assert code == 0, err
    assert json.loads(out)["values"] == pytest.approx([0.5, 1, 0.3])


def test_table_output(capsys, prism_file):
    code, out, _ = run(capsys, "check", str(prism_file), "-p", "P<0.5 [F s=0]")
    assert code == 0
    assert "0.25" in out and "(init)" in out and "yes" in out and "[native]" in out


BAD_ROWS = MODEL.replace("1/4 : (s'=0) + 3/4 : (s'=4)", "1/4 : (s'=0) + 2/4 : (s'=4)")
MALFORMED = MODEL.replace("[] s=3 -> 1/3 : (s'=1)", "[] s=3 -> 1/3 (s'=1)")


@pytest.mark.parametrize("content,args,needle", [
    (MALFORMED, ["-p", "P=? [F s=0]"], "line 7"),
    (BAD_ROWS, ["-p", "P=? [F s=0]"], "state s=2 sums to 0.75"),
    (MODEL, ["-p", 'P=? [F "nosuch"]'], 'label "nosuch"'),
    (MODEL, ["-p", "P=? [F t=1]"], "variable t"),
    (MODEL, ["-p", "P=? [F s=]"], "column"),
    (MODEL, ["-p", "P=? [F s=0]", "--engine", "prism"], "unknown engine"),
    (MODEL, ["-p", "P=? [F s=0]", "--method", "magic"], "unknown method"),
    (MODEL, [], "missing --property"),
    ('{"format": "agentguard-dtmc/1", "n": 2, "transitions": [[0, 0, 0.5]]}', ["-p", "P=? [F s=0]"], "sums to"),
    ("{not json", ["-p", "P=? [F s=0]"], "not JSON"),
])
def test_bad_input_one_line_error(capsys, tmp_path, content, args, needle):
    path = tmp_path / ("m.json" if content.startswith("{") else "m.prism")
    path.write_text(content)
    code, _, err = run(capsys, "check", str(path), *args)
    assert code != 0
    assert err.startswith("error: ") and needle in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_missing_file_and_model(capsys, tmp_path):
    code, _, err = run(capsys, "check", str(tmp_path / "none.prism"), "-p", "P=? [F s=0]")
    assert code != 0 and err.startswith("error: model file not found")
    code, _, err = run(capsys, "check")
    assert code != 0 and err.startswith("error: missing MODEL")
    code, _, err = run(capsys, "check", str(tmp_path), "-p", "P=? [F s=0]")
    assert code != 0 and "directory without dtmc.prism" in err


def test_subprocess_no_traceback(tmp_path):
    """The real entry point: exit status and stderr as a user sees them."""
    import subprocess
    import sys

    p = tmp_path / "bad.prism"
    p.write_text(BAD_ROWS)
    r = subprocess.run([sys.executable, "-m", "agentguard", "check", str(p), "-p", "P=? [F s=0]", "--json"],
                       check=False, capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and r.stdout == ""
    assert r.stderr.startswith("error: ") and "Traceback" not in r.stderr


def test_release_folder_with_unsafe_label(capsys, data_dir):
    """A Pro2Guard model folder: the documented "unsafe" label works with both engines."""
    folder = data_dir / "pro2guard/embodied_dtmcs/log_raw_t103"
    code, out, err = run(capsys, "check", str(folder), "-p", 'P=? [F "unsafe"]', "--json")
    assert code == 0, err
    native = json.loads(out)
    _, out3, _ = run(capsys, "check", str(folder / "dtmc.prism"), "-p", "P=? [F s=3]", "--json")
    assert native["values"] == json.loads(out3)["values"]
    pytest.importorskip("stormpy")
    code, out, err = run(capsys, "check", str(folder), "-p", 'P=? [F "unsafe"]', "-e", "storm", "--json")
    assert code == 0, err
    np.testing.assert_allclose(json.loads(out)["values"], native["values"], atol=1e-6)
    code, out, err = run(capsys, "check", str(data_dir / "pro2guard/av_dtmcs/s2"), "-p",
                         'P=? [F "collision"]', "-e", "storm", "--storm-mode", "exact", "--json")
    assert code == 0, err
    _, out2, _ = run(capsys, "check", str(data_dir / "pro2guard/av_dtmcs/s2"), "-p", 'P=? [F "collision"]', "--json")
    np.testing.assert_allclose(json.loads(out)["values"], json.loads(out2)["values"], atol=1e-12)


@pytest.mark.parametrize("old,new", [
    ("(s'=3);\n    [] s=4", "(s'=0x3);\n    [] s=4"),           # an update's value (issue 29: was "unexpected ValueError")
    ("1/4 : (s'=0)", "0x1/4 : (s'=0)"),                       # a probability
    ("1/3 : (s'=1) + 2/3", "0b1/3 : (s'=1) + 2/3"),            # binary
    ("1/2 : (s'=2) + 1/2", "1_0/20 : (s'=2) + 1/2"),           # Python's digit separators are not PRISM's
])
def test_non_prism_number_literals_are_one_line_errors_exit_2(capsys, tmp_path, old, new):
    assert old in MODEL
    path = tmp_path / "m.prism"
    path.write_text(MODEL.replace(old, new, 1))
    code, _, err = run(capsys, "check", str(path), "-p", "P=? [F s=0]")
    assert code == 2, err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1 and "unexpected" not in err
