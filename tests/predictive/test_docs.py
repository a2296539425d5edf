"""The Python examples in docs/learning.md run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "learning.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)


@pytest.mark.parametrize("i", range(len(BLOCKS)))
def test_doc_example_runs(i, capsys):
    code = compile(BLOCKS[i], f"{DOC.name}[python block {i}]", "exec")
    exec(code, {})  # noqa: S102 - running the documentation's own examples
