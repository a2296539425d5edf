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
def test_readme_python_block_runs(i, tmp_path, monkeypatch, capsys):
    """Each block runs as written; every ``# -> text`` comment is a line the block prints (in order)."""
    monkeypatch.chdir(tmp_path)
    exec(compile(BLOCKS[i], f"README block {i}", "exec"), {"__name__": "__readme__"})
    printed = capsys.readouterr().out.splitlines()
    expected = [m.strip() for m in re.findall(r"# -> (.*)$", BLOCKS[i], re.M)]
    assert len(printed) >= len(expected)
    for line, want in zip(printed[: len(expected)], expected):
        assert line.startswith(want), (line, want)


def test_readme_opens_with_a_quickstart_that_guards_tool_calls_in_langchain_and_mcp():
    """After the two set-up commands comes the quickstart (LangChain and MCP, run above), then the mechanisms."""
    text = README.read_text()
    heads = re.findall(r"^## (.*)$", text, re.M)
    assert heads[0].startswith("Quickstart") and heads[1] == "The mechanisms"
    quick = text[text.index("## Quickstart"):text.index("## The mechanisms")]
    blocks = re.findall(r"```python\n(.*?)```", quick, re.S)
    assert any("AgentGuardMiddleware" in b for b in blocks) and any("GuardProxy" in b for b in blocks)
    assert all(b in BLOCKS for b in blocks) and all("# -> " in b for b in blocks)
