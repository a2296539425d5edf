"""``agentguard.cli.options``: the progress ticker long commands print on stderr (``agentguard learn``)."""

from __future__ import annotations

import functools
import time

from agentguard.cli import main, options

REPO = __import__("pathlib").Path(__file__).resolve().parents[2]


def test_the_ticker_reports_while_the_work_runs_and_stops_with_it(capsys):
    n = [0]
    with options.ticker("working", lambda: f"{n[0]} done", every_s=0.02):
        for _ in range(10):
            n[0] += 1
            time.sleep(0.02)
    cap = capsys.readouterr()
    lines = cap.err.splitlines()
    assert cap.out == "" and lines and all(line.startswith("working: ") and line.endswith(" s)") for line in lines)
    time.sleep(0.1)
    assert capsys.readouterr().err == ""  # nothing after the block


def test_the_ticker_is_silent_when_quiet_or_when_the_work_is_quick(capsys):
    with options.ticker("working", lambda: "x", every_s=0.01, quiet=True):
        time.sleep(0.1)
    with options.ticker("working", lambda: "x", every_s=5.0):
        pass
    assert capsys.readouterr().err == ""


def test_a_count_that_fails_skips_a_tick_not_the_work(capsys):
    with options.ticker("working", lambda: 1 / 0, every_s=0.01):
        time.sleep(0.05)
    assert capsys.readouterr().err == ""


def test_learn_reports_progress_on_stderr_and_keeps_stdout_for_the_result(capsys, monkeypatch, tmp_path):
    import agentguard.cli.predictive as predictive

    from agentguard.predictive.learn import DTMCLearner

    monkeypatch.setattr(predictive, "ticker", functools.partial(options.ticker, every_s=0.01))
    add_file = DTMCLearner.add_file

    def slow_add_file(self, *args, **kwargs):  # the real learning, made long enough for a tick
        time.sleep(0.1)
        return add_file(self, *args, **kwargs)

    monkeypatch.setattr(DTMCLearner, "add_file", slow_add_file)
    main(["learn", str(REPO / "examples/microwave_traces.jsonl"), "--spec", str(REPO / "examples/microwave_spec.yaml"),
          "--out", str(tmp_path / "m.json")])
    cap = capsys.readouterr()
    assert "learned" in cap.out and "traces counted so far" not in cap.out
    assert "learning from" in cap.err and "traces counted so far" in cap.err
