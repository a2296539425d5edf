"""Shell words as bash expands them: quoting, escapes, ``$'...'``, brace and tilde expansion, globs.

A :class:`Word` is what one argument of a command becomes after bash's expansions, as far as they can be
known statically. Quoted and escaped characters are literal; ``$'\\x72\\x6d'`` is decoded (``rm``);
``{a,b}`` and ``{1..3}`` are expanded (a word node can become several words); ``~`` and ``~user`` keep
their spelling and also get the home directory as an alternative; unquoted ``*``, ``?`` and ``[...]``
are glob tokens (never matching ``/``, nor a leading ``.`` of a file name: bash's default, ``dotglob``
and ``GLOBIGNORE`` being refused where they could be set); a part whose value is unknown statically (``$VAR``, ``${x}``,
``$(cmd)``, arithmetic) is an *unknown* token that may stand for any text. An unknown part outside
double quotes is subject to word splitting and globbing, so the whole word becomes unknown (it may turn
into any number of any words).

The pieces come from the tree-sitter-bash parse (:mod:`.analysis`); this module is pure text.
"""

from __future__ import annotations

import functools
import pwd
import re
from dataclasses import dataclass

from .globs import ANY_CHAR, NO_DOT, NOT_SLASH, SetTooLong, Token, parse_set

__all__ = ["Piece", "TooManyWords", "Word", "brace_expand", "decode_ansi_c", "dquoted_pieces", "literal_word",
           "make_words", "unquoted_pieces"]

#: a piece of a word: (kind, char); kind "u" unquoted char, "q" quoted/escaped char,
#: "a" unknown text inside double quotes (no splitting), "A" unknown text outside quotes (split + glob)
Piece = tuple[str, str]

MAX_BRACE_WORDS = 256
MAX_BRACE_CHARS = 200_000  # characters one brace expansion may produce (words times length)
MAX_SEQUENCE = 256  # the longest ``{x..y..z}`` read; a longer unquoted brace without commas is refused
MAX_GLOBS = 64  # the most "*" and "?" one word may hold; more is refused
MAX_SET = 256  # the longest ``[...]`` glob set read; a longer one is refused
_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_ANY_TOKEN: Token = ("*", ANY_CHAR)
_SLASH_TOKEN: Token = ("c", (False, frozenset("/")))


@dataclass(frozen=True)
class Word:
    """One word after expansion: ``text`` (unknown parts shown as ``*``), glob tokens, literalness."""

    text: str
    tokens: tuple[Token, ...]
    literal: bool          # no glob and no unknown part: ``text`` is exactly what the program gets
    unknown: bool = False  # contains a part whose value is unknown statically
    split: bool = False    # an unquoted unknown part: may become any number of words


_ESCAPES = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
            "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


def decode_ansi_c(body: str) -> str:
    """Decode the body of ``$'...'`` like bash (``\\x72`` -> ``r``, ``\\162`` -> ``r``, ``\\u0072``, ``\\cA``).

    A NUL (``\\0``, ``\\x00``, ``\\u0000``, ``\\c@``) ends the string for bash, which keeps C strings: the rest of
    the quoted part is dropped (``cat /etc/sha$'\\0x'dow`` opens ``/etc/shadow``; read with the NUL kept, the
    path met no deny rule). The value is cut there the same way.
    """
    return _decode_ansi_c(body).split("\x00", 1)[0]


def _decode_ansi_c(body: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\" or i + 1 >= len(body):
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt in "01234567":
            m = re.match(r"[0-7]{1,3}", body[i + 1:])
            assert m
            out.append(chr(int(m.group(), 8) & 0xFF))
            i += 1 + len(m.group())
        elif nxt in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[nxt]
            m = re.match(r"[0-9A-Fa-f]{1,%d}" % width, body[i + 2:])
            if not m:
                out.append("\\" + nxt)
                i += 2
            else:
                out.append(chr(min(int(m.group(), 16), 0x10FFFF)))
                i += 2 + len(m.group())
        elif nxt == "c" and i + 2 < len(body):
            out.append(chr(ord(body[i + 2]) & 0x1F))
            i += 3
        else:
            out.append("\\" + nxt)
            i += 2
    return "".join(out)


def _seq(a: str, b: str, step: str | None) -> list[str] | None:
    inc = abs(int(step)) if step and re.fullmatch(r"-?\d+", step) else 1
    inc = inc or 1
    if re.fullmatch(r"-?\d+", a) and re.fullmatch(r"-?\d+", b):
        x, y = int(a), int(b)
        width = max(len(a), len(b)) if (a.lstrip("-").startswith("0") and len(a.lstrip("-")) > 1) or \
            (b.lstrip("-").startswith("0") and len(b.lstrip("-")) > 1) else 0
        if abs(y - x) // inc + 1 > MAX_BRACE_WORDS:
            return None
        rng = range(x, y + 1, inc) if x <= y else range(x, y - 1, -inc)
        return [str(v).zfill(width) if v >= 0 else "-" + str(-v).zfill(width - 1) for v in rng]
    if len(a) == 1 and len(b) == 1 and a.isascii() and b.isascii():
        x, y = ord(a), ord(b)
        rng = range(x, y + 1, inc) if x <= y else range(x, y - 1, -inc)
        return [chr(v) for v in rng]
    return None


class TooManyWords(Exception):
    pass


def _brace_table(pieces: list[Piece]) -> tuple[dict[int, int], dict[int, list[int]]]:
    """One pass: each unquoted ``{`` with its matching ``}`` and the commas at its own depth.

    The same matching as scanning from each ``{`` (the first ``}`` at depth 0), without the quadratic cost
    of that scan (100,000 unmatched ``{`` took minutes).
    """
    match: dict[int, int] = {}
    commas: dict[int, list[int]] = {}
    stack: list[int] = []
    for k, p in enumerate(pieces):
        if p == ("u", "{"):
            stack.append(k)
            commas[k] = []
        elif p == ("u", "}") and stack:
            match[stack.pop()] = k
        elif p == ("u", ",") and stack:
            commas[stack[-1]].append(k)
    return match, commas


def brace_expand(pieces: list[Piece]) -> list[list[Piece]]:
    """Bash brace expansion over a word's pieces (only unquoted braces count); bounded in words and size."""
    match, commas = _brace_table(pieces)
    quoted = [0]  # quoted[k]: how many pieces before k are not unquoted characters
    for k, _ in pieces:
        quoted.append(quoted[-1] + (k != "u"))
    for start in sorted(match):
        if start > 0 and pieces[start - 1] == ("u", "$"):
            continue
        end = match[start]
        pre, post = pieces[:start], pieces[end + 1:]
        if commas[start]:
            bounds = [start] + commas[start] + [end]
            alts = [pieces[bounds[i] + 1:bounds[i + 1]] for i in range(len(bounds) - 1)]
        else:
            if quoted[end] - quoted[start + 1]:
                continue
            if end - start > MAX_SEQUENCE:  # longer than any sequence this reader decodes: refused, not guessed
                raise TooManyWords
            m = re.fullmatch(r"(-?\w+)\.\.(-?\w+)(?:\.\.(-?\d+))?", "".join(c for _, c in pieces[start + 1:end]))
            seq = _seq(m.group(1), m.group(2), m.group(3)) if m else None
            if seq is None:
                continue
            alts = [[("q", c) for c in s] for s in seq]
        if len(alts) * len(pieces) > MAX_BRACE_CHARS:
            raise TooManyWords
        out: list[list[Piece]] = []
        for alt in alts:
            for w in brace_expand(pre + alt + post):
                out.append(w)
                if len(out) > MAX_BRACE_WORDS:
                    raise TooManyWords
        return out
    return [pieces]


@functools.lru_cache(maxsize=256)
def _homes(user: str) -> tuple[str, ...]:
    """Where ``~user`` may point: the conventional home and this machine's passwd entry."""
    if user == "":
        return ()  # ``~`` alone: $HOME, unknown statically; kept as the literal "~" a rule can name
    homes = ["/root" if user == "root" else f"/home/{user}"]
    try:
        homes.append(pwd.getpwnam(user).pw_dir)
    except (KeyError, OSError):
        pass
    return tuple(dict.fromkeys(homes))


def _tilde(pieces: list[Piece], at: int) -> list[list[Piece]]:
    """Alternatives for a tilde prefix at ``pieces[at]`` (the spelling itself always kept)."""
    k = at + 1
    while k < len(pieces) and pieces[k][0] == "u" and pieces[k][1] not in "/:":
        k += 1
    if k < len(pieces) and pieces[k][0] != "u":
        return [pieces]  # a quoted character in the login name: no tilde expansion
    user = "".join(c for _, c in pieces[at + 1:k])
    if re.fullmatch(r"[+-]?[0-9]+|[+-]", user):  # $PWD, $OLDPWD, ~N / ~+N / ~-N: the directory stack
        return [pieces[:at] + [("a", "~")] + pieces[k:]]
    if not re.fullmatch(r"[A-Za-z0-9_.][A-Za-z0-9_.-]*|", user):
        return [pieces]
    return [pieces] + [pieces[:at] + [("q", c) for c in home] + pieces[k:] for home in _homes(user)]


def tilde_expand(pieces: list[Piece]) -> list[list[Piece]]:
    words = [pieces]
    if pieces and pieces[0] == ("u", "~"):
        words = _tilde(pieces, 0)
    head = "".join(c for k, c in pieces[:64] if k == "u")
    m = _ASSIGN.match(head) if all(k == "u" for k, _ in pieces[:len(head)]) else None
    if m:  # NAME=~/x:~/y (also in arguments: bash expands tildes in assignment-like words)
        out = []
        for w in words:
            alts = [w]
            for idx in range(len(w)):
                if w[idx] == ("u", "~") and idx > 0 and w[idx - 1] in (("u", "="), ("u", ":")) and idx >= m.end():
                    alts = [a2 for a in alts for a2 in _tilde(a, idx)] if len(alts) < 16 else alts
            out += alts
        words = out
    return words


def _to_word(pieces: list[Piece]) -> Word:
    if any(k == "A" for k, _ in pieces):  # unquoted unknown: split into any words, each maybe globbed
        return Word("*", (_ANY_TOKEN,), literal=False, unknown=True, split=True)
    chars = "".join(c for _, c in pieces)
    # a bracket expression is read over the raw characters only where no later character would need escaping
    # (a quoted "]", "!", "^", "-" or a backslash); computed once, not per "[" (that was quadratic)
    last_escaped = max((k for k, (kind, c) in enumerate(pieces) if c == "\\" or (kind != "u" and c in "]!^-")),
                       default=-1)
    last_close = chars.rfind("]")
    tokens: list[Token] = []
    text: list[str] = []
    literal, unknown = True, False
    globs = 0
    i = 0
    while i < len(pieces):
        kind, ch = pieces[i]
        if kind == "a":
            if not (tokens and tokens[-1] == _ANY_TOKEN):
                tokens.append(_ANY_TOKEN)
                text.append("*")
            literal, unknown = False, True
            i += 1
            continue
        at_start = not tokens or tokens[-1] == _SLASH_TOKEN  # a glob never matches a leading "."
        if kind == "u" and ch in "*?":
            globs += 1
            if globs > MAX_GLOBS:  # each one multiplies the states a rule's glob is matched against
                raise TooManyWords
            if at_start:
                tokens.append(NO_DOT)
            tokens.append(("*", NOT_SLASH) if ch == "*" else ("c", NOT_SLASH))
            text.append(ch)
            literal = False
            i += 1
            continue
        if kind == "u" and ch == "[" and i > last_escaped and last_close > i:
            # a bracket expression needs its closing "]" unquoted; parse over the raw characters
            try:
                parsed = parse_set(chars, i, exclude_slash=True, limit=MAX_SET)
            except SetTooLong:
                raise TooManyWords from None  # a set longer than any this reader decodes: refused
            if parsed is not None:
                if at_start:
                    tokens.append(NO_DOT)
                tokens.append(("c", parsed[0]))
                text.append(chars[i:parsed[1]])
                literal = False
                i = parsed[1]
                continue
        tokens.append(("c", (False, frozenset(ch))))
        text.append(ch)
        i += 1
    return Word("".join(text), tuple(tokens), literal=literal, unknown=unknown)


def make_words(pieces: list[Piece]) -> list[Word]:
    """Brace expansion, tilde expansion, then globs: the words one word node becomes (bounded)."""
    out: list[Word] = []
    for alt in brace_expand(pieces):
        for t in tilde_expand(alt):
            out.append(_to_word(t))
    return out


def literal_word(text: str) -> Word:
    return _to_word([("q", c) for c in text])


def _pieces(raw: str, escapes: str | None, plain: str) -> list[Piece]:
    """The pieces of ``raw``: a backslash quotes the next character (any, or only those in ``escapes``), a
    backslash-newline is removed; every other character is a piece of kind ``plain``."""
    out: list[Piece] = []
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and i + 1 < len(raw) and (escapes is None or raw[i + 1] in escapes):
            if raw[i + 1] != "\n":
                out.append(("q", raw[i + 1]))
            i += 2
            continue
        out.append((plain, ch))
        i += 1
    return out


def unquoted_pieces(raw: str) -> list[Piece]:
    """The pieces of unquoted text: a backslash quotes the next character, a backslash-newline is removed."""
    return _pieces(raw, None, "u")


def dquoted_pieces(raw: str) -> list[Piece]:
    """The pieces of text inside double quotes: a backslash quotes only ``$ ` " \\`` and a newline."""
    return _pieces(raw, '$`"\\\n', "q")
