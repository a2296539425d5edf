"""Glob patterns as token lists, and whether two patterns can match one common string.

A rule's path glob (``fnmatch`` semantics: ``*`` and ``?`` also match ``/``) and a word of a command
(shell pathname-expansion semantics: ``*``, ``?`` and ``[...]`` never match ``/``; an unknown part
such as ``$VAR`` or ``$(cmd)`` matches anything) are both compiled to token lists. :func:`intersects`
decides exactly whether some string matches both: it explores the product of the two patterns'
automata (a star is a state with a self-loop), so ``cat /etc/shad*w`` meets ``/etc/shadow*`` and
``echo {a,b}`` does not. This is how "a pattern that could match a denied path is treated as matching
it" (issue 25) is decided; the differential harness uses the same function to ask whether a word that
really reached a program is one the guard saw.

A word's glob at the start of a file name carries a zero-width :data:`NO_DOT` token (bash's globs never
match a leading ``.``), so ``du -sh *`` does not meet ``.env`` or ``..``.

Character sets are ``(negated, chars)``: ``(False, {"a"})`` is the literal ``a``, ``(True, {"/"})`` any
character but ``/``, ``(True, frozenset())`` any character. POSIX classes (``[[:alpha:]]``) and ranges
wider than 256 characters are over-approximated by "any character" (sound for a deny rule: the pattern
is assumed to match more, never less).
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

__all__ = ["ANY_CHAR", "NOT_SLASH", "NO_DOT", "SetTooLong", "Token", "fnmatch_tokens", "fold_case", "fold_text",
           "intersects", "literal_tokens", "prefix_regex", "token_regex"]

CharSet = tuple[bool, frozenset[str]]
#: a token: ("c", charset) consumes one character; ("*", charset) any number of them
Token = tuple[str, CharSet]

ANY_CHAR: CharSet = (True, frozenset())
NOT_SLASH: CharSet = (True, frozenset("/"))
_DOT_EXCLUDED: CharSet = (True, frozenset("."))
#: a zero-width token: the next character (if any) is not ``.`` (a shell glob at the start of a file name)
NO_DOT: Token = ("^", ANY_CHAR)


def _and(a: CharSet, b: CharSet) -> CharSet:
    """The characters in both sets."""
    na, sa = a
    nb, sb = b
    if not na and not nb:
        return (False, sa & sb)
    if not na:
        return (False, sa - sb)
    if not nb:
        return (False, sb - sa)
    return (True, sa | sb)


def _meet(a: CharSet, b: CharSet, no_dot: bool = False) -> bool:
    """Is there a character in both sets (and, with ``no_dot``, other than ``.``)?"""
    both = _and(a, b)
    if no_dot:
        both = _and(both, _DOT_EXCLUDED)
    return both[0] or bool(both[1])  # the complement of a finite set is never empty


def literal_tokens(text: str) -> list[Token]:
    return [("c", (False, frozenset(ch))) for ch in text]


def fold_case(tokens: Iterable[Token]) -> list[Token]:
    """Glob tokens in lower case: a pattern matched against rules as a case-insensitive file system (macOS,
    Windows, whose glob folds case too) reads it, as literal paths are (``/ETC/SH*DOW`` meets ``/etc/shadow``).
    The one case fold of path tokens: the rules guard's ``deny_paths`` and the config-file rule
    (:func:`~.model.configures`) use it."""
    return [(kind, (neg, frozenset(fold_text(c) for c in chars))) for kind, (neg, chars) in tokens]


def fold_text(text: str) -> str:
    """A literal path folded as :func:`fold_case` folds its tokens (one character to one)."""
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in text)


def _class(cs: CharSet) -> str:
    neg, chars = cs
    if neg:
        return "[^" + "".join(re.escape(c) for c in sorted(chars)) + "]" if chars else "."
    if len(chars) == 1:
        return re.escape(next(iter(chars)))
    return "[" + "".join(re.escape(c) for c in sorted(chars)) + "]" if chars else "(?!)"


def _piece(token: Token) -> str:
    kind, cs = token
    if kind == "^":
        return r"(?!\.)"
    return _class(cs) + ("*" if kind == "*" else "")


def token_regex(tokens: Sequence[Token]) -> str:
    """The regular expression (for ``re.S``) of the strings a token list matches: ``re.fullmatch`` of a literal
    string is :func:`intersects` of its :func:`literal_tokens` with ``tokens`` (tested), in one C-level call."""
    return "".join(_piece(t) for t in tokens)


def prefix_regex(tokens: Sequence[Token]) -> str:
    """The regular expression (for ``re.S``) of every prefix of a string ``tokens`` matches: the strings of some
    ``tokens[:k]``. With every character set of ``tokens`` non-empty (else ``(?!)``: nothing matches), a literal
    ``p`` fullmatches it exactly when some string starting with ``p`` matches ``tokens``: :func:`intersects` of
    ``literal_tokens(p) + [("*", ANY_CHAR)]`` with ``tokens`` (tested)."""
    if any(kind == "c" and not cs[0] and not cs[1] for kind, cs in tokens):
        return "(?!)"
    acc = ""
    for t in reversed(tokens):
        acc = f"(?:{_piece(t)}{acc})?"
    return acc


class SetTooLong(Exception):
    """A bracket expression longer than the reader's limit: refused, never guessed (a literal ``[`` would hide
    the set bash matches; scanning every ``[`` to the end was quadratic)."""


def parse_set(text: str, i: int, exclude_slash: bool, limit: int | None = None) -> tuple[CharSet, int] | None:
    """Parse a bracket expression starting at ``text[i] == '['``; None when it is not one (a literal ``[``).

    With ``limit``, a set still open ``limit`` characters after ``i`` raises :class:`SetTooLong`.
    """
    stop = len(text) if limit is None else min(len(text), i + limit)
    j = i + 1
    negated = False
    if j < len(text) and text[j] in "!^":
        negated, j = True, j + 1
    chars: set[str] = set()
    wide = False
    first = True
    while j < stop:
        ch = text[j]
        if ch == "]" and not first:
            break
        first = False
        if ch == "[" and text.startswith("[:", j):
            end = text.find(":]", j + 2, stop + 1)
            if end < 0:
                if stop < len(text) and text.find(":]", stop - 1) >= 0:
                    raise SetTooLong
                return None
            wide, j = True, end + 2
            continue
        if j + 2 < stop and text[j + 1] == "-" and text[j + 2] != "]":
            lo, hi = ord(ch), ord(text[j + 2])
            if hi - lo > 256:
                wide = True
            else:
                chars.update(chr(c) for c in range(lo, hi + 1))
            j += 3
            continue
        chars.add(ch)
        j += 1
    else:
        if stop < len(text):
            raise SetTooLong
        return None
    if wide:  # over-approximate: any character (but never "/" in a shell glob)
        return (NOT_SLASH if exclude_slash else ANY_CHAR), j + 1
    if negated:
        return (True, frozenset(chars | ({"/"} if exclude_slash else set()))), j + 1
    return (False, frozenset(chars - ({"/"} if exclude_slash else set()))), j + 1


def fnmatch_tokens(pattern: str) -> list[Token]:
    """A rule glob in :mod:`fnmatch` semantics (``*`` and ``?`` match ``/`` too; ``[...]`` sets)."""
    out: list[Token] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "*":
            if not (out and out[-1] == ("*", ANY_CHAR)):
                out.append(("*", ANY_CHAR))
            i += 1
        elif ch == "?":
            out.append(("c", ANY_CHAR))
            i += 1
        elif ch == "[":
            parsed = parse_set(pattern, i, exclude_slash=False)
            if parsed is None:
                out.append(("c", (False, frozenset("["))))
                i += 1
            else:
                out.append(("c", parsed[0]))
                i = parsed[1]
        else:
            out.append(("c", (False, frozenset(ch))))
            i += 1
    return out


def _ends_disjoint(a: Sequence[Token], b: Sequence[Token]) -> bool:
    """True when the two lists cannot match one string because their fixed ends already differ: the characters
    before the first star (or :data:`NO_DOT`) of each, compared from the start, and those after the last one,
    compared from the end (each position must share a character). Exact as a "no": every string matching both
    has those characters there. A cheap first look for :func:`intersects` (rule lists are compared with one
    path hundreds of times: most differ in their first or last characters)."""
    n = 0
    for ta, tb in zip(a, b):
        if ta[0] != "c" or tb[0] != "c":
            break
        if not _meet(ta[1], tb[1]):
            return True
        n += 1
    else:
        if len(a) != len(b) and not any(t[0] != "c" for t in (a[n:] or b[n:])):
            return True  # one list is a fixed string shorter than the other's fixed run
    for ta, tb in zip(reversed(a), reversed(b)):
        if ta[0] != "c" or tb[0] != "c":
            break
        if not _meet(ta[1], tb[1]):
            return True
    return False


def intersects(a: Sequence[Token], b: Sequence[Token]) -> bool:
    """Whether some string matches both token lists (search of the product automaton).

    A state is a position in each list and whether a :data:`NO_DOT` constraint is pending (the next
    character consumed must not be ``.``; consuming any character clears it, skipping a star keeps it).
    """
    return not _ends_disjoint(a, b) and _search(a, b)


def _search(a: Sequence[Token], b: Sequence[Token]) -> bool:
    """The product automaton's search (:func:`intersects` without the first look)."""
    la, lb = len(a), len(b)
    seen: set[tuple[int, int, bool]] = set()
    stack = [(0, 0, False)]
    while stack:
        state = stack.pop()
        if state in seen:
            continue
        seen.add(state)
        i, j, no_dot = state
        if i == la and j == lb:
            return True
        ta = a[i] if i < la else None
        tb = b[j] if j < lb else None
        if ta is not None and ta[0] == "^":
            stack.append((i + 1, j, True))
            continue
        if tb is not None and tb[0] == "^":
            stack.append((i, j + 1, True))
            continue
        if ta is not None and ta[0] == "*":
            stack.append((i + 1, j, no_dot))
        if tb is not None and tb[0] == "*":
            stack.append((i, j + 1, no_dot))
        if ta is None or tb is None or not _meet(ta[1], tb[1], no_dot):
            continue
        stack.append((i if ta[0] == "*" else i + 1, j if tb[0] == "*" else j + 1, False))
    return False


def any_intersects(word: Sequence[Token], patterns: Iterable[Sequence[Token]]) -> bool:
    return any(intersects(word, p) for p in patterns)
