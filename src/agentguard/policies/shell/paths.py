"""Paths as the OS reads them, for words that may be patterns.

:func:`path_forms` turns one word a command names (or one path argument of a tool) into the canonical
spellings a rule is checked against: :func:`~agentguard.core.canonical.canonical_path` (percent-decoding,
``\\`` as ``/``, ``.``/``..``/``//`` resolved lexically, ``file://`` URLs read as their path,
``/proc/self/root``, ``/proc/<pid>/root`` and ``/proc/thread-self/root`` read as ``/``), ``~user``
also as that user's home directory, and a relative path also joined to each directory a preceding ``cd``
may have moved to. Glob and unknown parts survive normalisation as placeholder characters, so
``/etc/./shad*w`` becomes the pattern ``/etc/shad*w`` and is matched against a rule's glob with
:func:`~.globs.intersects` ("a pattern that could match a denied path is treated as matching it").
"""

from __future__ import annotations

import posixpath
import re
from typing import Iterable

from ...core.canonical import canonical_path
from .globs import ANY_CHAR, NOT_SLASH, Token, intersects, literal_tokens
from .words import Word, _homes, make_words

__all__ = ["PathForm", "path_forms", "pattern_paths", "word_paths"]

_SHOWN = {"*": "*", "c": "?", "^": ""}
_PUA = 0xF0000  # supplementary private use area: placeholders for non-literal tokens
_PROC_ROOT = re.compile(r"^/proc/(?:self|thread-self|\d+)(?:/task/\d+)?/root(?=/|$)")
_PROC_CWD = re.compile(r"^/+proc/+(?:self|thread-self|\d+)(?:/+task/+\d+)?/+cwd(?=/|$)")
_TILDE = re.compile(r"^~([A-Za-z0-9_.][A-Za-z0-9_.-]*)?(?=/|$)")

#: (display text, tokens or None when literal)
PathForm = tuple[str, "tuple[Token, ...] | None"]


def _encode(word: Word) -> tuple[str, dict[str, Token]]:
    table: dict[str, Token] = {}
    out = []
    for tok in word.tokens:
        kind, (neg, chars) = tok
        if kind == "c" and not neg and len(chars) == 1:
            out.append(next(iter(chars)))
        else:
            key = chr(_PUA + len(table))
            table[key] = tok
            out.append(key)
    return "".join(out), table


def _decode(text: str, table: dict[str, Token]) -> tuple[Token, ...]:
    return tuple(table[ch] if ch in table else ("c", (False, frozenset(ch))) for ch in text)


def _variants(path: str) -> list[str]:
    out = [path]
    m = _PROC_ROOT.match(path)
    if m:
        out.append("/" + path[m.end():].lstrip("/"))
    m = _TILDE.match(path)
    if m:
        for home in _homes(m.group(1) or ""):
            out.append(home + path[m.end():])
    return out


def path_forms(text: str, cwds: Iterable[str] = ("",), table: dict[str, Token] | None = None) -> list[PathForm]:
    """The canonical spellings of one path (see the module docstring); placeholders decoded via ``table``."""
    base = canonical_path(text)
    if not base:
        return []
    forms: list[str] = []
    raw = posixpath.normpath(text) if text.strip() else ""
    if raw and raw != base:  # the spelling the OS opens as it is (a relative "file:/x", a "%2e%2e" name)
        forms += [raw] if raw.startswith("/") else [posixpath.normpath(posixpath.join(c, raw)) if c else raw
                                                   for c in cwds]
    for v in _variants(base):
        v = canonical_path(v)
        if v.startswith("/"):
            forms.append(v)
            continue
        if v.startswith("~"):  # also a relative directory named "~" (a quoted tilde is not expanded)
            forms.append(v)
        for cwd in cwds:
            forms.append(canonical_path(posixpath.join(cwd, v)) if cwd else v)
    m = _PROC_CWD.match(text)
    if m:  # /proc/self/cwd/X is X relative to the working directory (before ".." is resolved lexically)
        forms.append(posixpath.normpath(text[m.end():].lstrip("/") or "."))
    out: list[PathForm] = []
    for f in list(dict.fromkeys(forms)):
        if f == ".." or f.startswith("../"):  # climbs out of an unknown directory: any absolute path ending so
            rest = re.sub(r"^(\.\./)*\.\.(/|$)", "", f)
            out.append(("*/" + rest if rest else "*", (("*", ANY_CHAR),) + tuple(
                table[ch] if table and ch in table else ("c", (False, frozenset(ch))) for ch in "/" + rest)))
    for f in dict.fromkeys(forms):
        if table and any(ch in table for ch in f):
            shown = "".join(_SHOWN[table[ch][0]] if ch in table else ch for ch in f)
            out.append((shown, _decode(f, table)))
        else:
            out.append((f, None))
    return out


def word_paths(word: Word, cwds: Iterable[str] = ("",)) -> list[PathForm]:
    """Every path spelling one argument may name: the word, its ``=value`` part, an option's attached path."""
    if word.split:
        return [("*", (("*", ANY_CHAR),))]
    text, table = _encode(word)
    parts = [text]
    if "=" in text:
        parts.append(text.split("=", 1)[1])
    if text.startswith("-"):
        m = re.search(r"[/~]", text)
        if m:
            parts.append(text[m.start():])
        if not text.startswith("--") and re.search(r"[./~]", text, re.S):
            # -o.env, -o../x: a value attached after any option letter of a cluster (one that can leave the
            # directory or name a dot file: a bare-letter suffix of "-la" names no path a rule could deny)
            parts += [text[k:] for k in range(2, min(len(text), 8)) if text[k:] not in parts
                      and re.search(r"[./~]", text[k:])]
    for p in list(parts):  # ".*" expands to ".." in dash (and in bash without globskipdots): follow it
        comps = p.split("/")
        for k, comp in enumerate(comps):
            if any(ch in table for ch in comp) and intersects(_decode(comp, table), literal_tokens("..")):
                parts.append("/".join(comps[:k] + [".."] + comps[k + 1:]))
    out: list[PathForm] = []
    for p in parts:
        out += path_forms(p, cwds, table)
    return out


_GLOB_CHARS = frozenset("*?[{~")
_STAR: Token = ("*", NOT_SLASH)


def pattern_paths(text: str, cwds: Iterable[str] = ("",)) -> list[PathForm]:
    """The spellings of a tool's path argument read as a pattern, as well as literally.

    A tool may hand its path argument to ``glob.glob``, ``pathlib.Path.glob`` or a shell, which expand
    ``*``, ``?``, ``[...]``, ``{a,b}`` and ``~``; the guard cannot see which, so the value is read both
    ways: :func:`path_forms` (the file ``open`` names) and, when it holds a pattern character, the words
    an unquoted shell word expands to (:func:`~.words.make_words`; a ``**`` after the first component also
    crosses ``/``, as a recursive glob does; a glob also matches a leading ``.``, as ``pathlib``'s does). Raises :class:`~.words.TooManyWords` past the expansion bounds (the caller
    refuses the call unread).
    """
    out = path_forms(text, cwds)
    if _GLOB_CHARS.isdisjoint(text):
        return out
    for word in make_words([("u", ch) for ch in text]):
        tokens: list[Token] = []
        for tok in word.tokens:  # "**": a recursive glob's any-depth component (a relative path's first one
            # stays one component: below an unknown directory, as every relative path is read, see rules.py)
            if tok[0] == "^":  # pathlib's glob and glob(include_hidden=True) match a leading "." too
                continue
            if tok == _STAR and len(tokens) > 2 and tokens[-1] in (_STAR, ("*", ANY_CHAR)):
                tokens[-1] = ("*", ANY_CHAR)
            else:
                tokens.append(tok)
        out += word_paths(Word(word.text, tuple(tokens), word.literal, word.unknown, word.split), cwds)
    return out
