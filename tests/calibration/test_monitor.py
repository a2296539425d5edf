"""The one Eq. 1 guard (ThresholdMonitor): its documented verdicts, per-run memory, configuration,
copies; the one stream cutter (MonitoredStream) in both iterations; Sequences.from_traces."""

from __future__ import annotations

import asyncio
import copy
import json
import math
import pickle

import numpy as np
import pytest

from agentguard import Context, Decision, GuardStack, InputError, Step, ToolCall, Trace
from agentguard.calibration import (
    EValuator,
    MonitoredStream,
    Sequences,
    ThresholdMonitor,
    stop_at_alarm,
)


def cos_score(text: str, context: object) -> float:
    """A scorer a configuration can name: it declares it returns a float (core.loading.SCORER)."""
    return math.cos(len(text))


def _fresh(mon, run="r"):
    mon.end_run(run)
    return Context(run_id=run)


# ------------------------------------------------------------------ the documented verdicts (issue 12)
@pytest.mark.parametrize("decision", ["HALT", "REJECT"])
def test_documented_verdicts_of_the_one_eq1_guard(decision):
    mon = ThresholdMonitor(0.5, decision=decision, name="m")
    alarm = Decision.parse(decision)
    # a valid score, above and below the threshold (a Step, a mapping, a number)
    v = mon.check(_fresh(mon), Step(signals={"score": 0.7}))
    assert v.decision is Decision.ALLOW and v.numbers == {"step": 1.0, "score": 0.7, "threshold": 0.5}
    assert mon.check(_fresh(mon), {"score": 0.5}).decision is Decision.ALLOW        # not strictly below
    v = mon.check(_fresh(mon), 0.2)
    assert v.decision is alarm and v.numbers == {"step": 1.0, "score": 0.2, "threshold": 0.5}
    assert "fell below the calibrated threshold" in v.reason
    # unreadable input fails closed (the alarm decision, never ALLOW), and check never raises
    for proposal, words in [(ToolCall("delete_file", {"path": "/"}), "must be a number"),
                            (Step(signals={"other": 0.9}), "no signal 'score'"),
                            (Step(signals={"score": math.nan}), "NaN"),
                            ({"score": math.nan}, "NaN"),
                            ({"score": "high"}, "must be a number"),
                            (True, "must be a number"),
                            ("0.9", "must be a number")]:
        v = mon.check(_fresh(mon), proposal)
        assert v.decision is alarm and words in v.reason, (proposal, v)
        assert v.numbers["step"] == 1.0 and v.details["error"] == "InputError"
    # ... even for the flag-nothing monitor (threshold -inf)
    never = ThresholdMonitor(-math.inf)
    assert never.check(Context(), 1e-300).decision is Decision.ALLOW
    assert never.check(Context(), ToolCall("x")).decision is Decision.HALT


def test_alarms_latch_per_run_and_unreadable_input_counts_as_a_step():
    mon = ThresholdMonitor(0.5)
    a = Context(run_id="a")
    assert mon.check(a, 0.9).allowed
    v = mon.check(a, Step(signals={}))
    assert v.decision is Decision.HALT and v.numbers["step"] == 2
    assert mon.check(a, 0.99) is v                                   # latched
    assert mon.check(Context(run_id="b"), 0.99).allowed              # other runs are independent
    assert mon.acheck is not None and asyncio.run(mon.acheck(a, 0.99)) is v
    mon.end_run("a")
    assert mon.check(a, 0.99).allowed


def test_scorer_reads_the_step_text_and_fails_closed():
    seen = []

    def scorer(text, ctx):
        seen.append((text, ctx.run_id))
        if text == "boom":
            raise RuntimeError("PRM offline")
        return 0.1 if "rm -rf" in text else 0.9

    mon = ThresholdMonitor(0.5, scorer=scorer)
    assert mon.check(Context(run_id="x"), Step(output="ls")).allowed
    assert mon.check(Context(run_id="x"), "rm -rf /").decision is Decision.HALT
    assert seen == [("ls", "x"), ("rm -rf /", "x")]
    v = mon.check(Context(run_id="y"), Step(output="boom"))
    assert v.decision is Decision.HALT and "PRM offline" in v.reason
    assert ThresholdMonitor(0.5, scorer=lambda t, c: math.nan).check(Context(), Step(output="a")).decision \
        is Decision.HALT
    path = ThresholdMonitor(0.5, scorer=f"{__name__}:cos_score")     # "module:function" (configuration)
    assert path.scorer is cos_score                                  # (declared -> float; math:cos refused since s22)
    with pytest.raises(InputError, match="scorer"):
        ThresholdMonitor(0.5, scorer="no_such_module_xyz:f")
    with pytest.raises(InputError, match="scorer"):
        ThresholdMonitor(0.5, scorer=3)


def test_update_is_the_numeric_kernel():
    mon = ThresholdMonitor(0.5)
    assert mon.update(0.9).allowed and mon.step == 1 and not mon.alarmed
    with pytest.raises(InputError, match="NaN"):
        mon.update(math.nan)
    with pytest.raises(InputError, match="number"):
        mon.update(ToolCall("x"))
    for bad in ("high", True, math.nan):
        with pytest.raises(InputError, match="threshold"):
            ThresholdMonitor(bad)


def test_per_run_memory_is_bounded_and_copies_work():
    mon = ThresholdMonitor(0.5, max_runs=2)
    for r in ("a", "b", "c"):
        mon.check(Context(run_id=r), 0.1)
    assert len(mon._runs) == 2 and "a" not in mon._runs
    for twin in (copy.deepcopy(mon), pickle.loads(pickle.dumps(mon))):
        assert twin.check(Context(run_id="c"), 0.9).decision is Decision.HALT      # the copy keeps its runs
        assert twin.check(Context(run_id="z"), 0.9).allowed
        twin.reset()
        assert len(twin._runs) == 0 and len(mon._runs) == 2                        # independent of the original
    assert GuardStack([mon]).check(Context(run_id="q"), {"score": 0.1}).decision is Decision.HALT


def test_from_config_takes_the_service_and_registry_keys(tmp_path):
    m = ThresholdMonitor.from_config({"threshold": 0.4, "signal": "verifier", "decision": "REJECT", "name": "v"})
    assert (m.threshold, m.signal, m.decision, m.name) == (0.4, "verifier", Decision.REJECT, "v")
    cal = tmp_path / "cal.json"
    cal.write_text(json.dumps({"threshold": 0.3, "alpha": 0.1, "method": "crc", "curves": {"alpha": [0.1]}}))
    m = ThresholdMonitor.from_config({"calibration": str(cal)})
    assert m.threshold == 0.3 and m.info == {"alpha": 0.1, "method": "crc"} and m.curves == {"alpha": [0.1]}
    assert m.check(Context(), 0.2).details == {"alpha": 0.1, "method": "crc"}
    assert ThresholdMonitor.from_config({"calibration": str(cal), "threshold": 0.9}).threshold == 0.9
    s = ThresholdMonitor.from_config({"threshold": 0.5, "scorer": f"{__name__}:cos_score", "name": "score-monitor"})
    assert s.scorer is cos_score
    assert ThresholdMonitor.from_config({"threshold": "-inf"}).threshold == -math.inf
    with pytest.raises(InputError, match="unknown key"):
        ThresholdMonitor.from_config({"threshold": 0.5, "treshold": 1})
    with pytest.raises(InputError, match="needs 'threshold' or 'calibration'"):
        ThresholdMonitor.from_config({})
    (tmp_path / "bad.json").write_text("[1]")
    with pytest.raises(InputError, match="expected an object"):
        ThresholdMonitor.from_config({"calibration": str(tmp_path / "bad.json")})


def test_the_config_registry_builds_the_same_monitor():
    from agentguard.config import build_stack

    stack = build_stack({"guards": [{"type": "threshold-monitor", "threshold": 0.5, "signal": "p"}]})
    assert stack.check(Context(), {"p": 0.9}).allowed
    assert stack.check(Context(run_id="2"), ToolCall("x")).decision is Decision.HALT


# ------------------------------------------------------------------ the e-valuator guard, same contract
def test_e_valuator_monitor_is_a_guard_with_the_same_contract():
    rng = np.random.default_rng(0)
    labels = (rng.uniform(size=200) < 0.5).astype(int)
    seqs = [list(rng.normal(0.7 if y else 0.3, 0.1, size=4)) for y in labels]
    e = EValuator("anytime", alpha=0.2).calibrate(Sequences.from_lists(seqs, labels))
    mon = e.monitor()
    assert mon.check(Context(run_id="a"), Step(signals={"score": 0.9})).allowed
    assert mon.check(Context(run_id="b"), ToolCall("x")).decision is Decision.HALT
    v = None
    for s in [0.1, 0.05, 0.0, 0.0]:
        v = mon.check(Context(run_id="c"), s)
    assert v.decision is Decision.HALT and "e-value" in v.reason
    mon.end_run("c")
    assert mon.check(Context(run_id="c"), 0.9).allowed


# ------------------------------------------------------------------ the one stream cutter
def test_monitored_stream_sync_and_async_cut_at_the_alarm_and_close():
    closed = []

    def gen():
        try:
            yield from [0.9, 0.8, 0.3, 0.95]
        finally:
            closed.append("sync")

    mon = ThresholdMonitor(0.5)
    s = MonitoredStream(gen(), mon)
    assert list(s) == [0.9, 0.8] and s.cut and s.alarm_step == 2 and closed == ["sync"]
    assert len(mon._runs) == 0                                       # the stream's run was ended

    async def agen():
        try:
            for x in [0.9, 0.3, 0.95]:
                yield x
        finally:
            closed.append("async")

    async def consume(src, **kw):
        st = MonitoredStream(src, mon, **kw)
        return [x async for x in st], st

    out, st = asyncio.run(consume(agen(), include_alarm_item=True))
    assert out == [0.9, 0.3] and st.cut and closed == ["sync", "async"]
    out, st = asyncio.run(consume(iter([0.9, 0.7])))                  # a plain iterable, async for
    assert out == [0.9, 0.7] and not st.cut and st.steps == 2


def test_stream_of_unreadable_items_or_failing_score_fn_fails_closed():
    assert list(stop_at_alarm(iter([0.9, math.nan, 0.9]), ThresholdMonitor(0.5), include_alarm_item=False)) == [0.9]

    def bad(x):
        raise ValueError("cannot score")

    st = stop_at_alarm(iter([1, 2]), ThresholdMonitor(0.5), bad)
    assert list(st) == [] and st.cut and "cannot score" in st.verdict.reason


# ------------------------------------------------------------------ calibration from recorded traces
def test_sequences_from_traces():
    traces = [
        Trace([Step(signals={"score": 0.9}), Step(signals={}), Step(signals={"score": 0.4})], {"unsafe": False}, "a"),
        Trace([Step(signals={"score": 0.2})], {"unsafe": True}, "b"),
        Trace([Step(signals={"score": 0.5})], {}, "no-label"),
        Trace([Step(signals={"other": 0.5})], {"unsafe": False}, "no-signal"),
    ]
    data = Sequences.from_traces(traces, signal="score", label="unsafe")
    assert data.ids.tolist() == ["a", "b"] and data.labels.tolist() == [1, 0]
    assert data.sequence(0).tolist() == [0.9, 0.4] and data.sequence(1).tolist() == [0.2]
    flipped = Sequences.from_traces(traces, label="unsafe", unsafe_when=False)
    assert flipped.labels.tolist() == [0, 1]
    with pytest.raises(InputError, match="no trace has"):
        Sequences.from_traces(traces, signal="missing")


# --- red team: scores that are not numbers though float() reads them ----------------------------------
@pytest.mark.parametrize("score", ["0.99", " 1e3 ", "Infinity", b"0.9", True, 10**400, None, [0.9], {"score": 1}])
def test_text_and_other_non_numbers_are_unreadable_whatever_the_threshold(score):
    """Attack: a client sends the score as text ("0.99"). Before: float() read it and the step was
    ALLOWed above the threshold (10**400 raised OverflowError out of update). Now: unreadable, the
    alarm (check), InputError (update); a flag-nothing threshold (-inf) included."""
    for thr in (0.5, -math.inf):
        mon = ThresholdMonitor(thr)
        assert mon.check(Context(run_id="r"), {"score": score}).blocks
        assert mon.check(Context(run_id="s"), Step(signals={"score": score})).blocks
        with pytest.raises(InputError):
            ThresholdMonitor(thr).update(score)
    assert not ThresholdMonitor(0.5).check(Context(run_id="r"), {"score": np.float32(0.9)}).blocks


def test_vectorised_eq1_alarms_on_a_nan_score_like_the_stream():
    # session 26: first_alarm_steps compared with NaN and reported "no alarm"; the streaming monitor
    # alarms on a NaN score (unreadable input), so the vectorised rule does too
    import numpy as np

    from agentguard.calibration.monitor import first_alarm_steps

    s, st, ln = np.array([0.1, 0.9, 0.2]), np.array([0, 2]), np.array([2, 1])
    assert first_alarm_steps(s, st, ln, 0.5).tolist() == [1, 1]
    with pytest.raises(InputError):
        first_alarm_steps(s, st, ln, float("nan"))
    nan_scores = np.array([0.9, np.nan, 0.7])
    assert first_alarm_steps(nan_scores, st, ln, 0.5).tolist() == [2, 0]
    mon = ThresholdMonitor(0.5)
    assert [mon.check(Context(run_id="r"), x).decision for x in (0.9, float("nan"))][-1] != Decision.ALLOW
