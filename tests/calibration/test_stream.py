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
