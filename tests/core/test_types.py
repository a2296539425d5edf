"""The core types (core.types): Decision order and parsing, ToolCall validation, traces round-trip."""

import pytest

from agentguard import Decision, InputError, Step, ToolCall, Trace, read_traces, write_traces


def test_decision_order_and_parse():
    assert Decision.ALLOW < Decision.MODIFY < Decision.RECOVER < Decision.REJECT < Decision.ESCALATE < Decision.HALT
    assert Decision.parse("halt") is Decision.HALT
    with pytest.raises(InputError, match="unknown decision"):
        Decision.parse("maybe")


def test_toolcall_validation():
    with pytest.raises(InputError):
        ToolCall("")
    with pytest.raises(InputError):
        ToolCall("x", arguments=[1, 2])


def test_trace_roundtrip(tmp_path):
    t = Trace([Step(state={"a": 1}, action=ToolCall("f", {"x": 1})), Step(state={"a": 2})], {"unsafe": True})
    p = tmp_path / "t.jsonl"
    write_traces(str(p), [t])
    (back,) = read_traces(str(p))
    assert back.states == [{"a": 1}, {"a": 2}] and back.labels == {"unsafe": True}
    assert back.steps[0].action == ToolCall("f", {"x": 1})
    empty = tmp_path / "e.jsonl"
    empty.write_text("")
    with pytest.raises(InputError, match="empty"):
        read_traces(str(empty))
    bad = tmp_path / "b.jsonl"
    bad.write_text("{not json\n")
    with pytest.raises(InputError, match="b.jsonl:1"):
        read_traces(str(bad))


@pytest.mark.parametrize("bad", [True, False, 1.0, None, "maybe", 9, -1, b"ALLOW"])
def test_a_malformed_decision_fails_where_the_verdict_is_made(bad: object) -> None:
    from agentguard.core import BaseGuard, Context, Pipeline, Verdict

    with pytest.raises(InputError):
        Verdict(bad)  # type: ignore[arg-type]

    class G(BaseGuard):
        name = "g"

        def check(self, context: Context, proposal: object) -> Verdict:
            return Verdict(bad, "x")  # type: ignore[arg-type]

    out = Pipeline(G()).decide("r", ToolCall("t", {}))
    assert not out.execute and str(out.verdict).startswith("HALT")
    assert Verdict("allow").decision is Decision.ALLOW and Verdict(5).decision is Decision.HALT  # type: ignore[arg-type]
