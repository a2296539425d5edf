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


class _Tty:
    """A stderr that says it is a terminal (what ``progress`` checks) and keeps what is written."""

    def __init__(self, tty: bool = True) -> None:
        self.text, self.tty = "", tty

    def isatty(self) -> bool:
        return self.tty

    def write(self, s: str) -> None:
        self.text += s

    def flush(self) -> None:
        pass


def test_progress_shows_on_a_terminal_on_one_line_and_erases_it_at_the_end(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    tty = _Tty()
    with options.progress(stream=tty) as show:
        assert show is not None
        show("split 1/2 done")
        show("split 2/2\ndone")
    assert tty.text == "\r\x1b[2Ksplit 1/2 done\r\x1b[2Ksplit 2/2 done\r\x1b[2K" and "\n" not in tty.text


def test_progress_is_none_off_a_terminal_under_ci_or_when_quiet(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    for stream, quiet in ((_Tty(tty=False), False), (_Tty(), True)):
        with options.progress(quiet=quiet, stream=stream) as show:
            assert show is None
        assert stream.text == ""
    monkeypatch.setenv("CI", "true")
    with options.progress(stream=_Tty()) as show:
        assert show is None


def test_monitor_eval_and_policy_latency_report_progress_on_a_terminal(monkeypatch, capsys, tmp_path):
    """The long commands pass the callback down: the calibration protocol per split, the latency bench per
    policy (their library functions take ``progress``; the command gives it only on a terminal)."""
    seen: list[str] = []

    import contextlib

    @contextlib.contextmanager
    def fake_progress(quiet: bool = False, stream=None):
        yield None if quiet else seen.append

    from agentguard.bench import policy_latency

    monkeypatch.setattr(options, "progress", fake_progress)
    monkeypatch.setattr(policy_latency, "_stats", lambda ns: {})
    first = policy_latency._cases()[:1]  # one policy is enough to see the callback (and quick)
    monkeypatch.setattr(policy_latency, "_cases", lambda: first)
    main(["bench", "policy-latency", "--n", "1"])
    assert seen == [f"timing policy 1/1: {first[0][0]} (1 checks)"]
    seen.clear()
    main(["bench", "policy-latency", "--n", "1", "--json"])
    assert seen == []
    from .test_calibration import _toy_file

    main(["monitor-eval", str(_toy_file(tmp_path)), "--splits", "2", "--method", "crc"])
    assert seen == ["split 1/2 done", "split 2/2 done"]
