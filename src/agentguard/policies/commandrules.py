"""The shell-command rules of :class:`~.rules.ToolRuleGuard` as parsed from its configuration: a ``deny_commands``
entry (``"rm -rf"``: a program glob and the flags it must not have together) and an ``allow_commands`` entry
(``"git status"`` or ``{program = "find", args = [...], deny_flags = [...]}``). Split from :mod:`.rules`, which
documents what they mean; a malformed entry raises :class:`~agentguard.core.errors.InputError` at load. Also the
reading of a command argument the rules match (:func:`_analyse`: a string, or an argv list read both ways) and
:func:`_plain`, the arguments a refusal by name may leave unread."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..core.canonical import canonical_name
from ..core.errors import InputError
from .shell import Analysis, Command, analyse, analyse_argv
from .shell.flags import flags_of

__all__: list[str] = []  # private to the rules guard


def _command_rule(entry: Any, what: str) -> tuple[re.Pattern[str], frozenset[str]]:
    """``"rm -rf"`` -> (program glob, required canonical flags {r, f})."""
    if not isinstance(entry, str) or not entry.strip():
        raise InputError(f"{what}: command rules must be non-empty strings like 'rm -rf', got {entry!r}")
    words = entry.split()
    if any(not w.startswith("-") for w in words[1:]):
        raise InputError(f"{what}: {entry!r}: only a program and its flags, not operands")
    flags, _ = flags_of(canonical_name(words[0]), words[1:])
    return re.compile(fnmatch.translate(canonical_name(words[0]))), flags


@dataclass(frozen=True)
class _AllowedCommand:
    """One ``allow_commands`` entry: a program glob, the argument words that must follow it, denied flags."""

    text: str
    program: re.Pattern[str]
    args: tuple[str, ...]
    deny_flags: frozenset[str]

    def allows(self, cmd: Command) -> bool:
        if not self.program.fullmatch(cmd.program):
            return False
        if cmd.argv and "/" in cmd.argv[0]:
            return False  # ./ls, /tmp/x/ls: a file named like an allowed program is not that program
        words = cmd.words[1:] if cmd.words else ()
        if self.args:
            if len(words) < len(self.args):
                return False
            if any(not w.literal or w.text != a for w, a in zip(words, self.args)):
                return False
        if self.deny_flags and (cmd.unknown_args or self.deny_flags & cmd.flags or any(
                d.startswith(f) for d in self.deny_flags if d.startswith("--")
                for f in cmd.flags if f.startswith("--") and len(f) > 2)):
            return False  # GNU long options may be abbreviated: "sed --in-pl" is "sed --in-place"
        return True


def _allowed_command(entry: Any, what: str) -> _AllowedCommand:
    """``"git status"`` or ``{program = "find", deny_flags = ["-delete"]}`` (see the module docstring)."""
    if isinstance(entry, str) and entry.strip():
        words = entry.split()
        return _AllowedCommand(entry, re.compile(fnmatch.translate(canonical_name(words[0]))), tuple(words[1:]),
                               frozenset())
    if isinstance(entry, Mapping) and isinstance(entry.get("program"), str) and entry["program"].strip():
        unknown = set(entry) - {"program", "args", "deny_flags"}
        if unknown:
            raise InputError(f"{what}: unknown key(s) {', '.join(sorted(unknown))} in {dict(entry)!r}")
        args = entry.get("args", [])
        deny = entry.get("deny_flags", [])
        if not all(isinstance(a, str) for a in args) or not all(isinstance(d, str) and d.startswith("-")
                                                               for d in deny):
            raise InputError(f"{what}: 'args' must be strings and 'deny_flags' options like '-r', got {dict(entry)!r}")
        prog = canonical_name(entry["program"])
        flags, _ = flags_of(prog, list(deny))
        return _AllowedCommand(str(dict(entry)), re.compile(fnmatch.translate(prog)), tuple(args), flags)
    raise InputError(f"{what}: entries are strings like 'git status' or tables with 'program', got {entry!r}")


def _analyse(text: Any, cwds: Sequence[str] = (), each: bool = False) -> Analysis:
    """A command string, or an argv list read both as argv and as the string a tool may join it into (and,
    with ``each``, every element as a command of its own: a ``commands`` list runs one per element)."""
    if isinstance(text, list):
        parts = [analyse(" ".join(str(a) for a in text), cwds)]
        parts += [analyse(str(a), cwds) for a in text] if each else [analyse_argv(text, cwds)]
        return Analysis([c for a in parts for c in a.commands], [p for a in parts for p in a.paths],
                        [u for a in parts for u in a.unresolvable], [t for a in parts for t in a.subtrees],
                        [f for a in parts for f in a.writes])
    return analyse(text, cwds)


#: an integer of at most this many bits has fewer decimal digits than ``sys.get_int_max_str_digits()``'s default
_INT_BITS = 13_000


def _plain(arguments: Any, limit: int = 1024) -> bool:
    """True when ``arguments`` is plain JSON as the service's strict reader gives it (dicts with string keys, lists,
    strings without a lone surrogate, booleans, None, finite floats, integers of at most :data:`_INT_BITS` bits; at
    most ``limit`` values): the rules' reading of it gives a verdict, never an error. Anything else (a huge integer,
    ``"\\udc80"``, an object of the caller's) may make the reading fail, and a failure is the caller's ``on_error``
    (HALT by default), not the name's refusal: :meth:`.rules.ToolRuleGuard.check` then reads it as before."""
    todo = [arguments]
    while todo:
        v = todo.pop()
        limit -= 1
        t = type(v)
        if limit < 0:
            return False
        if t is str:
            if not v.isascii():
                try:
                    v.encode("utf-8")
                except UnicodeEncodeError:
                    return False
        elif t is dict:
            if any(type(k) is not str for k in v):
                return False
            todo.extend(v)
            todo.extend(v.values())
        elif t is list:
            todo.extend(v)
        elif t is int:
            if v.bit_length() > _INT_BITS:
                return False
        elif t is float:
            if v - v != 0.0:  # inf, nan
                return False
        elif not (t is bool or v is None):
            return False
    return True
