"""The README's Python blocks run as written (documentation that cannot rot)."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_readme_starts_with_exactly_two_setup_commands():
    first = re.search(r"```sh\n(.*?)```", README.read_text(), re.S).group(1)
    cmds = [l.split("#")[0].strip() for l in first.splitlines() if l.split("#")[0].strip()]
    assert cmds == ["make demo", "make test"]


@pytest.mark.parametrize("i", range(len(BLOCKS)))
def test_readme_python_block_runs(i, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(BLOCKS[i], f"README block {i}", "exec"), {"__name__": "__readme__"})
