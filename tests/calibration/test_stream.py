"""The stream cutter (calibration.stream): monitor_tokens stops at the first low token."""

from __future__ import annotations

from agentguard.calibration import ThresholdMonitor, monitor_tokens


def test_monitor_tokens_stops_at_the_first_low_token():
    pulled = []

    def gen():
        for t in [("x", -0.1), ("y\n", -0.2), ("z", -0.1), ("BAD", -5.0), ("w", -0.1), ("\n", -0.1)]:
            pulled.append(t[0])
            yield t

    mt = monitor_tokens(gen(), ThresholdMonitor(-1.0))
    assert list(mt) == ["x", "y\n", "z", "BAD"]
    assert pulled == ["x", "y\n", "z", "BAD"]               # generation stopped at the alarm token
    assert mt.cut and mt.verdict.numbers["step"] == 2 and mt.step_scores == [-0.2, -5.0]
    # the same decision as waiting for the end of the step
    late = monitor_tokens(iter([("x", -0.1), ("y\n", -0.2), ("z", -0.1), ("BAD", -5.0), ("w", -0.1), ("\n", -0.1)]),
                          ThresholdMonitor(-1.0), early=False)
    assert list(late)[-1] == "\n" and late.verdict.numbers["step"] == 2 and late.verdict.numbers["score"] == -5.0


# --- red team: chat-completions chunks whose text comes without (readable) log-probs -----------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from agentguard.calibration import ChunkSteps, MonitoredStream, openai_tokens  # noqa: E402


def _chunk(text, logprobs="ok"):
    """A chunk of ``text``; ``logprobs``: "ok" (one token at -0.1), "absent" (no logprobs key),
    "null" (the token's logprob is null) or a float (the token's logprob)."""
    ch = {"index": 0, "delta": {"content": text}}
    if logprobs == "ok":
        ch["logprobs"] = {"content": [{"token": text, "logprob": -0.1}]}
    elif logprobs == "null":
        ch["logprobs"] = {"content": [{"token": text, "logprob": None}]}
    elif logprobs != "absent":
        ch["logprobs"] = {"content": [{"token": text, "logprob": logprobs}]}
    return {"choices": [ch]}


def test_a_step_with_an_unscored_piece_has_no_min_logprob_and_is_cut():
    """Attack: the improbable part of a line arrives in a chunk without log-probs (or with a null
    log-prob). Before: the step's min_logprob was the minimum over the other chunks (-0.1) and the
    line was released. Now: the step has no min_logprob, the monitor cannot read it, the stream is cut."""
    for bad in ("absent", "null"):
        chunks = [_chunk("fine "), _chunk("improbable", bad), _chunk(" line\n"), _chunk("next\n")]
        s = MonitoredStream(chunks, ThresholdMonitor(-1.0, signal="min_logprob"), ChunkSteps("line"))
        assert list(s) == [] and s.cut, bad
        s = MonitoredStream(chunks, ThresholdMonitor(-1.0, signal="min_logprob"), ChunkSteps("chunk"))
        assert list(s) == ["fine "] and s.cut, bad
    # scored throughout: released as before
    ok = [_chunk("fine "), _chunk("line\n")]
    s = MonitoredStream(ok, ThresholdMonitor(-1.0, signal="min_logprob"), ChunkSteps("line"))
    assert list(s) == ["fine line\n"] and not s.cut


def test_a_null_token_logprob_cuts_the_token_stream():
    class Client:
        def stream(self, messages, **kw):
            return iter([_chunk("a"), _chunk("b", "null"), _chunk("c\n")])

    mt = monitor_tokens(openai_tokens(Client(), [{"role": "user", "content": "x"}]), ThresholdMonitor(-1.0))
    assert list(mt) == ["a"] and mt.cut  # the null log-prob is NaN: the step is unreadable


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.text("ab\n", min_size=1, max_size=4), st.sampled_from(["ok", "ok", "absent", "null"])),
                min_size=1, max_size=8),
       st.sampled_from(["line", "chunk", "b"]))
def test_no_released_text_comes_from_an_unscored_chunk(pieces, mode):
    """Property: whatever the chunking, every released character came from a chunk whose text carried
    readable log-probs (all at -0.1, above the threshold, so only an unscored piece can cut)."""
    chunks = [_chunk(t, lp) for t, lp in pieces]
    readable = "".join(("1" if lp == "ok" else "0") * len(t) for t, lp in pieces)
    s = MonitoredStream(chunks, ThresholdMonitor(-1.0, signal="min_logprob"), ChunkSteps(mode))
    out = "".join(s)
    assert "0" not in readable[:len(out)]
    assert s.cut == ("0" in readable)


def test_the_scorer_sets_the_signal_the_guard_reads_and_its_unreadable_values_cut():
    # session 26: the stream's scorer wrote signals["score"] whatever the guard read; a monitor
    # reading "verifier" then decided on the step's own (safe-looking) value and the scorer's 0.1
    # was ignored: the step was released
    from agentguard.core.types import Step

    mon = ThresholdMonitor(0.5, signal="verifier")
    st = MonitoredStream([Step(output="x", signals={"verifier": 0.9})], mon, scorer=lambda t, c: 0.1)
    assert list(st) == [] and st.cut and st.verdict.numbers["score"] == 0.1
    for bad in ("0.9", float("nan"), float("inf"), True):
        st = MonitoredStream([Step(output="x", signals={"score": 0.9})], ThresholdMonitor(0.5),
                             scorer=lambda t, c, b=bad: b)
        assert list(st) == [] and st.cut and st.verdict.blocks
