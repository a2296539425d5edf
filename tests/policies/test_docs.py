"""The examples of docs/policies.md run as written (the ToolCallGuard block and the configuration table)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from agentguard.core import Context, Decision, ToolCall
from agentguard.policies import ToolCallGuard

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "policies.md").read_text()


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC, re.S)


def test_online_tool_call_guard_example_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)   # it writes audit.jsonl
    block = next(b for b in _blocks("python") if "ToolCallGuard([PolicyBinding" in b)
    exec(compile(block, "docs/policies.md", "exec"), {})
    out = capsys.readouterr().out
    assert "REJECT" in out and "User aged under 18 cannot book a hotel" in out
    assert (tmp_path / "audit.jsonl").read_text().count("\n") == 2


def test_configuration_table_builds_the_documented_guard():
    block = next(b for b in _blocks("toml") if 'policy = "policies/transfer_limit.py"' in b)
    table = tomllib.loads(block)["guards"][0]
    assert table.pop("type") == "policy"
    table["policy"] = str(REPO / "examples" / "integrations" / table["policy"])
    g = ToolCallGuard.from_config(table)
    assert g.check(Context(), ToolCall("transfer_funds", {"amount": 5000})).decision is Decision.REJECT
    assert g.check(Context(), ToolCall("transfer_funds", {"amount": 50})).decision is Decision.ALLOW
    assert g.check(Context(), ToolCall("send_email", {})).decision is Decision.ALLOW   # unknown_tool = "allow"
    assert ToolCallGuard.from_config({"policy": "mind2web_sc", "extractor": "mind2web_sc"}).unknown_tool == "deny"


def test_agentdojo_proactive_example_runs(capsys):
    block = next(b for b in _blocks("python") if "agentdojo_proactive" in b)
    exec(compile(block, "docs/policies.md", "exec"), {})
    lines = capsys.readouterr().out.split("\n")
    p_new, p_seen = map(float, lines[0].split())
    assert p_new < p_seen and lines[1] == "1.0"
