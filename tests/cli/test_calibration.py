"""`agentguard monitor-eval` (cli.calibration): JSON output for every method and one-line errors."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest


def _write_csv(path, rows, header="uq_problem_idx,num_steps,judge_probability,solved"):
    with gzip.open(path, "wt") as fh:
        fh.write(header + "\n")
        for r in rows:
            fh.write(",".join(str(v) for v in r) + "\n")


def _toy_file(tmp_path, n=400, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        y = int(rng.uniform() < 0.6)
        for t in range(1, int(rng.integers(1, 6)) + 1):
            rows.append((f"p{i}", t, round(float(np.clip(rng.normal(0.7 if y else 0.45, 0.15), 0, 1)), 3), y))
    p = tmp_path / "toy.csv.gz"
    _write_csv(p, rows)
    return p


@pytest.mark.parametrize("method", ["crc", "ucb", "evaluator-anytime", "evaluator-pac"])
def test_monitor_eval_cli_json(tmp_path, capsys, method):
    from agentguard.cli import main
    p = _toy_file(tmp_path)
    try:
        main(["monitor-eval", str(p), "--method", method, "--alpha", "0.2", "--splits", "3", "--json"])
    except SystemExit as exc:  # a successful run may or may not exit explicitly
        assert exc.code in (0, None)
    out = json.loads(capsys.readouterr().out)
    for k in ("false_alarm_rate", "power", "detection_delay", "missed_detection_rate"):
        assert k in out
    assert 0 <= out["false_alarm_rate"] <= 1 and out["missed_detection_rate"] == pytest.approx(1 - out["power"])
    if method in ("crc", "ucb"):   # the exact all-split mean of the controlled risk comes with it
        exact = out["exact_mean_over_all_splits"]["false_alarm_rate"]
        assert 0 <= exact <= (0.2 if method == "crc" else 1)
    else:
        assert "exact_mean_over_all_splits" not in out


def test_monitor_eval_cli_errors(tmp_path, capsys):
    from agentguard.cli import main
    p = _toy_file(tmp_path)
    for args, msg in [(["--alpha", "0"], "alpha"), (["--method", "grid"], "method"),
                      (["--method", "evaluator-pac", "--risk", "missed_detection"], "e-valuator"),
                      (["--risk", "recall"], "risk")]:
        with pytest.raises(SystemExit) as ei:
            main(["monitor-eval", str(p), *args])
        assert ei.value.code == 2
        assert "error:" in capsys.readouterr().err
    with pytest.raises(SystemExit) as ei:
        main(["monitor-eval", str(tmp_path / "missing.csv.gz")])
    assert ei.value.code == 2
    capsys.readouterr()
    empty = tmp_path / "empty.csv"
    empty.write_text("uq_problem_idx,num_steps,judge_probability,solved\n")
    with pytest.raises(SystemExit) as ei:
        main(["monitor-eval", str(empty)])
    err = capsys.readouterr().err
    assert ei.value.code == 2 and "empty.csv" in err and "no rows" in err and err.count("\n") == 1
    # red team: rows a signals file must not hold (one line each, the sequence named as in the file)
    head = "uq_problem_idx,num_steps,judge_probability,solved\n"
    for body, msg in [("1,1,0.4,1\n1,1,0.4,1\n", "sequence 1 has step 1 twice"),
                      ("1,1,0.4,1\n1,3,0.4,1\n", "sequence 1 has step 3 after step 1"),
                      ("1,1,abc,1\n", "sequence 1 has a non-numeric score"),
                      ("1,x,0.4,1\n", "step indices must be integers")]:
        bad = tmp_path / "bad.csv"
        bad.write_text(head + body)
        with pytest.raises(SystemExit) as ei:
            main(["monitor-eval", str(bad)])
        err = capsys.readouterr().err
        assert ei.value.code == 2 and msg in err and err.count("\n") == 1 and "np." not in err, err
    # 20 % of 60 sequences -> about 7 safe calibration sequences: too few for alpha = 0.05 (CRC needs 19)
    small = _toy_file(tmp_path, n=60, seed=1)
    with pytest.raises(SystemExit) as ei:
        main(["monitor-eval", str(small), "--alpha", "0.05"])
    assert ei.value.code == 2 and "too few calibration sequences" in capsys.readouterr().err
    try:
        main(["monitor-eval", str(small), "--alpha", "0.05", "--on-infeasible", "trivial", "--json"])
    except SystemExit as exc:
        assert exc.code in (0, None)
    out = json.loads(capsys.readouterr().out)
    assert out["trivial_splits"] == 10 and out["false_alarm_rate"] == 0.0
