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


def test_a_namespace_prefix_cannot_carry_a_tool_past_a_refusing_rule() -> None:
    """An MCP proxy serving several upstreams names their tools ``one__delete_note``; other hosts write
    ``github.create_issue`` or ``srv/tool``. A deny, halt or escalate glob (or an argument rule's tool)
    written for the bare name must still meet it; an allow list grants the whole name only."""
    from hypothesis import given, strategies as hst

    from agentguard.core import ToolCall
    from agentguard.core.canonical import name_forms
    from agentguard.policies.rules import ArgumentRule, ToolRuleGuard

    assert name_forms("Mail__Delete-Note") == ("mail_delete_note", "delete_note")
    assert name_forms("a/b/c") == ("a/b/c", "b/c", "c")
    assert name_forms("one\u200b_\u200b_delete")[-1] == "delete"
    g = ToolRuleGuard(allow=["*"], deny=["delete_*"], halt=["format_*"], escalate=["pay"],
                      arguments=[ArgumentRule("send_email", "to", match=r".*@corp\.com")])
    for prefix in ["one__", "github.", "srv/", "x:", "mcp__srv__", "ONE__"]:
        assert g.check(None, ToolCall(prefix + "delete_note", {})).decision.name == "REJECT"  # type: ignore[arg-type]
        assert g.check(None, ToolCall(prefix + "format_disk", {})).decision.name == "HALT"  # type: ignore[arg-type]
        assert g.check(None, ToolCall(prefix + "pay", {})).decision.name == "ESCALATE"  # type: ignore[arg-type]
        bad = ToolCall(prefix + "send_email", {"to": "eve@evil.org"})
        assert g.check(None, bad).decision.name == "REJECT"  # type: ignore[arg-type]
    only = ToolRuleGuard(allow=["read_*"])
    assert only.check(None, ToolCall("evil__read_file", {})).decision.name == "REJECT"  # type: ignore[arg-type]

    @given(hst.lists(hst.sampled_from(["one", "Srv", "a-b", "x"]), max_size=3),
           hst.lists(hst.sampled_from(["__", ".", "/", ":"]), min_size=3, max_size=3))
    def prop(parts: list[str], seps: list[str]) -> None:
        name = "".join(p + s for p, s in zip(parts, seps)) + "delete_note"
        assert g.check(None, ToolCall(name, {})).decision.name == "REJECT"  # type: ignore[arg-type]

    prop()


def test_an_allow_list_keeps_the_namespace_separator():
    """Session 13: ``read__file`` (the tool ``file`` of an upstream ``read``, as an MCP proxy names it) was granted
    by ``allow = ["read_file"]``: canonical_name collapses ``__`` to ``_``; a grant compares grant_name forms."""
    from agentguard.core.canonical import grant_name
    from agentguard.core.types import ToolCall
    from agentguard.policies.rules import ToolRuleGuard

    assert grant_name("fs__Read-File") == "fs__read_file" and grant_name("Read-File ") == "read_file"
    g = ToolRuleGuard(allow=["read_file", "time__get_current_time"])
    # session 18: a grant also needs the name as written (a framework runs the tool its exact name finds), so
    # "Read-File" is another tool than "read_file" to a grant while every refusing rule still folds it
    for name, ok in [("read_file", True), ("Read-File", False), ("read__file", False), ("time__get_current_time", True),
                     ("time_get_current_time", False), ("Time__Get-Current-Time", False)]:
        assert (g.check(None, ToolCall(name, {})).decision.name == "ALLOW") is ok, name  # type: ignore[arg-type]


def test_grant_name_cached_is_grant_name_computed():
    from agentguard.core.canonical import _grant_text, grant_name

    class Name(str):
        pass

    for raw in ["fs__Read-File", "read_file\u200b", "Ｒead_file", "a" * 300 + "__x", Name("A__b"), 42]:
        want = _grant_text(str(raw)[:4096])
        assert grant_name(raw) == want and grant_name(raw) == want  # (the second from the cache)
