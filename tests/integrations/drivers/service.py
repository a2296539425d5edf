"""The guard service (``agentguard serve``'s FastAPI app, served in-process by Starlette's TestClient) as a
:class:`~tests.integrations.drivers.Driver`.

The scripted "agent" proposes each turn's calls to ``POST /v1/check`` (the calls of one turn are all
decided before any runs: parallel calls), then runs a tool body only when the service's answer says so:
ALLOW runs exactly the proposed call, MODIFY/RECOVER run the answer's ``action``, REJECT skips the call
(the run goes on), HALT ends the run, ESCALATE asks the human (``approve``) and reports the answer to
``POST /v1/approvals``, running the call only when the service answers that approval with ALLOW. Call
ids are sent as the model gave them (duplicate, empty or missing) and never used to match answers.
``strategy`` is the service's configured enforcement strategy (``ServerSettings.strategy``).

Least privilege, as a deployment would run it: the service reads a credentials file (hashed tokens) with an
``agent`` credential (checks) and an ``approver`` one (answers escalations; the agent's token cannot).
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path
from typing import Any

from agentguard.core import Guard, ToolCall

from . import TOOLS, RunResult

TOKEN = "service-driver-agent-token"  # role agent: /v1/check, steps, signals
APPROVER_TOKEN = "service-driver-approver-token"  # role approver, identity "driver-human": /v1/approvals
APPROVER = "driver-human"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
APPROVER_AUTH = {"Authorization": f"Bearer {APPROVER_TOKEN}"}


def credentials_file(folder: str | Path) -> Path:
    """A credentials file (only SHA-256 digests of the tokens) with the agent and the approver."""
    p = Path(folder) / "credentials.toml"
    p.write_text("".join(f'[[credentials]]\nidentity = "{ident}"\nrole = "{role}"\n'
                         f'token_sha256 = "{hashlib.sha256(tok.encode()).hexdigest()}"\n\n'
                         for ident, role, tok in (("driver-agent", "agent", TOKEN),
                                                  (APPROVER, "approver", APPROVER_TOKEN))))
    return p


class ServiceDriver:
    name = "service"

    def __init__(self) -> None:
        self.runs = 0

    def app(self, guard: Guard, strategy: str | None) -> Any:
        from agentguard.server.app import create_app
        from agentguard.server.guards import ServiceGuards, StepToolGuard, default_guards
        from agentguard.server.settings import ServerSettings

        state = tempfile.mkdtemp(prefix="agentguard-svc-driver-")
        settings = ServerSettings(credentials_file=str(credentials_file(state)), state_dir=state,
                                  strategy=strategy, reload_s=0)
        g = default_guards(settings)
        return create_app(settings, ServiceGuards(tool=guard, step=StepToolGuard(guard), signal=g.signal))

    def run(self, guard: Guard, turns: list[list[ToolCall]], *, approve: bool = False,
            strategy: str | None = None) -> RunResult:
        from fastapi.testclient import TestClient

        result = RunResult()
        self.runs += 1
        run_id = f"driver-{self.runs}"

        def tool(name: str, arguments: dict[str, Any]) -> str:  # the tool bodies: record what really ran
            assert name in TOOLS, name
            result.executed.append((name, dict(arguments)))
            return "ok"

        with TestClient(self.app(guard, strategy)) as client:
            for turn in turns:
                answers = []
                for call in turn:  # one model turn: every call decided before any runs
                    tc: dict[str, Any] = {"name": call.name, "arguments": dict(call.arguments)}
                    if call.call_id:
                        tc["call_id"] = call.call_id
                    r = client.post("/v1/check", headers=AUTH, json={"run_id": run_id, "tool_call": tc})
                    assert r.status_code == 200, r.text
                    answers.append((call, tc, r.json()))
                for call, tc, body in answers:
                    d = body["decision"]
                    if d == "ESCALATE":
                        result.asked.append({"call": tc, "reason": body["reason"], "verdicts": body["verdicts"]})
                        r = client.post("/v1/approvals", headers=APPROVER_AUTH, json={
                            "decision_id": body["decision_id"], "run_id": run_id, "tool_call": tc,
                            "approved": approve is True, "approver": "driver"})
                        assert r.status_code == 200, r.text
                        body = r.json()
                        d = body["decision"]
                    if d == "ALLOW":
                        tool(call.name, dict(call.arguments))
                    elif d in ("MODIFY", "RECOVER") and body.get("action") is not None:
                        act = body["action"]
                        if isinstance(act, dict) and "name" in act:
                            tool(act["name"], dict(act.get("arguments") or {}))
                        elif isinstance(act, dict):
                            tool(call.name, act)
                    elif d == "HALT":
                        result.stopped = True
                        return result
        return result


#: the driver the one-path tests use (tests/integrations/test_one_path.py)
DRIVERS = [ServiceDriver()]
