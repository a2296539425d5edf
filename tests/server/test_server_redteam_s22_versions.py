"""Session-22 red team: replicas running the same guard files from different folders agree on the guard version
(through the ASGI apps, one store: SQLite and PostgreSQL).

Hole found (fixed, availability across replicas): the guard version hashed the files' absolute paths with their
contents, so two replicas with identical guard files in different folders (another checkout; the built-in guard
file inside another virtualenv) had two versions. An ESCALATE decided on replica A and answered on replica B was
refused with 409 ("the guards changed since ... was escalated"), and an idempotent retry that reached B of an ALLOW
decided on A was 409 too. Fix: :meth:`agentguard.server.guards.GuardSource._version_of` hashes each file's place in
the list, its name and its content, not its folder; a change of content is still a new version.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from svc_roles import AGENT, APPROVER, credentials_file  # noqa: E402

RULES = '[[guards]]\ntype = "tool-rules"\nallow = ["*"]\nescalate = ["transfer_*"]\n'
CALL = {"name": "transfer_funds", "arguments": {"amount": 5}}


def _replica(folder, store_url, rules=RULES):
    from agentguard.server.app import create_app
    from agentguard.server.settings import ServerSettings

    folder.mkdir()
    (folder / "tools.toml").write_text(rules)
    return create_app(ServerSettings(state_dir=str(folder), db_url=store_url, tool_guards=str(folder / "tools.toml"),
                                     credentials_file=str(credentials_file(folder, (AGENT, APPROVER)))))


def test_an_escalation_decided_on_one_replica_is_answered_on_another(tmp_path, store_url):
    a, b = _replica(tmp_path / "checkout-a", store_url), _replica(tmp_path / "elsewhere-b", store_url)
    with TestClient(a) as ca, TestClient(b) as cb:
        r = ca.post("/v1/check", headers=AGENT.headers, json={"run_id": "x1", "tool_call": CALL}).json()
        assert r["decision"] == "ESCALATE", r
        ans = cb.post("/v1/approvals", headers=APPROVER.headers,
                      json={"decision_id": r["decision_id"], "run_id": "x1", "tool_call": CALL, "approved": True})
        assert ans.status_code == 200 and ans.json()["decision"] == "ALLOW", ans.text  # was 409


def test_an_idempotent_retry_on_another_replica_is_replayed(tmp_path, store_url):
    a, b = _replica(tmp_path / "a", store_url), _replica(tmp_path / "b", store_url)
    body = {"run_id": "k1", "tool_call": {"name": "read", "arguments": {}}}
    keyed = {**AGENT.headers, "Idempotency-Key": "retry-1"}
    with TestClient(a) as ca, TestClient(b) as cb:
        first = ca.post("/v1/check", headers=keyed, json=body)
        again = cb.post("/v1/check", headers=keyed, json=body)
        assert again.status_code == 200 and again.headers.get("idempotent-replayed") == "true", again.text
        assert again.json()["decision_id"] == first.json()["decision_id"]


def test_regression_other_contents_are_still_another_version(tmp_path, store_url):
    a = _replica(tmp_path / "a", store_url)
    b = _replica(tmp_path / "b", store_url, RULES.replace('allow = ["*"]', 'allow = ["*"]\ndeny = ["rm_*"]'))
    with TestClient(a) as ca, TestClient(b) as cb:
        r = ca.post("/v1/check", headers=AGENT.headers, json={"run_id": "x2", "tool_call": CALL}).json()
        ans = cb.post("/v1/approvals", headers=APPROVER.headers,
                      json={"decision_id": r["decision_id"], "run_id": "x2", "tool_call": CALL, "approved": True})
        assert ans.status_code == 409 and "guards changed" in ans.json()["error"], ans.text


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(c1=st.lists(st.binary(max_size=40), min_size=1, max_size=3), c2=st.lists(st.binary(max_size=40), min_size=1, max_size=3),
       d1=st.sampled_from(["a", "srv/x", "opt/venv/lib"]), d2=st.sampled_from(["b", "home/u/co", "a"]))
def test_property_the_version_is_that_of_the_contents_in_order_whatever_the_folders(tmp_path, c1, c2, d1, d2):
    from agentguard.server.guards import GuardSource

    def files(folder, contents):
        out = []
        for i, c in enumerate(contents):
            p = tmp_path / f"{folder}-{len(contents)}-{abs(hash(tuple(contents)))}" / f"g{i}.toml"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(c)
            out.append(str(p))
        return out

    v1, v2 = GuardSource._version_of(files(d1, c1)), GuardSource._version_of(files(d2, c2))
    assert (v1 == v2) == (c1 == c2)
