"""One audit record type (core.audit), shared by the policies and the service."""


def test_one_audit_record_type():
    import agentguard.policies.audit as pa
    from agentguard.core import AuditRecord

    assert pa.AuditRecord is AuditRecord
    r = AuditRecord(time=1.0, run_id="r", decision="ALLOW", reason="ok", numbers={"p": 0.5})
    assert r.to_dict()["numbers"] == {"p": 0.5} and r.kind == "" and r.policy_id == ""
