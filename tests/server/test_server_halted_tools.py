"""A tool the run halted (``strategy = "TEH"``) stays halted on every endpoint of the service, each attack of
the session-18 red team kept as a test (SQLite and PostgreSQL).

Before the fix, with ``read_file`` halted for run r (a refused call under TEH):

- ``POST /v1/check`` of ``Read-File``, ``READ_FILE``, `` read_file`` or ``ｒead_file`` was ALLOW (the rules grant
  them as ``read_file``; the halted set compared the raw name);
- ``POST /v1/runs/r/steps`` with a ``read_file`` action was ALLOW, and a refused step halted the tool ``None``;
- an ESCALATE of ``transfer_funds`` asked before the tool was halted and approved after it was ALLOW;
- a keyed ``read_file`` request decided ALLOW before the halt was replayed as ALLOW after it (a fresh one
  answered "tool read_file was halted earlier in this run").
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from agentguard.server.app import create_app  # noqa: E402
from agentguard.server.settings import ServerSettings  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from svc_roles import AGENT, APPROVER, credentials_file  # noqa: E402

SHADOW = {"path": "/etc/shadow"}
NOTES = {"path": "notes.txt"}


@pytest.fixture()
def client(tmp_path, store_url):
    tools = tmp_path / "tools.toml"
    tools.write_text('[stack]\nname = "s"\n'
                     '[[guards]]\ntype = "tool-rules"\nname = "esc"\nallow = ["read_file", "list_files", "transfer_*"]\n'
                     'escalate = ["transfer_*"]\n'
                     '[[guards]]\ntype = "tool-rules"\nname = "paths"\nallow = ["*"]\ndeny_paths = ["/etc/*"]\n')
    app = create_app(ServerSettings(db_url=store_url, state_dir=str(tmp_path), tool_guards=str(tools), strategy="TEH",
                                    credentials_file=str(credentials_file(tmp_path, (AGENT, APPROVER)))))
    with TestClient(app) as c:
        yield c


def _check(c, run, name, args, key=None):
    h = {**AGENT.headers, **({"Idempotency-Key": key} if key else {})}
    return c.post("/v1/check", headers=h, json={"run_id": run, "tool_call": {"name": name, "arguments": args}})


def _step(c, run, name, args, key=None):
    h = {**AGENT.headers, **({"Idempotency-Key": key} if key else {})}
    return c.post(f"/v1/runs/{run}/steps", headers=h, json={"action": {"name": name, "arguments": args}})


def _refused(r):
    assert r.status_code == 200, r.text
    b = r.json()
    assert b["decision"] != "ALLOW" and b["execute"] is False, b
    return b


def test_a_respelled_halted_tool_is_refused_by_check(client):
    b = _refused(_check(client, "r", "read_file", SHADOW))
    assert "halted for this run" in b["message"]
    for name in ("read_file", "Read-File", "READ_FILE", " read_file", "read file", "\uff52ead_file"):
        assert "halted earlier" in _refused(_check(client, "r", name, NOTES))["message"], name
    assert _check(client, "r", "list_files", {}).json()["decision"] == "ALLOW"  # only that tool
    assert _check(client, "other", "read_file", NOTES).json()["decision"] == "ALLOW"  # only that run


def test_steps_halt_their_tool_and_are_refused_a_halted_tool(client):
    b = _refused(_step(client, "s1", "read_file", SHADOW))
    assert "tool read_file halted" in b["message"]  # was "tool None halted"
    _refused(_step(client, "s1", "read_file", NOTES))
    _refused(_check(client, "s1", "read_file", NOTES))
    _refused(_check(client, "s2", "read_file", SHADOW))  # halted through /v1/check ...
    _refused(_step(client, "s2", "READ-FILE", NOTES))  # ... refused as a step


def test_an_escalation_approved_after_its_tool_was_halted_does_not_run(client):
    call = {"name": "transfer_funds", "arguments": {"amount": 5}}
    asked = client.post("/v1/check", headers=AGENT.headers, json={"run_id": "a", "tool_call": call}).json()
    assert asked["decision"] == "ESCALATE"
    _refused(_check(client, "a", "Transfer-Funds", SHADOW))  # the agent gets transfer_funds halted
    r = client.post("/v1/approvals", headers=APPROVER.headers,
                    json={"decision_id": asked["decision_id"], "run_id": "a", "tool_call": call, "approved": True})
    b = _refused(r)
    assert "halted" in b["reason"] + b["message"]
    # an escalation approved before any halt still runs (the fix refuses only halted tools)
    ok = client.post("/v1/check", headers=AGENT.headers, json={"run_id": "b", "tool_call": call}).json()
    r = client.post("/v1/approvals", headers=APPROVER.headers,
                    json={"decision_id": ok["decision_id"], "run_id": "b", "tool_call": call, "approved": True})
    assert r.json()["decision"] == "ALLOW" and r.json()["execute"] is True


@pytest.mark.parametrize("send", [_check, _step], ids=["check", "step"])
def test_a_keyed_allow_is_not_replayed_once_its_tool_was_halted(client, send):
    first = send(client, "k", "read_file", NOTES, key="key-1")
    assert first.json()["decision"] == "ALLOW"
    again = send(client, "k", "read_file", NOTES, key="key-1")  # before the halt: replayed
    assert again.headers.get("idempotent-replayed") == "true" and again.json()["decision"] == "ALLOW"
    _refused(_check(client, "k", "READ_FILE", SHADOW))
    r = send(client, "k", "read_file", NOTES, key="key-1")
    assert r.status_code == 409 and "read_file" in r.json()["error"].lower() and "do not run" in r.json()["error"], r.text


def test_a_keyed_approval_is_not_replayed_once_its_tool_was_halted(client):
    call = {"name": "transfer_funds", "arguments": {"amount": 5}}
    asked = client.post("/v1/check", headers=AGENT.headers, json={"run_id": "q", "tool_call": call}).json()
    body = {"decision_id": asked["decision_id"], "run_id": "q", "tool_call": call, "approved": True}
    h = {**APPROVER.headers, "Idempotency-Key": "ap-1"}
    assert client.post("/v1/approvals", headers=h, json=body).json()["decision"] == "ALLOW"
    _refused(_check(client, "q", "transfer_funds", SHADOW))
    r = client.post("/v1/approvals", headers=h, json=body)
    assert r.status_code == 409 and "do not run" in r.json()["error"], r.text
