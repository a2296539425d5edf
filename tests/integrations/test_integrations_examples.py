"""Each example in examples/integrations runs (scripted models, loopback only) and enforces the policy."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

EX = Path(__file__).resolve().parents[2] / "examples" / "integrations"


def load(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EX / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses in an example look their module up
    spec.loader.exec_module(mod)
    return mod


def test_langchain_example():
    pytest.importorskip("langchain.agents")
    assert load("langchain_agent").main() == {"sent": ["ann@example.com"], "deleted": []}


def test_openai_agents_example(tmp_path):
    pytest.importorskip("agents")
    out = load("openai_agents_agent").main(str(tmp_path / "t.jsonl"))
    assert out["sent"] == ["ann@example.com"] and out["deleted"] == []
    [trace] = out["traces"]
    assert [int(s.signals["decision"]) for s in trace.steps] == [3, 0]


def test_mcp_example(tmp_path):
    pytest.importorskip("mcp")
    assert load("mcp_proxy_demo").main(str(tmp_path)) == {"kept": True, "written": True}


def test_litellm_example():
    out = load("litellm_guardrail").main()
    assert out["delete"]["action"] == "BLOCKED" and out["mail"] == {"action": "NONE"}


def test_streaming_example():
    out = load("streaming_monitor").main()
    assert out["cut"] and out["alarm_step"] == 2 and "rm -rf" not in out["text"]


# issue 18's must-show, per framework: a dangerous call refused and the run going on; a human approval
# through the framework's own mechanism letting exactly the approved call run; facts reaching a policy
# (the same call allowed for a user whose own limit covers it, refused for one whose limit does not).
@pytest.mark.parametrize("limit,transferred", [(500, []), (5000, [800])])
def test_langchain_approval_example(limit, transferred):
    pytest.importorskip("langchain.agents")
    out = load("langchain_approval").main(limit)
    assert out["deleted"] == [] and out["final"] == "Done what I was allowed to do."
    assert out["asked"] == ["/srv/logs/a.gz", "/srv/db"] and out["archived"] == ["/srv/logs/a.gz"]
    assert out["transferred"] == transferred


@pytest.mark.parametrize("limit,transferred", [(500, []), (5000, [800])])
def test_openai_agents_approval_example(limit, transferred):
    pytest.importorskip("agents")
    out = load("openai_agents_approval").main(limit)
    assert out["deleted"] == [] and out["final"] == "Done what I was allowed to do."
    assert out["asked"] == ["/srv/logs/a.gz", "/srv/db"] and out["archived"] == ["/srv/logs/a.gz"]
    assert out["transferred"] == transferred


@pytest.mark.parametrize("limit,transferred", [(500, []), (5000, ["800", "bob"])])
def test_mcp_approval_example(tmp_path, limit, transferred):
    pytest.importorskip("mcp")
    out = load("mcp_approval").main(str(tmp_path), user_limit=limit)
    assert out == {"kept": True, "transferred": transferred, "written": ["todo.txt"], "asked": 2}
