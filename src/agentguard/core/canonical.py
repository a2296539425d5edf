"""Canonical tool names, commands and paths: what every rule sees instead of the raw text.

An attacker (or a confused model) writes ``Book_Hotel``, ``book_hotel `` (trailing space),
``book\u200bhotel`` (zero-width space), ``rent-car``, ``Shell``, ``rm -r -f``, ``..\\``, ``%2e%2e/``,
``//etc/shadow`` or ``/etc/./shadow`` to slip past a rule written for ``book_hotel``, ``shell``,
``rm -rf`` or ``/etc/shadow``. Rules therefore match the canonical forms defined here:

- :func:`canonical_name` (tool names and rule patterns): Unicode NFKC (full-width and compatibility
  letters become plain ones), invisible format characters removed (zero-width space/joiners, BOM,
  soft hyphen, bidi controls: every character of Unicode category Cf), case folded, surrounding
  whitespace removed, and every run of ``-``, ``_``, ``.``-free whitespace or ``_`` collapsed to one
  ``_``: ``"Rent-Car "`` -> ``"rent_car"``. ``-``, ``_`` and space are treated alike on purpose.
- :func:`canonical_path`: NFKC, format characters removed, percent-decoding repeated until stable
  (``%252e`` included), backslashes as ``/``, repeated slashes collapsed, ``.`` and ``..`` resolved
  lexically (``..`` never climbs above the root of an absolute path; a relative path that climbs out
  keeps a leading ``..``): ``"/etc/./shadow"``, ``"//etc//shadow"`` and ``"/tmp/%2e%2e/etc/shadow"``
  all become ``"/etc/shadow"``; ``"a\\..\\..\\b"`` becomes ``"../b"``; a ``file:`` URL becomes the path
  it names (``file:///etc/shadow``, ``file://localhost/etc/shadow``, ``file://127.0.0.1/etc/shadow`` ->
  ``/etc/shadow``: the host is dropped, whatever it is).
- :func:`shell_commands`: the *lexical* splitter of issue 13, kept for callers that want a quick view and
  as the baseline of ``benchmarks/shell_analysis.py``; it is not a security boundary (it reads ``$(...)``,
  newlines in some positions, globs and wrapper options the way an attacker chooses). Rules decide on
  :func:`agentguard.policies.shell.analyse` (a real bash grammar, fail closed; issue 25). It finds
  every command a shell would run from a string or an argv list, split like
  a shell (:mod:`shlex`, also at ``;``, ``&&``, ``||``, ``|``, ``&`` and newlines), looking through
  wrappers (``sudo``, ``env``, ``nohup``, ``timeout``, ``xargs``, ``command``, ``exec``, ...) and into
  ``bash -c``/``sh -c``/``zsh -c``/``python -c`` style payloads (recursively, a bounded depth).
  Each command is ``(program, flags, operands)``: the program's basename canonicalised, short flags
  split into single letters (``-rf`` -> ``r``, ``f``) and long flags kept (``--recursive``).
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
import shlex
import unicodedata
from typing import Any, NamedTuple
from urllib.parse import unquote

__all__ = ["ShellCommand", "canonical_name", "canonical_path", "decoded_path", "grant_name", "name_forms",
           "shell_commands", "strip_invisible", "written_forms"]

_SEP = re.compile(r"[\s_\-]+")
_FILE_URL = re.compile(r"file:(?://[^/]*)?(?=/)", re.IGNORECASE)  # any host: curl reads 127.0.0.1, Windows a UNC
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "ash", "busybox"})
INTERPRETERS = frozenset({"python", "python2", "python3", "perl", "ruby", "node", "php", "lua", "pwsh",
                          "powershell"})
WRAPPERS = frozenset({"sudo", "doas", "env", "nohup", "nice", "ionice", "timeout", "time", "xargs", "command",
                      "exec", "builtin", "stdbuf", "setsid", "chroot", "su", "watch", "strace", "eval"})
_OPERATORS = frozenset({";", "&&", "||", "|", "&", "|&", "\n", "(", ")", "!", "{", "}", "do", "then", "else"})
MAX_DEPTH = 4


def strip_invisible(text: str) -> str:
    """NFKC-normalise and remove every format character (Unicode category Cf: zero-width, BOM, bidi)."""
    text = unicodedata.normalize("NFKC", text)
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf")


def canonical_name(name: Any) -> str:
    """The canonical form of a tool name (see the module docstring): ``" Book-Hotel\\u200b"`` -> ``book_hotel``."""
    return _canonical_name(name) if type(name) is str and len(name) <= 256 else _canonical_text(str(name))


def _canonical_text(text: str) -> str:
    return _SEP.sub("_", strip_invisible(text).casefold().strip())


_canonical_name = functools.lru_cache(maxsize=4096)(_canonical_text)  # tool names repeat: cache the short ones


_NAMESPACE = re.compile(r"__|[./:]")


@functools.lru_cache(maxsize=4096)
def _name_forms(text: str) -> tuple[str, ...]:
    plain = strip_invisible(text)
    forms = [_canonical_text(plain)]
    for m in _NAMESPACE.finditer(plain):
        tail = _canonical_text(plain[m.end():])
        if tail and tail not in forms:
            forms.append(tail)
    return tuple(forms)


def grant_name(name: Any) -> str:
    """The canonical form a *granting* rule (an allow list) compares a tool name in: :func:`canonical_name` of each
    part, with the ``__`` an MCP proxy puts between an upstream and its tool kept (``fs__read_file`` is the tool
    ``read_file`` of the upstream ``fs``, not ``fs_read_file``: an allow entry ``read_file`` must not grant the tool
    ``file`` of an upstream named ``read`` through ``read__file``)."""
    return _grant_name(name) if type(name) is str and len(name) <= 256 else _grant_text(str(name)[:4096])


def _grant_text(name: str) -> str:
    return "__".join(canonical_name(part) for part in strip_invisible(name).strip().split("__"))


_grant_name = functools.lru_cache(maxsize=4096)(_grant_text)  # tool names repeat: cache the short ones


def name_forms(name: Any) -> tuple[str, ...]:
    """Every name a namespaced tool answers to, canonical: the whole name, then each part after a namespace
    separator (``__`` as an MCP proxy prefixes an upstream's tools, ``.``, ``/``, ``:``):
    ``"mail__Delete-Note"`` -> ``("mail_delete_note", "delete_note")``. A rule that refuses (deny, halt,
    escalate, an argument rule's tool) matches any form, so a prefix cannot carry a tool past it; a rule that
    grants (an allow list) matches the whole name only."""
    return _name_forms(name if type(name) is str and len(name) <= 256 else str(name)[:4096])


def written_forms(name: str) -> tuple[str, ...]:
    """The names a namespaced tool answers to *as written* (no folding): the whole name, then each part after
    a namespace separator (``"fs__read_file"`` -> ``("fs__read_file", "read_file")``). A rule that grants
    compares these: a framework runs the tool its exact name finds, so ``READ_FILE`` is not ``read_file``."""
    return (name, *(name[m.end():] for m in _NAMESPACE.finditer(name) if name[m.end():]))


def decoded_path(path: Any) -> str:
    """A path as :func:`canonical_path` reads it before resolving it: NFKC, format characters removed,
    percent-decoded until stable, backslashes as ``/``, surrounding whitespace removed."""
    text = strip_invisible(str(path))
    for _ in range(8):  # %252e%252e -> %2e%2e -> ..
        decoded = unquote(text)
        if decoded == text:
            break
        text = strip_invisible(decoded)
    return text.replace("\\", "/").strip()


def canonical_path(path: Any) -> str:
    """The lexically normalised path a rule decides on (see the module docstring). A path that climbs above its
    ``~`` or ``~user`` (``~/..``, ``~/x/../..``) comes back as the ``..`` path it is from an unknown directory
    (``..``, ``../u/.ssh``), never as ``.`` (session 22: ``grep -r x ~/..`` read all of /home as the working
    directory)."""
    text = decoded_path(path)
    m = _FILE_URL.match(text)
    if m:  # file:///etc/shadow, file://localhost/etc/shadow, file:/etc/shadow: the path they name
        text = "/" + text[m.end():].lstrip("/")
    if not text:
        return ""
    if text.startswith("~") and "/" in text:   # "~/.." is the home's parent, not "." (normpath drops "~" as a name)
        head, _, rest = text.partition("/")
        tail = posixpath.normpath(rest.lstrip("/")) if rest.strip("/") else "."
        if tail == ".." or tail.startswith("../"):
            return tail   # above the home: a directory no rule can name, read as climbing out of an unknown one
        return head if tail == "." else f"{head}/{tail}"
    absolute = text.startswith("/")
    norm = posixpath.normpath(text)
    if absolute:
        norm = "/" + norm.lstrip("/")
    return norm


class ShellCommand(NamedTuple):
    """One command a shell would run: canonical program name, its flags, its other arguments."""

    program: str
    flags: frozenset[str]
    operands: tuple[str, ...]


def _program(word: str) -> str:
    base = os.path.basename(strip_invisible(word).replace("\\", "/").rstrip("/")) or word
    base = re.sub(r"\.exe$", "", base, flags=re.IGNORECASE)
    name = canonical_name(base)
    return re.sub(r"^(python|perl|ruby|php|lua)[0-9._]*$", r"\1", name)


def _split(text: str) -> list[str]:
    lex = shlex.shlex(strip_invisible(text), posix=True, punctuation_chars=";&|()")
    lex.whitespace_split = True
    lex.commenters = ""
    try:
        return list(lex)
    except ValueError:  # unbalanced quotes: split on whitespace, keep going (never fail open)
        return strip_invisible(text).replace(";", " ; ").replace("|", " | ").replace("&", " & ").split()


def _segments(words: list[str]) -> list[list[str]]:
    out: list[list[str]] = []
    cur: list[str] = []
    for w in words:
        if w in _OPERATORS or set(w) <= set(";&|()"):
            if cur:
                out.append(cur)
            cur = []
        else:
            cur.append(w)
    if cur:
        out.append(cur)
    return out


def _flags(args: list[str]) -> tuple[set[str], list[str]]:
    flags, operands = set(), []
    for a in args:
        if a.startswith("--") and len(a) > 2:
            flags.add(a.split("=", 1)[0].casefold())
        elif a.startswith("-") and len(a) > 1 and not a[1:].isdigit():
            flags.update(a[1:].casefold() if a[1:].isalpha() else a[1:])
        else:
            operands.append(a)
    return flags, operands


def _command(argv: list[str], depth: int, out: list[ShellCommand]) -> None:
    while argv and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", argv[0]):  # FOO=bar cmd
        argv = argv[1:]
    if not argv:
        return
    prog = _program(argv[0])
    flags, operands = _flags(argv[1:])
    out.append(ShellCommand(prog, frozenset(flags), tuple(operands)))
    if depth >= MAX_DEPTH:
        return
    rest = argv[1:]
    if prog in WRAPPERS:  # the wrapped command: the first word that is not an option or a NAME=value
        i = 0
        while i < len(rest) and (rest[i].startswith("-") or "=" in rest[i] or rest[i].isdigit()):
            i += 1
        _command(rest[i:], depth + 1, out)
    if prog in SHELLS or prog in INTERPRETERS:
        for j, a in enumerate(rest):  # -c / -e / -lc ... payload: the next word is code
            if a.startswith("-") and not a.startswith("--") and ("c" in a or "e" in a) and j + 1 < len(rest):
                _walk(rest[j + 1], depth + 1, out)
                break


def _walk(text: str, depth: int, out: list[ShellCommand]) -> None:
    for seg in _segments(_split(text)):
        _command(seg, depth, out)


def shell_commands(command: Any) -> list[ShellCommand]:
    """Every command a shell would run from ``command`` (a string, or an argv list of strings)."""
    out: list[ShellCommand] = []
    if isinstance(command, (list, tuple)):
        argv = [str(a) for a in command]
        for seg in _segments(argv):
            _command(seg, 0, out)
    else:
        _walk(str(command), 0, out)
    return out
