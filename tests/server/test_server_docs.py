"""The Python examples in docs/server.md run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

DOC = Path(__file__).resolve().parents[2] / "docs" / "server.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def test_docs_have_examples():
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("i", range(len(BLOCKS)))
def test_docs_example_runs(i):
    exec(compile(BLOCKS[i], f"{DOC.name}[python block {i}]", "exec"), {"__name__": "__docs__"})


def test_documented_digest_is_the_shipped_policy():
    from agentguard.policies import library_path, load_policy

    assert f'verified_digest = "{load_policy(library_path("mind2web_sc")).digest}"' in DOC.read_text()
