"""How a command's literal option words read as rule flags (:func:`flags_of`): the one reading of ``-rf``,
``--recursive``, ``--recur`` and ``-R`` that ``deny_commands`` and ``allow_commands``' ``deny_flags`` are matched with
(:mod:`agentguard.policies.commandrules`). Split from :mod:`.programs` (session 25) with the per-program aliases."""

from __future__ import annotations

from .programs import CASE_EXACT, SINGLE_DASH_LONG

__all__ = ["LONG_FLAG_ALIASES", "PROGRAM_FLAG_ALIASES", "flags_of"]

#: ``--recursive`` and ``-r`` are one rule flag (and so is any abbreviation, ``--recur``)
LONG_FLAG_ALIASES = {"--recursive": "r", "--force": "f"}
#: per program, long options that are another spelling of a short one (from the manuals: ripgrep 14, GNU sed 4.9,
#: grep 3.8, findutils xargs 4.9, coreutils sort/cp/ln/mv 9.1, GNU tar 1.34, Info-ZIP zip 3.0): a rule's flag in
#: either spelling meets the other (session 25: ``deny_flags = ["--search-zip"]`` let ``rg -z`` through)
PROGRAM_FLAG_ALIASES: dict[str, dict[str, str]] = {
    "rg": {"--search-zip": "z", "--follow": "L", "--text": "a", "--hidden": ".",
           "--file": "f", "--regexp": "e", "--replace": "r", "--invert-match": "v"},
    "sed": {"--in-place": "i", "--expression": "e", "--file": "f", "--separate": "s", "--null-data": "z",
            "--regexp-extended": "E", "--quiet": "n", "--silent": "n", "--unbuffered": "u"},
    **{g: {"--file": "f", "--dereference-recursive": "R", "--recursive": "r", "--regexp": "e",
           "--files-with-matches": "l", "--text": "a"} for g in ("grep", "egrep", "fgrep")},
    "xargs": {"--arg-file": "a", "--replace": "I", "--max-procs": "P", "--delimiter": "d",
              "--interactive": "p", "--no-run-if-empty": "r", "--verbose": "t"},
    "sort": {"--output": "o", "--reverse": "r", "--unique": "u"},
    **{c: {"--target-directory": "t", "--symbolic-link": "s", "--link": "l", "--archive": "a",
           "--no-dereference": "P", "--dereference": "L"} for c in ("cp", "ln", "mv")},
    "tar": {"--extract": "x", "--get": "x", "--create": "c", "--file": "f", "--directory": "C",
            "--files-from": "T", "--use-compress-program": "I", "--to-stdout": "O"},
    "zip": {"--recurse-paths": "r", "--move": "m", "--test": "T"},
}


def flags_of(program: str, words: list[str]) -> tuple[frozenset[str], tuple[str, ...]]:
    """``(flags, operands)`` of literal argument words (``-rf`` -> ``r``, ``f``; ``--x=v`` -> ``--x``).

    Words after ``--`` are operands. For :data:`SINGLE_DASH_LONG` programs ``-delete`` is one flag. Letters are
    case-folded (a rule's ``rm -r`` meets ``rm -R``), except for :data:`CASE_EXACT` programs (``chmod -r`` is no
    ``chmod -R``).
    """
    flags: set[str] = set()
    operands: list[str] = []
    ended = False
    for w in words:
        if ended:
            operands.append(w)
        elif w == "--":
            ended = True
        elif w.startswith("--") and len(w) > 2:
            name = w.split("=", 1)[0].casefold()
            # GNU getopt_long takes any unambiguous prefix: "rm --recur --forc" is "rm -r -f"
            aliases = {**LONG_FLAG_ALIASES, **PROGRAM_FLAG_ALIASES.get(program, {})}
            exact = aliases.get(name)
            alias = exact or next((v for k, v in aliases.items() if k.startswith(name) and len(name) > 2), name)
            if not alias.startswith("-") and program not in CASE_EXACT:
                alias = alias.casefold()   # as its short spelling is read
            alias = "R" if alias == "r" and program in ("chmod", "chown", "chgrp", "ls") else alias   # their -R
            flags.add(alias)
        elif w.startswith("-") and len(w) > 1 and not w[1:].isdigit():
            if program in SINGLE_DASH_LONG:
                flags.add(w.casefold())
            else:
                flags.update(w[1:].casefold() if w[1:].isalpha() and program not in CASE_EXACT else w[1:])
        else:
            operands.append(w)
    return frozenset(flags), tuple(operands)
