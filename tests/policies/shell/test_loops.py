"""A loop variable read as the loop's words (:mod:`agentguard.policies.shell.loops`, session 19)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from agentguard.policies.shell import analyse

sys.path.insert(0, os.path.dirname(__file__))
from test_analysis_redteam import refused  # noqa: E402

FAST = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)

BENIGN = ['for f in *.py; do wc -l "$f"; done', 'for f in src/*.py; do echo "$f"; done',
          'for f in a.txt b.txt; do head -n 3 "${f}"; done', 'for d in src tests; do ls "$d"; done',
          'for f in *.md; do grep -c TODO "$f"; done']
#: the expansion stays unknown (any path): the body may change the variable, or the word is not "$f" alone
STAYS_UNKNOWN = ['for f in *.py; do f=/etc/shadow; cat "$f"; done', 'for f in x; do (f=/etc/shadow); cat "$f"; done',
                 'for f in *.py; do read f; cat "$f"; done', 'for f in *.py; do cat "$f.bak"; done',
                 'for f in a b; do cat $f; done', 'for f; do cat "$f"; done', 'for f in $(ls); do cat "$f"; done',
                 'for f in x; do cat "$f"; done; cat "$f"', 'for f in *.py; do cat "$g"; done',
                 'for f in x; do for f in /etc/shadow; do true; done; cat "$f"; done',
                 'for f in x; do unset f; cat "$f"; done', 'for f in x; do printf -v f /etc/shadow; cat "$f"; done',
                 'for f in x; do cat "${f%x}"; done', 'for f in x; do cat "${#f}"; done',
                 'select f in x; do cat "$f"; done']
ATTACKS = ['for f in /etc/*; do cat "$f"; done', 'for f in /etc/shadow; do cat "$f"; done',
           'for f in ~/.ssh/*; do cat "${f}"; done', 'for f in .env; do cat "$f"; done',
           'for f in x /etc/sha*; do cat "$f"; done', 'for f in .bashrc; do echo x >> "$f"; done',
           'for f in *.py; do "$f"; done', 'for f in rm; do "$f" -rf /; done']


@pytest.mark.parametrize("cmd", BENIGN)
def test_a_loop_over_project_files_is_allowed(cmd: str) -> None:
    assert not refused(cmd), (cmd, analyse(cmd).unresolvable)


@pytest.mark.parametrize("cmd", STAYS_UNKNOWN + ATTACKS)
def test_a_loop_whose_variable_may_name_anything_or_a_denied_path_is_refused(cmd: str) -> None:
    assert refused(cmd), cmd


_WORD = st.sampled_from(["a.py", "src/x.py", "*.py", "/etc/shadow", "~/.ssh/id_rsa", ".env", "/tmp/x", "docs",
                         "/etc/*", "../x", "README.md", "x.txt"])


@FAST
@given(st.lists(_WORD, min_size=1, max_size=3), st.sampled_from(["cat", "wc -l", "head", "ls", "grep x"]),
       st.booleans())
def test_the_loop_form_is_decided_as_the_program_on_each_word(words: list[str], program: str, braces: bool) -> None:
    """``for f in W...; do P "$f"; done`` is refused exactly when ``P W`` is for some W: the same readings."""
    var = '"${f}"' if braces else '"$f"'
    loop = f"for f in {' '.join(words)}; do {program} {var}; done"
    direct = any(refused(f"{program} {w}") for w in words)
    assert refused(loop) == direct, loop


def test_bash_differential_the_quoted_variable_is_one_of_the_loop_words() -> None:
    """Real bash: each value of "$f" is one word of the list after expansion (a match of the glob, or the glob)."""
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("a.py", "b c.py", "-rf.py", ".hidden.py"):
            open(os.path.join(tmp, name), "w").close()
        script = 'for f in *.py x.txt "q r"; do printf "%s\\n" "$f"; done'
        out = subprocess.run(["bash", "-c", script], cwd=tmp, capture_output=True, text=True, timeout=30).stdout
    assert out.splitlines() == ["-rf.py", "a.py", "b c.py", "x.txt", "q r"]  # no split, no dot file, one word each
    words = analyse('for f in *.py x.txt "q r"; do wc -l "$f"; done').commands[-1].words[-1:]
    assert words and not words[0].split
