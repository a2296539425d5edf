"""The runnable examples of docs/calibration.md run (blocks starting '# requires: llm' are skipped)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "calibration.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)


@pytest.mark.parametrize("i", range(len(BLOCKS)))
def test_doc_example_runs(i, capsys):
    code = BLOCKS[i]
    if code.startswith("# requires: llm"):
        pytest.skip("needs the local model (covered by test_calib_llm_local.py)")
    exec(compile(code, f"{DOC.name}[block {i}]", "exec"), {})


def test_docs_have_examples():
    assert len(BLOCKS) >= 4
