"""What a pip install gets (issue 29): the files the docs name are in the wheel, and the shipped example stack
(with its policy path) loads from the installed copy. Builds the wheel once (``pip wheel --no-deps``)."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# a path the docs name that a user of the package needs: the examples, shipped policies and stacks, the package
NAMED = re.compile(r"(?<![\w/.-])((?:src/)?(?:agentguard/|examples/|policies/library/|server/examples/)"
                   r"[\w./-]+\.(?:py|toml|yaml|jsonl|json))(?![\w])")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(REPO)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return next(out.glob("agentguard-*.whl"))


def _in_wheel(path: str, names: set[str]) -> bool:
    p = path.removeprefix("src/")
    if p.startswith("examples/"):
        p = "agentguard/" + p
    if not p.startswith("agentguard/"):
        return any(n.endswith("/" + p) for n in names)
    return p in names


def test_every_path_the_docs_name_is_in_the_wheel(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    named = {m for doc in DOCS for m in NAMED.findall(doc.read_text())}
    named = {p for p in named if (REPO / p).exists() or (REPO / "src" / p).exists()
             or (REPO / "src" / "agentguard" / p).exists()}  # the docs' own placeholders (my_policy.py) aside
    assert {"examples/integrations/agentguard.toml", "examples/microwave_traces.jsonl"} <= named
    missing = sorted(p for p in named if not _in_wheel(p, names))
    assert not missing, f"named in the docs but not in the wheel: {missing}"
    assert "agentguard/policies/nagini_setup.py" in names                     # `agentguard setup nagini`
    assert "agentguard/examples/integrations/policies/transfer_limit.py" in names
    assert "agentguard/server/examples/rules.toml" in names                   # `serve --example-guards`
    assert "agentguard_entry.py" in names  # the console script's entry point, outside the package (Ctrl-C: one line)
    eps = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "agentguard = agentguard_entry:main" in zipfile.ZipFile(wheel).read(eps).decode()


def test_the_shipped_example_stack_loads_from_the_installed_copy(wheel, tmp_path):
    """The example stack names its policy relative to itself (``policies/transfer_limit.py``): from the wheel's
    copy (not the repository's) it loads and decides."""
    zipfile.ZipFile(wheel).extractall(tmp_path)
    from agentguard.config import load_stack
    from agentguard.core import Context, ToolCall

    stack = load_stack(tmp_path / "agentguard" / "examples" / "integrations" / "agentguard.toml")
    assert stack.check(Context(), ToolCall("transfer_funds", {"amount": 5000})).decision.name == "REJECT"
    assert stack.check(Context(), ToolCall("transfer_funds", {"amount": 50})).decision.name == "ALLOW"
