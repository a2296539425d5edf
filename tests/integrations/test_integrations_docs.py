"""The Python examples in docs/integrations.md run as written (in a scratch directory)."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# top-level ```python blocks are complete programs; indented ones (inside lists) are fragments
BLOCKS = re.findall(r"^```python\n(.*?)^```", (REPO / "docs" / "integrations.md").read_text(), re.S | re.M)


@pytest.mark.parametrize("i", range(len(BLOCKS)))
def test_doc_example_runs(i, tmp_path, monkeypatch, capfd):
    code = BLOCKS[i]
    for mod in ("langchain", "agents", "mcp"):
        if re.search(rf"^from {mod}[. ]", code, re.M):
            pytest.importorskip(mod)
    (tmp_path / "examples").symlink_to(REPO / "examples")
    monkeypatch.chdir(tmp_path)
    script = tmp_path / f"block{i}.py"
    script.write_text(code)
    runpy.run_path(str(script), run_name="__main__")
    out = capfd.readouterr().out
    if "ESCALATE: waiting" in code:
        assert "ESCALATE" in out and "transferred 5" in out
    if "REJECT by internal-mail" in code:
        assert "REJECT by internal-mail" in out
    if "GuardedStream(" in code:
        assert out.strip().endswith("True 1")
    if "ProvenanceGuard" in code and "GuardedStream(" in code:   # the planted name never reaches the user
        assert out.startswith("Le Marais Boutique is rated 4.2.") and "Riverside" not in out
    if "AgentsAnswerGuard(" in code or "answer_guard=" in code:   # the planted name never reaches the caller
        assert "Le Marais Boutique is rated 4.2." in out and "withheld" in out and "Riverside" not in out, out
    if "answer_guard=" in code:
        assert "'action': 'GUARDRAIL_INTERVENED'" in out, out
    if "ThresholdCalibrator(" in code:
        assert out.split()[1:] == ["look", "True", "1"]
    if "context_schema=Facts" in code:
        assert "exceeds the transfer limit" in out
    if "BLOCKED" in code:
        assert "'action': 'BLOCKED'" in out
    if "client.approve(" in code:
        assert out.strip() == "ESCALATE ALLOW human:alice", out
    if "logging_callback" in code:
        assert out.split("\n")[:3] == ["log: hello", "announced hello", "True"], out
    elif "delete_note" in code:
        assert out.startswith("True agentguard refused tool call delete_note")
