"""shell.analysis.analyse keeps its last readings of texts without ``cwds`` (session 24): a kept reading is the
reading, every call gets lists of its own, and a reading that Python's recursion limit stopped is never kept."""

from pathlib import Path

from agentguard.policies.shell import analysis
from agentguard.policies.shell.analysis import _kept, _read, analyse

HERE = Path(__file__).parent


def test_a_kept_reading_is_the_reading():
    lines = [ln for ln in (HERE / "benign_commands.txt").read_text().splitlines()
             if ln.strip() and not ln.startswith("#")][:60]
    lines += [ln for ln in (HERE / "already_refused_s18.txt").read_text().splitlines()
              if ln.strip() and not ln.startswith("#")][:60]
    for text in lines:
        first, again = analyse(text), analyse(text)
        assert first == again == _read(text, ())
        assert analyse(text, ["/tmp"]) == _read(text, ["/tmp"])


def test_each_call_gets_its_own_lists():
    a = analyse("cat /etc/passwd | grep root")
    a.commands.clear()
    a.paths.append(("/x", None))
    a.unresolvable.append("x")
    b = analyse("cat /etc/passwd | grep root")
    assert [c.program for c in b.commands] == ["cat", "grep"] and ("/x", None) not in b.paths and not b.unresolvable


def test_a_reading_stopped_by_recursion_is_not_kept(monkeypatch):
    text = "echo " + "$(echo " * 3 + "x" + ")" * 3
    _kept.cache_clear()

    def deep(command, cwds):
        out = analysis.Analysis()
        out.unresolvable.append(analysis._DEEP)
        return out

    monkeypatch.setattr(analysis, "_read", deep)
    assert analyse(text).unresolvable == [analysis._DEEP]
    monkeypatch.undo()
    assert analyse(text) == _read(text, ())  # read anew, not the stopped reading
    assert len(analyse("x" * (analysis.MEMO_TEXT + 1)).commands) == 1  # (longer texts are read each time)
