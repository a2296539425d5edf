"""Differential tests (issue 25): generated obfuscated commands run under real bash in a sandbox.

Every program that really ran, every word it got, every path a stub was handed and every file bash
opened must be one the analysis saw, unless the analysis refused the command as unresolvable
(``tests/policies/shell/shell_sandbox.py``). One test per variant family, then a seeded mix of at least 20,000
commands from a seeded generator (batched: one strace'd bash driver per batch of 500, two sandboxes in
parallel). ``AG_SHELL_DIFF_N`` raises the count for the longer run documented in
``benchmarks/results/shell_analysis.json``.
"""

from __future__ import annotations

import os
import queue
import random
import time
from concurrent.futures import ThreadPoolExecutor

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


GLOBBED = ["/etc/shad*w", "/etc/shado?", "/etc/[s]hadow", "/etc/{shadow,x}", "*", "sh*", "{a,b}.txt",
           "/etc/sha{d,x}ow", "~/.ss?/*", "[a-z]*", "*.{txt,md}", "{1..3}", ".*", "*/", "~/*"]
EXPANSIONS = ["$(printf rm)", "`printf rm`", "rm${IFS}-rf${IFS}/", "$x", "${x:-rm}", "\"$(echo /etc/shadow)\"",
              "$HOME/x", "$((1+2))", "x=rm; $x -rf /", "cat $(echo shadow)", "echo \"today $(date)\"",
              "echo $HOME", "printf '%s' \"$(cat shadow)\"", "echo *"]
WRAPPERS = ["timeout -k 5s 10", "timeout 3", "env -C /etc", "env -i", "env A=1", "nice -n 5", "nice -5", "nohup",
            "stdbuf -o0", "setsid", "env -S 'rm -rf /' #", "env --chdir=/tmp", "timeout --kill=1 2", "env -u HOME",
            "sudo -u root", "doas -u root", "chroot /", "strace -o f", "busybox"]
SEPARATORS = ["\n", ";", " && ", " || ", " | ", "\n\n", " ;\n "]
REDIRECTS = ["<", ">", ">>", "2>", "&>", "<>", "1>"]
ENCODED = ["/tmp/%2e%2e/etc/shadow", "file:///etc/shadow", "~root/x", "/proc/self/root/etc/shadow", "//etc//shadow",
           "/etc/./shadow", "$'/etc/\\x73hadow'", "'/etc/sh''adow'", "/etc/sh\\adow"]


class Pick:
    """The choices a generator makes: drawn by hypothesis (shrinkable) or by a seeded ``random.Random``."""

    def __init__(self, data=None, rng: random.Random | None = None):
        self.data, self.rng = data, rng

    def choice(self, seq):
        return self.data.draw(st.sampled_from(seq)) if self.data is not None else self.rng.choice(seq)

    def integer(self, lo: int, hi: int) -> int:
        return self.data.draw(st.integers(lo, hi)) if self.data is not None else self.rng.randint(lo, hi)

    def boolean(self) -> bool:
        return self.integer(0, 1) == 1


def g_prog(p: Pick) -> str:
    return _quote(p.choice(PROGS), p.integer(0, 5))


def g_arg(p: Pick) -> str:
    return _quote(p.choice(ARGS), p.integer(0, 5)) if p.integer(0, 2) else p.choice(GLOBBED)


def g_redirect(p: Pick) -> str:
    return p.choice(REDIRECTS) + _quote(p.choice(TARGETS), p.integer(0, 2))


def g_simple(p: Pick, wrapped: bool = True) -> str:
    words = [g_prog(p)] + [g_arg(p) for _ in range(p.integer(0, 4))]
    if wrapped and p.boolean():
        words = [p.choice(WRAPPERS)] + words
    return " ".join(words + [g_redirect(p) for _ in range(p.integer(0, 2))])


def g_nested_shell(p: Pick) -> str:
    code = p.choice(SEPARATORS).join(g_simple(p) for _ in range(p.integer(1, 3)))
    return f"{p.choice(['bash -c', 'sh -c', 'bash -lc', 'sh -ec'])} {_quote(code, p.integer(1, 2))}"


def g_part(p: Pick) -> str:
    k = p.integer(0, 5)
    if k == 0:
        return g_nested_shell(p)
    if k == 1:
        return p.choice(EXPANSIONS)
    if k == 2:
        return f"( {g_simple(p)} )" if p.boolean() else f"{{ {g_simple(p)}; }}"
    if k == 3:
        return f"cd {p.choice(['/etc', '..', '/', '~', 'x'])}; {g_simple(p)}"
    return g_simple(p)


def g_mixed(p: Pick) -> str:
    out = g_part(p)
    for _ in range(p.integer(0, 2)):
        out += p.choice(SEPARATORS) + g_part(p)
    return out


FAMILIES = {
    "separators": lambda p: g_simple(p, False) + p.choice(SEPARATORS) + g_simple(p, False),
    "quoting_and_escapes": lambda p: g_simple(p, False),
    "expansions_and_substitutions": lambda p: p.choice(EXPANSIONS) + (f" {g_arg(p)}" if p.boolean() else ""),
    "wrappers": lambda p: f"{p.choice(WRAPPERS)} {g_simple(p, False)}",
    "nested_shells": g_nested_shell,
    "redirections": lambda p: f"{g_simple(p, False)} {g_redirect(p)}",
    "globs_and_braces": lambda p: f"{g_prog(p)} {p.choice(GLOBBED)}",
    "encodings_and_paths": lambda p: f"{g_prog(p)} {p.choice(ENCODED)}",
    "mixed": g_mixed,
}


def generate(family: str, n: int, seed: int) -> list[str]:
    """``n`` commands of a family from a seeded generator (the fast path for the long runs)."""
    rng = random.Random(seed)
    return [FAMILIES[family](Pick(rng=rng)) for _ in range(n)]


@pytest.fixture(scope="module")
def box():
    b = Sandbox()
    yield b
    b.close()


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family_has_no_discrepancy_with_real_bash(box, family):
    """Hypothesis draws the choices (3 batches of 100 commands per family): a failure shrinks."""
    totals = {"commands": 0, "discrepancies": []}

    @settings(max_examples=3, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def check(data):
        batch = [FAMILIES[family](Pick(data=data)) for _ in range(100)]
        found, _, _ = compare(box, batch)
        totals["commands"] += len(batch)
        totals["discrepancies"] += found
        assert not found, found[:5]

    check()
    assert totals["commands"] >= 300


def run_many(n: int, seed: int = 25, size: int = 500, workers: int = 2) -> dict:
    """``n`` seeded mixed commands in batches of ``size``, ``workers`` sandboxes side by side."""
    batches = [generate("mixed", size, seed * 1_000_003 + k) for k in range(-(-n // size))]
    boxes = [Sandbox() for _ in range(workers)]
    free: queue.Queue[Sandbox] = queue.Queue()
    for b in boxes:
        free.put(b)

    def one(batch: list[str]):
        box = free.get()  # a sandbox runs one batch at a time
        try:
            return compare(box, batch)
        finally:
            free.put(box)

    t0 = time.perf_counter()
    try:
        with ThreadPoolExecutor(workers) as pool:
            results = list(pool.map(one, batches))
    finally:
        for b in boxes:
            b.close()
    found = [d for r in results for d in r[0]]
    return {"commands": sum(len(b) for b in batches), "distinct": len({c for b in batches for c in b}),
            "refused_unresolvable": sum(r[2] for r in results), "discrepancies": len(found),
            "examples": [(d.command, d.what) for d in found[:5]], "seconds": round(time.perf_counter() - t0, 1),
            "seed": seed, "batch": size, "workers": workers}


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_twenty_thousand_generated_commands_have_no_discrepancy():
    """20,000 seeded commands (``AG_SHELL_DIFF_N`` for the longer run), two sandboxes in parallel."""
    n = int(os.environ.get("AG_SHELL_DIFF_N", "20000"))
    totals = run_many(n)
    assert totals["commands"] >= n and totals["distinct"] > n // 2
    assert not totals["discrepancies"], totals["examples"]
    # the harness must not pass by refusing everything
    assert totals["refused_unresolvable"] < 0.9 * totals["commands"]


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
