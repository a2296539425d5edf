"""The command rules of the rules guard as parsed from configuration (agentguard.policies.commandrules, split from
rules.py in session 17): what an entry means, and that a malformed one is refused at load."""

from __future__ import annotations

import pytest

from agentguard.core.errors import InputError
from agentguard.policies.commandrules import _allowed_command, _command_rule
from agentguard.policies.shell import analyse
from agentguard.policies.shell.flags import PROGRAM_FLAG_ALIASES


def _cmd(text: str):  # noqa: ANN202
    return analyse(text).commands[0]


def test_a_deny_entry_is_a_program_glob_and_the_flags_it_must_not_have_together() -> None:
    prog, flags = _command_rule("rm -rf", "t")
    assert prog.fullmatch("rm") and flags == {"r", "f"}
    prog, flags = _command_rule("mkfs*", "t")
    assert prog.fullmatch("mkfs_ext4") and not flags


@pytest.mark.parametrize("entry", ["", "  ", "rm /", 3, None])
def test_a_malformed_deny_entry_is_refused_at_load(entry) -> None:  # noqa: ANN001
    with pytest.raises(InputError):
        _command_rule(entry, "t")


def test_an_allow_entry_names_a_program_its_leading_arguments_and_denied_flags() -> None:
    status = _allowed_command("git status", "t")
    assert status.allows(_cmd("git status -s")) and not status.allows(_cmd("git push"))
    find = _allowed_command({"program": "find", "deny_flags": ["-delete"]}, "t")
    assert find.allows(_cmd("find . -name x")) and not find.allows(_cmd("find . -delete"))
    assert not _allowed_command("ls", "t").allows(_cmd("./ls"))  # a file named like the program is not it
    sed = _allowed_command({"program": "sed", "deny_flags": ["--in-place"]}, "t")
    assert not sed.allows(_cmd("sed --in-pl s/a/b/ f"))  # a GNU long option's prefix


@pytest.mark.parametrize("entry", [{"program": "find", "deny": ["-x"]}, {"program": ""}, {"args": ["x"]},
                                   {"program": "find", "deny_flags": ["delete"]}, 7])
def test_a_malformed_allow_entry_is_refused_at_load(entry) -> None:  # noqa: ANN001
    with pytest.raises(InputError):
        _allowed_command(entry, "t")


# Session 25: a deny_flags entry in one spelling met the other only where both were listed (rg's
# deny_flags = ["--search-zip"] let "rg -z" through): the per-program aliases read both as one flag.
@pytest.mark.parametrize("program,long,short", [(p, k, v) for p, table in PROGRAM_FLAG_ALIASES.items()
                                                for k, v in table.items()])
def test_deny_flags_meet_either_spelling(program: str, long: str, short: str) -> None:
    for rule in (long, "-" + short):
        entry = _allowed_command({"program": program, "deny_flags": [rule]}, "t")
        for spelled in (long, "-" + short, long[:max(4, len(long) - 2)]):
            cmd = analyse(f"{program} {spelled} x").commands[0]
            assert not entry.allows(cmd), (rule, spelled)
