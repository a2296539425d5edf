"""Session 23: over-refusals of the shell reader, confirmed on the real programs, and the spoofing class they border.

- **Short options read case-folded** (:data:`~agentguard.policies.shell.programs.RECURSIVE`): ``ls -r /etc``
  (reverse order, one directory) was refused as ``ls -R /etc`` (a recursive listing naming every file below), and
  ``ls -lrt /`` likewise. getopt compares letters exactly: each program's recursive letters are now listed as that
  program spells them (``rm``, ``cp``, ``grep``: ``-r`` and ``-R``; ``ls``, ``chmod``, ``chown``: ``-R`` only). The
  old table also lost ``gzip``, ``gunzip`` and ``chmod`` inside a comment.
- **Program names with upper case** (:func:`~agentguard.policies.shell.model.spelled_name_reason`): ``R
  --version`` and ``Rscript x.R`` were refused for their case. bash runs a name as written, so an exact known program
  name (``R``, ``Rscript``, ``Xvfb``: :data:`~agentguard.policies.shell.model.CASED_PROGRAMS`) is read as that
  program (``R -e`` is inline code, like ``Rscript -e``); ``HEAD`` (libwww-perl's web client, folded ``head``),
  ``LS`` and fullwidth ``ｌｓ`` stay refused, and are read on as their folded program, so the network guard sees
  ``CURL 0:8080`` as curl's (on a case-insensitive file system it runs curl).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.dirname(__file__))
from test_analysis_redteam import refused  # noqa: E402

from agentguard.policies.shell import analyse  # noqa: E402

ALLOWED = ["ls -r src", "ls -lr /etc", "ls -lrt /", "ls -r ~", "ls --reverse /etc", "ls -r -- /etc", "chmod -r x.txt"]
REFUSED = ["ls -R /etc", "ls -lR ~", "ls --recursive ~", "ls --rec /etc", "ls -r -R ~", "grep -R x ~", "grep -r x ~",
           "cp -R /etc x", "cp -r ~/.ssh x", "HEAD http://example.com/", "LS -R ~", "ｌｓ -R ~", "Head x",
           "R -e 'system(\"id\")'", "R", "R < x.R", "Rscript -e 1", "chmod -R 755 src", "rm -R x", "rm -Rf x"]


@pytest.mark.parametrize("command", ALLOWED)
def test_reverse_listing_is_not_recursive(command: str) -> None:
    assert not refused(command), analyse(command).unresolvable


@pytest.mark.parametrize("command", REFUSED)
def test_recursive_and_spoofed_names_stay_refused(command: str) -> None:
    assert refused(command)


def test_exact_cased_program_names_are_read_as_that_program() -> None:
    for command, program in [("R --version", "r"), ("Rscript x.R", "rscript"), ("Xvfb :99", "xvfb"),
                             ("/usr/bin/R --version", "r")]:
        a = analyse(command)
        assert a.unresolvable == [] and [c.program for c in a.commands] == [program], command
    a = analyse("HEAD http://x")   # refused, and still read as a command (other readers see it)
    assert a.unresolvable and [c.program for c in a.commands] == ["head"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash (the oracle)")
def test_bash_runs_names_as_written(tmp_path: Path) -> None:
    """The oracle for the name rule: with ``head`` and ``HEAD`` both on PATH, bash runs each as written."""
    for name in ("head", "HEAD"):
        script = tmp_path / name
        script.write_text(f"#!/bin/sh\necho {name}-ran\n")
        script.chmod(0o755)
    if (tmp_path / "head").read_text() == (tmp_path / "HEAD").read_text():
        pytest.skip("case-insensitive file system")
    out = subprocess.run([shutil.which("bash") or "bash", "-c", "head; HEAD"], capture_output=True, text=True,
                         timeout=10, env={"PATH": str(tmp_path)}).stdout.split()
    assert out == ["head-ran", "HEAD-ran"]


_LS_LETTERS = st.text(alphabet="lartRhS1d", min_size=1, max_size=4)


@pytest.mark.skipif(shutil.which("ls") is None, reason="needs ls")
@settings(max_examples=30, deadline=None)
@given(letters=_LS_LETTERS)
def test_ls_tree_reading_matches_real_ls(tmp_path_factory: pytest.TempPathFactory, letters: str) -> None:
    """Differential with the real ls: the reader reads the directory's tree exactly when ls prints a name below it."""
    top = tmp_path_factory.mktemp("lsr")
    (top / "sub").mkdir()
    (top / "sub" / "deep_marker").write_text("x")
    out = subprocess.run(["ls", f"-{letters}", str(top)], capture_output=True, text=True, timeout=10).stdout
    listed_below = "deep_marker" in out
    subtrees = [str(p[0]) for p in analyse(f"ls -{letters} {top}").subtrees]
    if listed_below:   # sound: every listing that names a file below is read as one
        assert str(top) in subtrees, (letters, subtrees)
    if "R" not in letters:   # and no reverse (-r), -a, -t... is read as one (-Rd lists no contents: read wide)
        assert str(top) not in subtrees, (letters, subtrees)


def test_rule_flags_are_case_exact_where_the_program_reads_them_so() -> None:
    """A rule's ``chmod -R`` (the shipped deny list) no longer meets ``chmod -r`` (remove read permission: GNU chmod
    reads ``-r`` as a mode); ``rm -r`` still meets ``rm -R`` (synonyms: folded for programs not in CASE_EXACT)."""
    from agentguard.policies.shell.flags import flags_of

    assert flags_of("chmod", ["-r"])[0] == {"r"} and flags_of("chmod", ["-R"])[0] == {"R"}
    assert flags_of("ls", ["-lR"])[0] == {"l", "R"} and flags_of("rm", ["-Rf"])[0] == {"r", "f"}
