"""Differential tests (issue 25): generated obfuscated commands run under real bash in a sandbox.

Every program that really ran, every word it got, every path a stub was handed and every file bash
opened must be one the analysis saw, unless the analysis refused the command as unresolvable
(``tests/policies/shell_sandbox.py``). One test per variant family, then a seeded mix of at least 20,000
commands (batched: one strace'd bash driver per batch). ``AG_SHELL_DIFF_N`` raises the count for the
longer run documented in ``benchmarks/results/shell_analysis.json``.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from agentguard.policies.shell import analyse

import sys  # noqa: E402
sys.path.insert(0, os.path.dirname(__file__))
from shell_sandbox import Sandbox, available, compare  # noqa: E402

pytestmark = pytest.mark.skipif(available() is not None, reason=f"differential harness: {available()}")

PROGS = ["rm", "cat", "ls", "grep", "cp", "find", "awk", "curl", "git", "tee"]
ARGS = ["-rf", "-r", "-f", "/", "/etc/shadow", "shadow", "a.txt", "x", "/root/x", "~/.ssh/id_rsa", "~root/x",
        "notes.md", "-", "--force", "..", "../x", "/proc/self/root/etc/shadow", "file:///etc/shadow"]
TARGETS = ["/etc/shadow", "/etc/sudoers.d/x", "out", "a.txt", "../x", "~/o", "shadow", "/root/x"]


def _quote(word: str, how: int) -> str:
    if how == 0 or not word:
        return word
    if how == 1:
        return "'" + word.replace("'", "'\\''") + "'"
    if how == 2:
        return '"' + word.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$").replace("`", "\\`") + '"'
    if how == 3:
        return "".join("\\" + c if c.isalnum() else ("\\" + c if c in " '\"\\$`*?[]{}();&|<>~!#" else c)
                       for c in word)
    if how == 4:
        return "$'" + "".join(f"\\x{ord(c):02x}" if ord(c) < 128 else c for c in word) + "'"
    mid = len(word) // 2  # split quoting: r'm'
    return word[:mid] + "'" + word[mid:].replace("'", "'\\''") + "'"


quoting = st.integers(0, 5)
prog = st.builds(_quote, st.sampled_from(PROGS), quoting)
arg = st.builds(_quote, st.sampled_from(ARGS), quoting)
globbed = st.sampled_from(["/etc/shad*w", "/etc/shado?", "/etc/[s]hadow", "/etc/{shadow,x}", "*", "sh*",
                           "{a,b}.txt", "/etc/sha{d,x}ow", "~/.ss?/*", "[a-z]*", "*.{txt,md}", "{1..3}"])
expansions = st.sampled_from(["$(printf rm)", "`printf rm`", "rm${IFS}-rf${IFS}/", "$x", "${x:-rm}",
                              "\"$(echo /etc/shadow)\"", "$HOME/x", "$((1+2))", "x=rm; $x -rf /",
                              "cat $(echo shadow)", "echo \"today $(date)\""])
wrappers = st.sampled_from(["timeout -k 5s 10", "timeout 3", "env -C /etc", "env -i", "env A=1", "nice -n 5",
                            "nice -5", "nohup", "stdbuf -o0", "setsid", "env -S 'rm -rf /' #", "env --chdir=/tmp",
                            "timeout --kill=1 2", "env -u HOME", "sudo -u root", "doas -u root",
                            "chroot /", "strace -o f", "busybox"])
separators = st.sampled_from(["\n", ";", " && ", " || ", " | ", "\n\n", " ;\n "])
redirs = st.builds(lambda op, t, q: f"{op}{_quote(t, q)}", st.sampled_from(["<", ">", ">>", "2>", "&>", "<>", "1>"]),
                   st.sampled_from(TARGETS), st.integers(0, 2))


@st.composite
def simple(draw, wrapped=True):
    words = [draw(prog)] + draw(st.lists(st.one_of(arg, globbed), max_size=4))
    if wrapped and draw(st.booleans()):
        words = [draw(wrappers)] + words
    words += draw(st.lists(redirs, max_size=2))
    return " ".join(words)


@st.composite
def nested_shell(draw):
    inner = draw(st.lists(simple(), min_size=1, max_size=3))
    sep = draw(separators)
    code = sep.join(inner)
    shell = draw(st.sampled_from(["bash -c", "sh -c", "bash -lc", "sh -ec"]))
    return f"{shell} {_quote(code, draw(st.integers(1, 2)))}"


@st.composite
def mixed(draw):
    parts = draw(st.lists(st.one_of(simple(), nested_shell(), expansions,
                                    st.builds(lambda c: f"( {c} )", simple()),
                                    st.builds(lambda c: f"{{ {c}; }}", simple()),
                                    st.builds(lambda d, c: f"cd {d}; {c}", st.sampled_from(["/etc", "..", "/", "~"]),
                                              simple())), min_size=1, max_size=3))
    out = parts[0]
    for p in parts[1:]:
        out += draw(separators) + p
    return out


FAMILIES = {
    "separators": st.builds(lambda a, s, b: a + s + b, simple(False), separators, simple(False)),
    "quoting_and_escapes": simple(False),
    "expansions_and_substitutions": st.one_of(expansions, st.builds(lambda e, a: f"{e} {a}", expansions, arg)),
    "wrappers": st.builds(lambda w, c: f"{w} {c}", wrappers, simple(False)),
    "nested_shells": nested_shell(),
    "redirections": st.builds(lambda c, r: f"{c} {r}", simple(False), redirs),
    "globs_and_braces": st.builds(lambda p, g: f"{p} {g}", prog, globbed),
    "encodings_and_paths": st.builds(lambda p, a: f"{p} {a}", prog, st.sampled_from(
        ["/tmp/%2e%2e/etc/shadow", "file:///etc/shadow", "~root/x", "/proc/self/root/etc/shadow", "//etc//shadow",
         "/etc/./shadow", "$'/etc/\\x73hadow'", "'/etc/sh''adow'", "/etc/sh\\adow"])),
}


@pytest.fixture(scope="module")
def box():
    b = Sandbox()
    yield b
    b.close()


def _run_family(box, strategy, n_batches, size, seed_name):
    totals = {"commands": 0, "refused": 0, "discrepancies": []}

    @settings(max_examples=n_batches, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.lists(strategy, min_size=size, max_size=size))
    def check(batch):
        found, ok, refused = compare(box, batch)
        totals["commands"] += len(batch)
        totals["refused"] += refused
        totals["discrepancies"] += found

    check()
    return totals


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family_has_no_discrepancy_with_real_bash(box, family):
    totals = _run_family(box, FAMILIES[family], 3, 100, family)
    assert totals["commands"] >= 300
    assert not totals["discrepancies"], totals["discrepancies"][:5]


@pytest.mark.slow
def test_twenty_thousand_generated_commands_have_no_discrepancy(box):
    n = int(os.environ.get("AG_SHELL_DIFF_N", "20000"))
    size = 500
    totals = _run_family(box, mixed(), max(1, n // size), size, "mixed")
    assert totals["commands"] >= n
    assert not totals["discrepancies"], totals["discrepancies"][:5]
    # the harness must not pass by refusing everything
    assert totals["refused"] < 0.9 * totals["commands"]


def test_the_harness_can_fail():
    """A deliberately blind analysis (the lexical splitter's view of $'..') is caught: the check is honest."""
    b = Sandbox()
    try:
        from agentguard.core.canonical import shell_commands
        cmd = "$'\\x72\\x6d' -rf /"
        [event] = [e for e in b.run([cmd])[0] if e[0] == "exec"]
        assert event[1] == "rm"
        assert "rm" not in [c.program for c in shell_commands(cmd)]   # the old splitter misses it
        assert "rm" in analyse(cmd).programs                            # the grammar does not
    finally:
        b.close()
