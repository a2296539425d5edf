"""Where bash and a parser may disagree on the text itself, checked before and after the parse (session 10).

Bash reads bytes: it does not normalise Unicode (a fullwidth ``\uff07`` is a word character, not a quote),
treats only space and tab as blanks, joins a backslash-newline into one word before it splits words, and
ends a here-document at a line equal to its delimiter after quote removal (``<<E"O"F`` ends at ``EOF``),
joining backslash-newlines of an unquoted body first. tree-sitter-bash and Unicode-aware readers differ on
each of these; where they could, :mod:`.grammar` refuses the text (fail closed) with the reason these
functions give.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

__all__ = ["glued_continuation", "heredoc_mismatch", "odd_char"]

#: characters bash reads as word characters but other readers (tree-sitter, Unicode-aware splitters, the
#: normalisation a display applies) as blanks or nothing: format characters (Cf: U+200B, U+FEFF, bidi),
#: non-ASCII spaces (Zs, Zl, Zp) and control characters other than tab, newline and carriage return
_CONTROL = re.compile("[\x01-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def _unquote(word: str) -> str | None:
    """A here-document delimiter after bash's quote removal; None when it has an expansion."""
    out, i = [], 0
    while i < len(word):
        ch = word[i]
        if ch == "$" or ch == "`":
            return None
        if ch == "\\":
            out.append(word[i + 1:i + 2])
            i += 2
        elif ch in "'\"":
            end = word.find(ch, i + 1)
            if end < 0:
                return None
            out.append(word[i + 1:end])
            i = end + 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def heredoc_mismatch(node: Any, src: bytes) -> str | None:
    """Why bash may end a here-document elsewhere than the parser did (its delimiter is the word after quote
    removal: ``<<E"O"F`` ends at ``EOF``; ``<<-`` strips leading tabs), or None."""
    start = next((c for c in node.children if c.type == "heredoc_start"), None)
    if start is None:
        return "a here-document without a delimiter"
    delim = _unquote(src[start.start_byte:start.end_byte].decode("utf-8", "surrogatepass"))
    if not delim:
        return "a here-document delimiter with an expansion or unbalanced quotes"
    strip = any(not c.is_named and src[c.start_byte:c.end_byte] == b"<<-" for c in node.children)
    lines: list[str] = []
    end_text = None
    for c in node.children:
        text = src[c.start_byte:c.end_byte].decode("utf-8", "surrogatepass")
        if c.type == "heredoc_body":
            lines += text.split("\n")
        elif c.type == "heredoc_end":
            end_text = text
    norm = (lambda line: line.lstrip("\t")) if strip else (lambda line: line)
    if any(norm(line) == delim for line in lines):
        return f"the here-document ends earlier for bash (at {delim!r}) than for the parser"
    if end_text is not None and end_text.strip() and norm(end_text) != delim:
        return f"the here-document ends at {end_text!r} for the parser, at {delim!r} for bash"
    if end_text is None or not end_text.strip():
        return f"the here-document's delimiter {delim!r} was not found where bash looks for it"
    return None


def glued_continuation(text: str) -> bool:
    """Whether a line continuation (an odd run of backslashes before a newline) joins two non-blank parts."""
    for m in re.finditer(r"(\\+)\n", text):
        run = len(m.group(1))
        if run % 2 == 0:
            continue
        before = text[m.start() - 1] if m.start() > 0 else " "
        after = text[m.end()] if m.end() < len(text) else " "
        if (run > 1 or before not in " \t\n") and after not in " \t\n":
            return True
    return False


def odd_char(text: str) -> str | None:
    """The first character of ``text`` that readers disagree on (see above), or None."""
    m = _CONTROL.search(text)
    if m is not None:
        return m.group()
    if text.isascii():
        return None
    return next((ch for ch in text if ord(ch) > 0x7F and unicodedata.category(ch) in ("Cf", "Zs", "Zl", "Zp")),
                None)
