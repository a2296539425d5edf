"""Session-22 red team: a step is never less strict than ``/v1/check`` on its call, in every configuration of
guard files (none, ``tool_guards`` only, ``step_guards`` only, both), through the ASGI app.

Hole found (fixed): with only ``step_guards`` configured, the built-in tool guard of ``/v1/check`` (the verified
Mind2Web-SC policy) was not asked about a step's tool call. ``buy_ticket`` (a tool the policy's map does not name,
default deny) was REJECTed by ``POST /v1/check`` and ALLOWed with ``execute: true`` as
``{"action": {"name": "buy_ticket"}}`` on ``POST /v1/runs/{id}/steps`` when the step guards allowed it. Session 21
closed this only when ``tool_guards`` was configured too. Fix: :func:`agentguard.server.guards.load_guards` stacks
the tool guards in force (configured or built in) after configured step guards (``with_tool_rules``) always.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

TOOLS = '[[guards]]\ntype = "tool-rules"\nallow = ["search", "send", "transfer_*"]\ndeny = ["rm_*"]\nescalate = ["transfer_*"]\n'
STEPS = '[[guards]]\ntype = "tool-rules"\nallow = ["*"]\n'  # the most permissive step guard: lets every call go
CONFIGS = ("none", "tool", "step", "both")


@pytest.fixture(scope="module")
def clients(tmp_path_factory):
    from agentguard.server.app import create_app
    from agentguard.server.settings import ServerSettings

    out = {}
    stack = []
    for cfg in CONFIGS:
        tmp = tmp_path_factory.mktemp(f"s22steps-{cfg}")
        (tmp / "tools.toml").write_text(TOOLS)
        (tmp / "steps.toml").write_text(STEPS)
        kw = {}
        if cfg in ("tool", "both"):
            kw["tool_guards"] = str(tmp / "tools.toml")
        if cfg in ("step", "both"):
            kw["step_guards"] = str(tmp / "steps.toml")
        c = TestClient(create_app(ServerSettings(state_dir=str(tmp), **kw)))
        c.__enter__()
        stack.append(c)
        out[cfg] = c
    yield out
    for c in stack:
        c.__exit__(None, None, None)


_n = itertools.count()


def _check(c, call, metadata=None):
    body = {"run_id": f"c{next(_n)}", "tool_call": call}
    if metadata is not None:
        body["metadata"] = metadata
    r = c.post("/v1/check", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def _step(c, step):
    r = c.post(f"/v1/runs/s{next(_n)}/steps", json=step)
    assert r.status_code == 200, r.text
    return r.json()


def test_the_built_in_tool_guard_decides_a_steps_call_with_step_guards_alone(clients):
    c = clients["step"]
    call = {"name": "buy_ticket", "arguments": {}}
    assert _check(c, call)["execute"] is False  # default deny: the map does not name it
    v = _step(c, {"action": call})
    assert v["decision"] != "ALLOW" and v["execute"] is False, v  # was ALLOW, execute: true


def test_regression_a_step_without_a_tool_call_is_the_step_guards_alone(clients):
    v = _step(clients["step"], {"action": "find Pot", "state": "s0"})
    assert v["decision"] == "ALLOW", v


NAMES = st.sampled_from(["buy_ticket", "search", "book_hotel", "rent_car", "rm_all", "send", "transfer_x", "Search ",
                         "book-hotel", "ｂook_hotel", "click", "exec", ""]).filter(bool)
USER = st.one_of(st.none(), st.fixed_dictionaries({"user_info": st.fixed_dictionaries(
    {"age": st.integers(0, 40), "domestic": st.booleans(), "dr_license": st.booleans(), "vaccine": st.booleans(),
     "membership": st.booleans()})}))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cfg=st.sampled_from(CONFIGS), name=NAMES, user=USER,
       args=st.dictionaries(st.sampled_from(["path", "to", "amount"]), st.one_of(st.text(max_size=6), st.integers(-3, 3)),
                            max_size=2),
       extra=st.fixed_dictionaries({}, optional={"observation": st.text(max_size=5), "state": st.text(max_size=3),
                                                 "signals": st.just({"decision": 0.0})}))
def test_property_a_step_is_never_less_strict_than_check_in_any_configuration(clients, cfg, name, user, args, extra):
    c = clients[cfg]
    call = {"name": name, "arguments": args}
    checked = _check(c, call, user)
    stepped = _step(c, {"action": call, **extra})  # a step carries no metadata: never more than /v1/check knows
    if not checked["execute"]:
        assert not stepped["execute"] and stepped["decision"] != "ALLOW", (cfg, checked, stepped)
