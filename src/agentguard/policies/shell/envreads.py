"""Reads of the process environment (session 20): a command may print only variables it set itself or named here.

An agent's tools often run with secrets in their environment (``AWS_SECRET_ACCESS_KEY``, ``GITHUB_TOKEN``,
``OPENAI_API_KEY``...). A command reads them two ways, and both are one class here:

- **an expansion** ``$NAME`` / ``${NAME...}`` (in any word, a here-document body, a here-string, a ``[[ ]]`` test, a
  ``case`` word, an assignment's value): bash replaces it with the value, which ``echo "$TOKEN"`` prints and
  ``[[ $TOKEN == a* ]]`` reveals a character at a time;
- **a program or builtin that prints the environment**: ``env`` without a command (``env -0``, ``env -u X``,
  ``time env``), ``printenv`` (all, or the names it is given), ``export``/``declare``/``typeset``/``readonly``/
  ``local`` with no name or with ``-p`` (``export -p``, ``declare -x``), ``set`` with no argument; ``jq``'s ``env``
  and ``$ENV`` (:func:`~.options.jq_reason`). (``compgen``, ``ps e``, ``/proc/*/environ`` and interpreters' inline
  code were refused before: ``compgen`` runs commands, ``ps e`` is :func:`~.options.ps_reason`, ``/proc/*`` is in
  the example's ``deny_paths``, ``python -c`` is unresolvable.)

Guarantee: a read is allowed only when the name is in :data:`READABLE` (values that are not secrets: ``HOME``,
``PATH``, ``PWD``, ``USER``, ``LANG``, ``LC_*``...), a special or positional parameter (``$?``, ``$#``, ``$1``,
``$@``), or a variable the command itself *certainly* set before the read: a plain assignment ``NAME=...`` (or
``export``/``declare``/``typeset``/``readonly NAME=...``) that is a statement of the text's top level (or of a loop
body, ``{ }`` group or subshell, for reads inside it), not in the background (``&``), a pipeline, a condition, a name
made read-only before, or the right side of ``&&``/``||`` (:func:`definite_assignment`; bash
confirms ``true || T=1; echo $T``, ``(T=1); echo $T``, ``T=1 & wait; echo $T`` and ``T=1 echo $T`` all print the
environment's ``T``), a ``for``/``select`` variable inside its body, and the names of a ``while read NAME...``
inside its body (``read`` at end of input empties them). Whatever else reads a variable is refused with its name
(fail closed: an expansion whose name the parser does not show is refused too). A name set inside ``$(...)`` or a
nested text counts only there (a subshell's assignment does not reach its parent); a payload text (``sh -c``)
sees the names set before it, which is sound: assigning a name that came from the environment changes the
exported value, and a name that did not come from the environment holds no secret of it.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from .model import WalkerBase
from .words import Word

__all__ = ["ALL", "EnvReader", "READABLE", "definite_assignment", "env_split", "expansion_name", "readable", "while_read_names"]

#: the name :meth:`EnvReader.read_env` is given for a read of the whole environment (no parameter is called "=")
ALL = "="
#: environment variables whose values are not secrets: where the shell and the user are, the locale and terminal
READABLE = frozenset({
    "HOME", "PWD", "OLDPWD", "USER", "LOGNAME", "SHELL", "PATH", "LANG", "LANGUAGE", "TERM", "TZ", "TMPDIR",
    "HOSTNAME", "HOSTTYPE", "OSTYPE", "MACHTYPE", "UID", "EUID", "PPID", "BASHPID", "BASH", "BASH_VERSION",
    "RANDOM", "SRANDOM", "SECONDS", "LINENO", "EPOCHSECONDS", "EPOCHREALTIME", "PIPESTATUS", "SHLVL", "IFS",
    "COLUMNS", "LINES", "VIRTUAL_ENV", "CONDA_DEFAULT_ENV", "_",
})
_READABLE_RE = re.compile(r"LC_[A-Z_]+")
#: options of the declaration builtins that print (``-p``), or list by attribute when no name follows
_DECLARES = ("export", "declare", "typeset", "readonly", "local")
_SETTERS = ("export", "declare", "typeset", "readonly")  # ``local`` outside a function fails and sets nothing
_READ_VALUES = frozenset("adinNptu")
#: statement lists run in order, whose assignments count for what follows inside them (the walk forgets them at the
#: end of a loop body, a { } group or a subshell: .grammar)
_SEQUENCES = frozenset({"program", "do_group", "compound_statement", "subshell"})  # read's options that take a value


def env_split(text: str) -> tuple[list[str], list[str]] | None:
    """``env -S TEXT`` split as env splits it (quotes, ``#`` comments): the names its leading ``NAME=value`` words
    assign and the command words after them; None when the quotes do not balance. Without command words env prints the
    environment (``env -S ''`` and ``env -S 'X=1'`` did, coreutils 9.1)."""
    try:
        parts = shlex.split(text, comments=True)
    except ValueError:
        return None
    k = next((i for i, p in enumerate(parts) if not re.fullmatch(r"[A-Za-z_]\w*=.*", p, re.S)), len(parts))
    return [p.split("=", 1)[0] for p in parts[:k]], parts[k:]


def readable(name: str) -> bool:
    """Whether reading ``name`` reads no secret of the environment (a special or positional parameter, or
    :data:`READABLE`)."""
    return not re.fullmatch(r"[A-Za-z_]\w*", name) or name in READABLE or bool(_READABLE_RE.fullmatch(name))


def expansion_name(node: Any, src: bytes) -> str | None:
    """The parameter an expansion node (``$X``, ``${#X}``, ``${X:-y}``, ``${a[@]}``, ``${#}``) reads, or None when
    the parser shows none."""
    for c in node.children:
        if c.type == "subscript":
            c = next((x for x in c.children if x.type == "variable_name"), None) or c
        if c.type in ("variable_name", "special_variable_name"):
            return src[c.start_byte:c.end_byte].decode(errors="replace")
        if c.is_named:
            return None
    return "#" if src[node.start_byte:node.end_byte] == b"${#}" else None


def definite_assignment(node: Any) -> bool:
    """Whether the assignment ``node`` certainly replaces the variable's value before what follows it in its statement
    list: ``NAME=...`` (not ``NAME+=...``, not ``NAME[i]=...``) as a statement of the text's top level, a loop body, a
    ``{ }`` group or a subshell (maybe in ``NAME=1 OTHER=2``, after ``export``, or the left end of an ``&&``/``||``
    list), not put in the background. The walk keeps it only to the end of that list."""
    n = node
    name = node.child_by_field_name("name")
    if name is None or name.type != "variable_name" or any(c.type == "+=" for c in node.children):
        return False  # "T+=x" keeps the environment's value in front, "T[1]=x" its value as element 0 (bash 5.2)
    if n.parent is not None and n.parent.type == "variable_assignments":
        n = n.parent
    if n.parent is not None and n.parent.type == "declaration_command":
        if not n.parent.children or n.parent.children[0].type not in _SETTERS:
            return False
        n = n.parent
    while n.parent is not None and n.parent.type == "list" and n.parent.children[0] == n:
        n = n.parent
    if n.parent is None or n.parent.type not in _SEQUENCES:
        return False
    nxt = n.next_sibling
    return nxt is None or nxt.type != "&"


def while_read_names(node: Any, src: bytes) -> set[str]:
    """The names ``while read [options] NAME...; do BODY; done`` sets before each run of BODY (none for ``until``,
    another condition, or a word that is not fixed)."""
    if not node.children or node.children[0].type != "while":
        return set()
    conds = [c for c in node.children[1:] if c.is_named and c.type not in ("do_group", "comment")]
    cond = conds[0] if len(conds) == 1 else None  # "while read -u 9 T; true; do": the last one decides (bash)
    if cond is None or cond.type != "command":
        return set()
    parts = [c for c in cond.children if c.type != "variable_assignment"]  # "while IFS= read -r line"
    words = [src[c.start_byte:c.end_byte].decode(errors="replace") for c in parts]
    if not words or parts[0].type != "command_name" or words[0] != "read" or \
            any(c.type not in ("word", "number") for c in parts[1:]):
        return set()
    names: set[str] = set()
    i = 1
    while i < len(words):
        w = words[i]
        i += 1
        if w == "--":
            names.update(n for n in words[i:] if re.fullmatch(r"[A-Za-z_]\w*", n))
            break
        if w.startswith("-") and len(w) > 1:
            letters = w[1:]
            if "t" in letters.split("d", 1)[0].split("p", 1)[0]:
                return set()  # "read -t 0 NAME" succeeds when input is waiting and assigns nothing (bash 5.2)
            for j, ch in enumerate(letters):
                if ch in _READ_VALUES:
                    value = letters[j + 1:]
                    if not value:
                        value = words[i] if i < len(words) else ""
                        i += 1
                    if ch == "a" and re.fullmatch(r"[A-Za-z_]\w*", value):
                        names.add(value)  # -a NAME: the array ($NAME is its first element)
                    break
            continue
        if re.fullmatch(r"[A-Za-z_]\w*", w):
            names.add(w)
    return names


class EnvReader(WalkerBase):
    """The reads of the environment a walk meets (see the module docstring)."""

    def read_env(self, name: str | None, what: str) -> None:
        """Refuse reading ``name`` (:data:`ALL`: the whole environment; None: a name the parser does not show)
        unless it is :func:`readable` or the command set it (:attr:`~.model.WalkerBase.own_vars`)."""
        if name == ALL:
            self.refuse(f"{what} prints the environment (its variables may hold secrets)")
        elif name is None:
            self.refuse(f"{what}: an expansion whose variable is not shown (it may read the environment)")
        elif not readable(name) and name not in self.own_vars:
            self.refuse(f"{what} reads the environment variable {name} (it may hold a secret; only variables the "
                        "command sets itself and a few such as HOME and PATH are readable)")

    def printed(self, name: str, args: list[Word]) -> None:
        """The variables ``printenv``, ``set`` and the declaration builtins print (none for other programs)."""
        if name not in ("printenv", "set") + _DECLARES:
            return
        if any(not w.literal for w in args):
            return self.read_env(ALL, f"{name} with a word that is not fixed")
        opts = [w.text for w in args if w.text.startswith(("-", "+")) and w.text not in ("-", "--")]
        names = [w.text.split("=", 1)[0] for w in args if not w.text.startswith(("-", "+")) or w.text == "-"]
        if name == "readonly" or (name in _DECLARES and any("r" in o[1:] for o in opts if o.startswith("-"))):
            self.frozen.update(names)  # "readonly T; export T=1" fails, and T keeps the environment's value
        if name == "set":
            return self.read_env(ALL, "set") if not args else None
        if name == "printenv" or any("p" in o[1:] for o in opts if o.startswith("-")):
            for n in names:
                self.read_env(n, name)
        if not names:
            self.read_env(ALL, f"{name} {' '.join(opts)}".strip())
