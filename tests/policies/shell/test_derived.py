"""agentguard.policies.shell.derived: the names cp/mv/ln back up under and gzip/gunzip write (unit cases; the
attacks and the differential against the real programs are in test_analysis_redteam_s17.py)."""

from __future__ import annotations

import pytest

from agentguard.policies.shell.derived import derived_outputs
from agentguard.policies.shell.words import Word, literal_word


def names(name: str, *args: str) -> list[str] | str:
    got = derived_outputs(name, [literal_word(a) for a in args])
    return got if isinstance(got, str) else sorted(w.text for w in got)


@pytest.mark.parametrize("name,args,want", [
    ("cp", ("a", "b"), []),                                             # no backup
    ("cp", ("-b", "a", "b"), ["b/a~", "b~"]),                           # default suffix; b may be a directory
    ("cp", ("-S", "rc", "a", "b"), ["b/arc", "brc"]),                   # a suffix alone backs up
    ("cp", ("-bSrc", "a", "b"), ["b/arc", "brc"]),                      # attached in a cluster
    ("cp", ("--suffix=.old", "a", "b"), ["b.old", "b/a.old"]),
    ("mv", ("--suf", "x", "a", "b"), ["b/ax", "bx"]),                   # a long option by its prefix
    ("ln", ("-t", "d", "-b", "a", "c"), ["d/a~", "d/c~"]),              # into a target directory
    ("cp", ("-b", "--", "-a", "b"), ["b/-a~", "b~"]),                   # after "--" every word is an operand
    ("gzip", ("a",), ["a.gz"]),
    ("gzip", ("-S", "rc", "a", "b"), ["arc", "brc"]),
    ("gzip", ("-c", "a"), []), ("gzip", ("--stdout", "a"), []), ("gzip", ("-t", "a.gz"), []),
    ("gunzip", ("a.gz",), ["a", "a.gz"]),                               # a.gz -> a; "a.gz" itself: a.gz.gz
    ("gunzip", ("a",), ["a"]),                                          # reads a.gz, writes a
    ("gzip", ("-d", "-S", ".x", "a.x"), ["a", "a.x"]),
    ("gunzip", ("t.tgz",), ["t.tar", "t.tgz"]),
    ("cat", ("a",), []),
    ("git", ("clone", "https://h/o/repo.git"), ["repo"]),                 # clone names its directory after the URL
    ("git", ("clone", "-b", "main", "git@h:o/x/.git"), ["x"]),
    ("git", ("clone", "--depth", "1", "https://h/autostart/"), ["autostart"]),
    ("git", ("clone", "https://h/o/r", "dir"), []),                       # a named directory is an operand
    ("git", ("submodule", "add", "https://h/nvim.git"), ["nvim"]),
    ("git", ("status",), []),
    ("curl", ("-O", "https://h/a/ls"), ["./ls"]),                          # the URL's last path component
    ("curl", ("--output-dir", "/usr/local/bin", "-O", "https://h/ls"), ["/usr/local/bin/ls"]),
    ("curl", ("-sSL", "https://h/a", "-o", "out"), []),                      # -o names the file: an operand
    ("wget", ("https://h/x%2epth",), ["./x%2epth", "./x.pth"]),            # as written and decoded
    ("wget", ("-P", "/etc/profile.d", "https://h/a.sh"), ["/etc/profile.d/a.sh"]),
    ("wget", ("https://h/",), ["./index.html"]),
    ("wget", ("-qO-", "https://h/a"), []),
    ("bunzip2", ("a.bz2",), ["a", "a.bz2"]), ("bzip2", ("-d", "t.tbz2"), ["t.tar", "t.tbz2"]),
    ("xz", ("-S", "rc", "a"), ["arc"]), ("unxz", ("a.lzma",), ["a", "a.lzma"]), ("zstd", ("a",), ["a.zst"]),
    ("zstd", ("-d", "a.zst", "-o", "b"), []), ("lz4", ("-d", "a.lz4"), ["a", "a.lz4"]),
    ("uncompress", ("a.Z",), ["a", "a.Z"]), ("bzcat", ("a.bz2",), []), ("xz", ("-dc", "a.xz"), []),
])
def test_derived_names(name, args, want):
    assert names(name, *args) == want


@pytest.mark.parametrize("name,args", [("gunzip", ("-r", "d")), ("gzip", ("-r", "-S", "rc", "d")),
                                       ("gzip", ("--recursive", "-d", "d")), ("cp", ("-r", "-b", "d", "e")),
                                       ("cp", ("-a", "--suffix=rc", "d", "e")), ("mv", ("-R", "-b", "d", "e")),
                                       ("curl", ("-OJ", "https://h/a")), ("curl", ("-K", "cfg", "https://h/a")),
                                       ("wget", ("-r", "https://h/")), ("wget", ("--content-disposition", "https://h/a")),
                                       ("wget", ("-i", "urls.txt")),
                                       ("wget", ("-e", "output_document=~/.bashrc", "https://h/a")),
                                       ("wget", ("--config=w.rc", "https://h/a"))])
def test_names_a_tree_chooses_are_refused(name, args):
    assert isinstance(names(name, *args), str)


def test_split_pieces_are_one_glob_of_generated_suffixes():
    (w,) = derived_outputs("split", [literal_word(t) for t in ("-l", "1", "f", "out_")])
    assert w.text == "out_*" and not w.literal
    (w,) = derived_outputs("split", [literal_word(t) for t in ("--additional-suffix=.txt", "f")])
    assert w.text == "x*.txt"


def test_an_unknown_word_may_be_an_option_so_nothing_is_derived_from_it():
    unknown = Word("*", (("*", (True, frozenset())),), literal=False, unknown=True)
    assert isinstance(derived_outputs("cp", [literal_word("a"), unknown]), str)
    assert isinstance(derived_outputs("gzip", [unknown]), str)
    assert derived_outputs("gzip", [literal_word("-c"), unknown]) == []   # standard output whatever it is


@pytest.mark.parametrize("args,want", [
    (("--parents", "autostart/x.desktop", "h/.config"), ["h/.config/autostart/x.desktop", "h/.config/x.desktop"]),
    (("--pa", "a/b", "d"), ["d/a/b", "d/b"]),                       # "--pa" is cp's shortest prefix of --parents
    (("--parents", "-t", "d", "/a/b"), ["d/a/b", "d/b"]),           # an absolute source keeps its path below d
    (("a/b", "d"), ["d/b"]),                                        # without --parents: the basename only
])
def test_cp_parents_writes_the_whole_source_path_below_the_target(args: tuple[str, ...], want: list[str]) -> None:
    from agentguard.policies.shell.derived import into_directory

    assert sorted(w.text for w in into_directory("cp", [literal_word(a) for a in args])) == want
