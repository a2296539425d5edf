"""One audit record type (core.audit), shared by the policies and the service."""


def test_one_audit_record_type():
    import agentguard.policies.audit as pa
    from agentguard.core import AuditRecord

    assert pa.AuditRecord is AuditRecord
    r = AuditRecord(time=1.0, run_id="r", decision="ALLOW", reason="ok", numbers={"p": 0.5})
    assert r.to_dict()["numbers"] == {"p": 0.5} and r.kind == "" and r.policy_id == ""


def test_a_jsonl_log_reads_back_and_a_file_that_is_not_one_is_refused_by_line(tmp_path):
    """``JsonlAuditSink.read`` reads what the sink wrote; a JSON file that is not an audit log (an object without the
    record's fields, a list, text) is an InputError naming its line, never a log with no decisions (session 22:
    ``report shadow`` printed "0 decisions" for any JSON object)."""
    import pytest
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from agentguard.core import AuditRecord, InputError, JsonlAuditSink

    path = tmp_path / "audit.jsonl"
    sink = JsonlAuditSink(path)
    sink.write(AuditRecord(time=1.0, run_id="r", decision="ALLOW", reason="ok", numbers={"p": float("nan")}))
    sink.close()
    assert [r["run_id"] for r in JsonlAuditSink.read(path)] == ["r"]
    for n, text in enumerate(['{"a": 1}', "[1, 2]", "not json", '{"time": 1, "run_id": "r", "decision": "ALLOW"}']):
        bad = tmp_path / f"bad{n}.jsonl"
        bad.write_text(path.read_text() + "\n" + text + "\n")
        with pytest.raises(InputError, match="line 3"):
            JsonlAuditSink.read(bad)

    @settings(max_examples=40, deadline=None)
    @given(st.dictionaries(st.sampled_from(["time", "run_id", "decision", "reason", "guard", "x"]), st.integers()))
    def lines(obj: dict) -> None:
        one = tmp_path / "one.jsonl"
        one.write_text(__import__("json").dumps(obj) + "\n")
        if {"time", "run_id", "decision", "reason"} <= set(obj):
            assert JsonlAuditSink.read(one) == [obj]
        else:
            with pytest.raises(InputError):
                JsonlAuditSink.read(one)

    lines()
