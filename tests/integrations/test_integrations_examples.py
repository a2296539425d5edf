"""Each example in examples/integrations runs (scripted models, loopback only) and enforces the policy."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

EX = Path(__file__).resolve().parents[2] / "examples" / "integrations"


def load(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EX / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
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
