"""A learned bundle behind the service's steps endpoint: concrete states are abstracted by the bundle's
spec (no more ``TypeError: unhashable type: 'dict'``), a step without a state is decided on the run's
call history, and both survive a restart (the run rebuilt from the audit store). SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient  # noqa: E402

from agentguard.core import Step, Trace  # noqa: E402
from agentguard.predictive.learn import DTMCLearner  # noqa: E402
from agentguard.server.app import create_app  # noqa: E402
from agentguard.server.settings import ServerSettings  # noqa: E402
from agentguard.spec.history import history_state  # noqa: E402
from agentguard.core import Context, ToolCall  # noqa: E402
from agentguard.spec.predicates import Abstraction  # noqa: E402

TOKEN = "bundle-token-1234"
H = {"Authorization": f"Bearer {TOKEN}"}
SPEC = {"state": "history", "terminal": "finish", "unsafe": "secret and out",
        "predicates": {"secret": '"read_secret" in tools', "asks": 'call.tool == "read_secret"',
                       "out": 'call.tool == "send" and "@corp" not in call.text'}}


def history(*calls):
    """The recorded states of a run making ``calls`` (each executed)."""
    steps: list[Step] = []
    for name, args in calls:
        c = ToolCall(name, args)
        steps.append(Step(state=history_state(Context(run_id="r", trace=Trace(list(steps))), c), action=c,
                          observation="ok", signals={"decision": 0.0}))
    return Trace(steps)


@pytest.fixture()
def guard_file(tmp_path):
    leak = history(("search", {}), ("read_secret", {"name": "k"}), ("send", {"to": "x@evil"}))
    safe = history(("search", {}), ("send", {"to": "t@corp"}))
    learner = DTMCLearner(Abstraction.from_dict(SPEC), alpha=1)
    learner.add([leak] * 6 + [safe] * 4)
    learner.model().save(tmp_path / "model.json")
    f = tmp_path / "steps.toml"
    f.write_text('[[guards]]\ntype = "proactive"\nmodel = "model.json"\nthreshold = 0.4\ndecision = "HALT"\n')
    return f


def app(tmp_path, guard_file, store_url):
    # a step's tool call is also decided by the tool guards /v1/check runs (session 22: with step guards alone, the
    # built-in Mind2Web-SC tool guard); these tools are this test's own, so its tool guards allow them by name
    tools = tmp_path / "tools.toml"
    tools.write_text('[[guards]]\ntype = "tool-rules"\nname = "bundle-tools"\nallow = ["search", "read_secret", "send"]\n')
    return create_app(ServerSettings(token=TOKEN, state_dir=str(tmp_path / "svc"), step_guards=str(guard_file),
                                     tool_guards=str(tools), db_url=store_url))


def test_concrete_states_and_history_through_the_steps_endpoint(tmp_path, guard_file, store_url):
    asks = history(("search", {}), ("read_secret", {"name": "k"})).steps[1].state
    with TestClient(app(tmp_path, guard_file, store_url)) as c:
        v = c.post("/v1/runs/a/steps", headers=H, json={"state": asks}).json()
        assert v["decision"] == "HALT" and "unhashable" not in v["reason"] and v["numbers"]["probability"] < 0.4
        ok = c.post("/v1/runs/b/steps", headers=H, json={"action": {"name": "search", "arguments": {}}}).json()
        assert ok["decision"] == "ALLOW", ok
        no = c.post("/v1/runs/b/steps", headers=H, json={"action": {"name": "read_secret", "arguments": {}}}).json()
        assert no["decision"] == "HALT", no  # the state computed from the run's history: asks for the secret
        bad = c.post("/v1/runs/c/steps", headers=H, json={"state": {"tools": 3}}).json()
        assert bad["decision"] == "HALT" and "predicate" in bad["reason"]  # unreadable state: fail closed


def test_the_history_survives_a_restart(tmp_path, guard_file, store_url):
    """Threshold 0 (report only) and unseen "allow": emailing outside is unsafe (P_safe 0) only when the
    run's earlier read_secret is part of the history, which after a restart only the replay provides."""
    guard_file.write_text('[[guards]]\ntype = "proactive"\nmodel = "model.json"\nthreshold = 0.0\nunseen = "allow"\n')
    send = {"action": {"name": "send", "arguments": {"to": "x@evil"}}}
    with TestClient(app(tmp_path, guard_file, store_url)) as c:
        for name in ("search", "read_secret"):
            assert c.post("/v1/runs/d/steps", headers=H, json={"action": {"name": name, "arguments": {}}}
                          ).json()["decision"] == "ALLOW"
        fresh = c.post("/v1/runs/e/steps", headers=H, json=send).json()
        assert fresh["numbers"]["probability"] == 1.0  # no secret read in run e: "001", unseen, allowed
    with TestClient(app(tmp_path, guard_file, store_url)) as c:
        v = c.post("/v1/runs/d/steps", headers=H, json=send).json()
        assert v["numbers"]["probability"] == 0.0, v  # "101": the secret was read before the restart
