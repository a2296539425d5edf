"""Canonical names, paths and shell commands (agentguard.core.canonical), issue 13."""

from __future__ import annotations

import pytest

from agentguard.core.canonical import canonical_name, canonical_path, shell_commands


@pytest.mark.parametrize("raw", ["book_hotel", "Book_Hotel", "BOOK-HOTEL", "book_hotel ", " book hotel",
                                 "book_hotel\u200b", "\ufeffbook\u200c_hotel", "ｂｏｏｋ＿ｈｏｔｅｌ", "book--hotel",
                                 "book_\u00adhotel", "Book\u2009Hotel"])
def test_spellings_of_one_tool_name_are_one_name(raw):
    assert canonical_name(raw) == "book_hotel"


def test_different_names_stay_different():
    assert canonical_name("book_hotel") != canonical_name("book_hotels")
    assert canonical_name("rm") != canonical_name("rmdir")


@pytest.mark.parametrize("raw,want", [
    ("/etc/shadow", "/etc/shadow"), ("//etc/shadow", "/etc/shadow"), ("/etc/./shadow", "/etc/shadow"),
    ("/etc//shadow/", "/etc/shadow"), ("/tmp/../etc/shadow", "/etc/shadow"), ("/tmp/%2e%2e/etc/shadow", "/etc/shadow"),
    ("/tmp/%252e%252e/etc/shadow", "/etc/shadow"), ("\\etc\\shadow", "/etc/shadow"), ("/../../etc/shadow", "/etc/shadow"),
    ("..\\secret", "../secret"), ("%2e%2e/secret", "../secret"), ("a/../../b", "../b"), ("notes.txt", "notes.txt"),
    ("/etc/sh\u200badow", "/etc/shadow"), ("%2Fetc%2Fshadow", "/etc/shadow"),
])
def test_paths_normalise_like_the_file_system_would_resolve_them(raw, want):
    assert canonical_path(raw) == want


@pytest.mark.parametrize("cmd", ["rm -rf /", "rm -r -f /", "rm -fr /", "rm -Rf /", "rm -f -R /", ["rm", "-rf", "/"],
                                 "/bin/rm -rf /", "sudo rm -rf /", "env A=1 rm -rf /", "ls && rm -rf /", "ls;rm -rf /",
                                 "echo x | rm -rf /", "bash -c 'rm -rf /'", "sh -lc \"rm -rf /\"",
                                 "sudo bash -c 'ls; rm -rf /'", "r'm' -rf /", "RM -RF /", "timeout 5 rm -rf /",
                                 "A=1 rm -rf /", "xargs rm -rf"])
def test_rm_rf_is_found_in_every_spelling(cmd):
    found = [c for c in shell_commands(cmd) if c.program == "rm"]
    assert found and {"r", "f"} <= set(found[0].flags), (cmd, shell_commands(cmd))


def test_long_flags_and_interpreters():
    [c] = shell_commands("rm --recursive --force /")
    assert {"--recursive", "--force"} <= c.flags
    progs = [c.program for c in shell_commands("python3.11 -c 'import os'; zsh -c 'mkfs.ext4 /dev/sda'")]
    assert "python" in progs and "zsh" in progs and "mkfs.ext4" in progs


def test_unbalanced_quotes_do_not_hide_commands():
    assert "rm" in [c.program for c in shell_commands("echo 'unterminated ; rm -rf /")]
