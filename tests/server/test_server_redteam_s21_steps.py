"""Session-21 red team of the guard service: a tool call refused by ``/v1/check`` sent as a step (real HTTP, uvicorn).

Hole found (fixed): with ``step_guards`` configured (a proactive guard), the steps endpoint decided a step with
those guards alone; the tool guards (``tool_guards``) were not asked about the step's tool call. An agent whose
``rm_all`` was REJECTed by ``POST /v1/check`` sent ``{"action": {"name": "rm_all", "arguments": {"path": "/"}}}``
to ``POST /v1/runs/s1/steps`` and got ``ALLOW`` with ``execute: true`` ("predicted safe"). Fix (the class: one
call, two endpoints, two sets of guards): :func:`agentguard.server.guards.with_tool_rules` stacks the tool guards
on the step's tool call after the step guards, so a step is at least as strict as ``/v1/check`` on its call.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from svc_roles import AGENT, credentials_file  # noqa: E402

from agentguard.core import Context, Step, ToolCall, Trace  # noqa: E402

SPEC = {"state": "history", "terminal": "finish", "unsafe": "secret and out",
        "predicates": {"secret": '"read_secret" in tools', "asks": 'call.tool == "read_secret"',
                       "out": 'call.tool == "send" and "@corp" not in call.text'}}
TOOLS = ('[[guards]]\ntype = "tool-rules"\nallow = ["search", "send", "read_secret", "transfer_*"]\ndeny = ["rm_*"]\n'
         'escalate = ["transfer_*"]\n')
STEPS = '[[guards]]\ntype = "proactive"\nmodel = "model.json"\nthreshold = 0.4\ndecision = "HALT"\n'


def _history(*calls):
    from agentguard.spec.history import history_state

    steps: list[Step] = []
    for name, args in calls:
        c = ToolCall(name, args)
        steps.append(Step(state=history_state(Context(run_id="r", trace=Trace(list(steps))), c), action=c,
                          observation="ok", signals={"decision": 0.0}))
    return Trace(steps)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    from agentguard.predictive.learn import DTMCLearner
    from agentguard.server.app import create_app
    from agentguard.server.settings import ServerSettings
    from agentguard.server.testing import serve_in_thread
    from agentguard.spec.predicates import Abstraction

    tmp = tmp_path_factory.mktemp("steps21")
    learner = DTMCLearner(Abstraction.from_dict(SPEC), alpha=1)
    learner.add([_history(("search", {}), ("read_secret", {"name": "k"}), ("send", {"to": "x@evil"}))] * 6
                + [_history(("search", {}), ("send", {"to": "t@corp"}))] * 4)
    learner.model().save(tmp / "model.json")
    (tmp / "steps.toml").write_text(STEPS)
    (tmp / "tools.toml").write_text(TOOLS)
    app = create_app(ServerSettings(state_dir=str(tmp), tool_guards=str(tmp / "tools.toml"),
                                    step_guards=str(tmp / "steps.toml"),
                                    credentials_file=str(credentials_file(tmp, (AGENT,)))))
    with serve_in_thread(app) as b:
        yield b


_n = iter(range(10**9))


def _check(base, call):
    r = httpx.post(f"{base}/v1/check", headers=AGENT.headers, json={"run_id": f"c{next(_n)}", "tool_call": call})
    assert r.status_code == 200, r.text
    return r.json()


def _step(base, step):
    r = httpx.post(f"{base}/v1/runs/s{next(_n)}/steps", headers=AGENT.headers, json=step)
    assert r.status_code == 200, r.text
    return r.json()


def test_a_call_refused_by_check_is_refused_as_a_step(base):
    call = {"name": "rm_all", "arguments": {"path": "/"}}
    assert _check(base, call)["decision"] == "REJECT"
    v = _step(base, {"action": call})
    assert v["decision"] != "ALLOW" and v["execute"] is False, v


def test_an_escalated_call_is_not_run_as_a_step(base):
    """An ESCALATE of /v1/check is answered only through /v1/approvals (for checks): as a step it stays refused."""
    call = {"name": "transfer_funds", "arguments": {"amount": 10**6}}
    assert _check(base, call)["decision"] == "ESCALATE"
    v = _step(base, {"action": call, "observation": "x", "signals": {"decision": 0.0}})
    assert v["decision"] != "ALLOW" and v["execute"] is False, v


def test_regression_the_step_guards_still_decide_allowed_calls(base):
    v = _step(base, {"action": {"name": "search", "arguments": {}}})
    assert v["decision"] == "ALLOW", v
    assert v["reason"] == "predicted safe", v  # the proactive guard's verdict, as before


NAMES = st.sampled_from(["rm_all", "rm_rf", "search", "send", "read_secret", "transfer_x", "exec", "RM_all", "rm_",
                         "Search", "search ", "ｒm_all"])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=NAMES, args=st.dictionaries(st.sampled_from(["path", "to", "amount", "name"]),
                                        st.one_of(st.text(max_size=8), st.integers(-5, 5)), max_size=3),
       extra=st.fixed_dictionaries({}, optional={"observation": st.text(max_size=5),
                                                 "signals": st.just({"decision": 0.0}), "output": st.text(max_size=5)}))
def test_property_a_step_is_never_less_strict_than_check_on_its_call(base, name, args, extra):
    call = {"name": name, "arguments": args}
    checked = _check(base, call)
    stepped = _step(base, {"action": call, **extra})
    if not checked["execute"]:
        assert not stepped["execute"] and stepped["decision"] != "ALLOW", (checked, stepped)
