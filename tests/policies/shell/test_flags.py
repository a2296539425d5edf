"""agentguard.policies.shell.flags: one reading of an option in its spellings (session 25: rg -z / --search-zip)."""

from __future__ import annotations

import pytest

from agentguard.policies.shell.flags import PROGRAM_FLAG_ALIASES, flags_of


@pytest.mark.parametrize("program,words,flags", [
    ("rg", ["--search-zip"], {"z"}), ("rg", ["-z"], {"z"}), ("rg", ["--pre"], {"--pre"}),
    ("sed", ["--in-pl"], {"i"}), ("sed", ["-i"], {"i"}), ("rm", ["--recur", "--forc"], {"r", "f"}),
    ("chmod", ["--recursive"], {"R"}), ("grep", ["--dereference-recursive"], {"r"}), ("grep", ["-R"], {"r"}),
    ("find", ["-delete"], {"-delete"}), ("ls", ["-r"], {"r"}), ("ls", ["-R"], {"R"}),
])
def test_an_option_reads_as_one_flag_in_its_spellings(program: str, words: list[str], flags: set[str]) -> None:
    assert flags_of(program, words)[0] == frozenset(flags)


def test_flags_in_any_spelling() -> None:  # (moved from test_programs with flags_of)
    assert flags_of("rm", ["-rf", "/"]) == (frozenset("rf"), ("/",))
    assert flags_of("rm", ["--recursive", "--force", "--", "-x"])[0] == frozenset("rf")
    assert flags_of("rm", ["--", "-x"])[1] == ("-x",)
    assert "-delete" in flags_of("find", [".", "-delete"])[0]


def test_every_alias_is_a_short_option_in_the_programs_reading() -> None:
    for program, table in PROGRAM_FLAG_ALIASES.items():
        for long, short in table.items():
            assert flags_of(program, [long])[0] == flags_of(program, ["-" + short])[0], (program, long)
