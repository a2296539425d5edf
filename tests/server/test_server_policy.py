"""Verified-policy guards in the service: declarative field rules, digest pinning, fail-closed reads."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("agentguard.config")

from agentguard.config import load_stack  # noqa: E402
from agentguard.core import Context, Decision, ToolCall  # noqa: E402
from agentguard.core.errors import InputError, PolicyError  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "src" / "agentguard" / "server" / "examples" / "mind2web_sc.toml"
ADULT = {"age": 30, "domestic": True, "dr_license": True, "vaccine": True, "membership": True}


def _check(g, tool, **user):
    return g.check(Context(metadata={"user_info": {**ADULT, **user}}), ToolCall(tool, {}))


def test_mind2web_rules_through_the_verified_policy():
    g = load_stack(EXAMPLE)
    assert _check(g, "rent_car").decision is Decision.ALLOW
    v = _check(g, "rent_car", dr_license=False)
    assert v.decision is Decision.REJECT and "driver's license" in v.reason
    assert _check(g, "book_hotel", age=17).decision is Decision.REJECT
    assert _check(g, "book_hotel", age=18).decision is Decision.ALLOW
    assert _check(g, "apply_job", age=14).decision is Decision.REJECT
    assert _check(g, "apply_job", age=15).decision is Decision.ALLOW
    assert _check(g, "buy_product", membership=False).decision is Decision.REJECT
    assert _check(g, "book_flight", vaccine=False).decision is Decision.REJECT
    assert _check(g, "search_movies", domestic=False).decision is Decision.REJECT
    # A tool the map does not name is refused (default deny, issue 13); one listed as OTHER is allowed.
    assert _check(g, "send_email", dr_license=False, vaccine=False, membership=False).decision is Decision.REJECT
    assert _check(g, "search", dr_license=False, vaccine=False, membership=False).decision is Decision.ALLOW


def test_missing_or_ill_typed_facts_fail_closed():
    g = load_stack(EXAMPLE)
    v = g.check(Context(metadata={}), ToolCall("rent_car", {}))
    assert v.decision is Decision.REJECT and "no value in the request" in v.reason
    assert _check(g, "rent_car", age="thirty").decision is Decision.REJECT  # not an int
    assert _check(g, "rent_car", age=500).decision is Decision.REJECT  # outside the precondition
    assert _check(g, "rent_car", dr_license="yes").decision is Decision.REJECT


def verified_policy_guard(**params):
    from agentguard.policies import ToolCallGuard

    return ToolCallGuard.from_config(params)


def test_digest_pinning_and_schema_checks(tmp_path):
    from agentguard.policies import library_path, load_policy

    fields = {"category": {"from": "tool", "map": {"rent_car": 1}, "default": 0},
              **{k: {"from": "metadata", "key": f"user_info.{k}"} for k in ADULT}}
    digest = load_policy(library_path("mind2web_sc")).digest
    assert verified_policy_guard(policy="mind2web_sc", fields=fields, verified_digest=digest)
    with pytest.raises(PolicyError, match="refusing to run unverified code"):
        verified_policy_guard(policy="mind2web_sc", fields=fields, verified_digest="000000000000")
    changed = tmp_path / "m2w.py"
    changed.write_text(library_path("mind2web_sc").read_text().replace("age < 18", "age < 16"))
    with pytest.raises(PolicyError, match="unverified"):
        verified_policy_guard(policy=str(changed), fields=fields, verified_digest=digest)
    with pytest.raises(InputError, match="missing \\['age'\\]"):
        verified_policy_guard(policy="mind2web_sc", fields={k: v for k, v in fields.items() if k != "age"})
    with pytest.raises(InputError, match="'from' must be one of"):
        verified_policy_guard(policy="mind2web_sc", fields={**fields, "age": {"from": "eval", "key": "x"}})


def test_service_with_the_verified_policy(tmp_path):
    from fastapi.testclient import TestClient

    from agentguard.server.app import create_app
    from agentguard.server.settings import ServerSettings

    s = ServerSettings(token="policy-token-123", state_dir=str(tmp_path), tool_guards=str(EXAMPLE))
    h = {"Authorization": "Bearer policy-token-123"}
    with TestClient(create_app(s)) as c:
        r = c.post("/v1/check", headers=h, json={"run_id": "u1", "tool_call": {"name": "book_flight"},
                                                 "metadata": {"user_info": {**ADULT, "vaccine": False}}})
        assert r.json()["decision"] == "REJECT" and "Unvaccinated" in r.json()["reason"]
        assert r.json()["guard"] == "policy:mind2web-sc@2"  # the shipped policy's version (issue 26: v2)
        r = c.post("/v1/check", headers=h, json={"run_id": "u1", "tool_call": {"name": "book_flight"},
                                                 "metadata": {"user_info": ADULT}})
        assert r.json()["decision"] == "ALLOW"
        assert "mind2web_sc.toml" in c.get("/v1/calibration", headers=h).json()["description"]
