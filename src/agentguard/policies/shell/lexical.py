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

__all__ = ["first_error", "glued_continuation", "heredoc_mismatch", "odd_char", "skipped_text", "translated",
           "unread_substitution"]

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


_OPAQUE = frozenset({"heredoc_body", "string", "translated_string"})  # text between their children is content
_CODE = frozenset({"command_substitution", "process_substitution"})  # code again inside an opaque node
_GAP = re.compile(rb"(?:[ \t\r\n]|\\\n)*")


def skipped_text(root: Any, src: bytes) -> str | None:
    """Text no leaf of the tree covers (tree-sitter-bash drops the ``-`` of ``rm - 2>x``), or None.

    Inside a string or a here-document body the text between children is content; inside a command or
    process substitution (even within a string) it is code again and must be covered.
    """
    pos = 0

    def scan(node: Any, lenient: bool) -> str | None:
        nonlocal pos
        if node.child_count == 0:
            if node.start_byte > pos and not lenient and not _GAP.fullmatch(src, pos, node.start_byte):
                return src[pos:node.start_byte].decode(errors="replace")[:20]
            pos = max(pos, node.end_byte)
            return None
        inner = (lenient or node.type in _OPAQUE) and node.type not in _CODE
        for child in node.children:
            bad = scan(child, inner)
            if bad is not None:
                return bad
        if inner:
            pos = max(pos, node.end_byte)
        return None

    bad = scan(root, False)
    if bad is None and pos < len(src) and not _GAP.fullmatch(src, pos, len(src)):
        bad = src[pos:].decode(errors="replace")[:20]
    return bad


def unread_substitution(node: Any, src: bytes) -> bool:
    """Whether an unescaped `````, ``$(``, ``$[`` or ``${`` in ``node``'s text lies outside every substitution or
    expansion node the parser made of it (bash would run or evaluate it; the walk would not see it)."""
    spans: list[tuple[int, int]] = []

    def collect(n: Any) -> None:
        if n.type in ("command_substitution", "process_substitution", "arithmetic_expansion", "expansion",
                      "raw_string", "ansi_c_string"):  # the last two: literal text
            spans.append((n.start_byte, n.end_byte))
        for ch in n.children:
            collect(ch)

    collect(node)
    for m in re.finditer(rb"(\\*)(`|\$[(\[{])", src[node.start_byte:node.end_byte]):
        if len(m.group(1)) % 2:
            continue  # escaped
        at = node.start_byte + m.start(2)
        if not any(a <= at < b for a, b in spans):
            return True
    return False


def first_error(node: Any) -> Any:
    """The first ``ERROR`` or ``MISSING`` node under ``node`` (tree-sitter marks its ancestors ``has_error``)."""
    if node.is_missing or node.type == "ERROR":
        return node
    for c in node.children:
        if c.has_error:
            return first_error(c)
    return None


def translated(node: Any) -> bool:
    """Whether the tree holds a locale-translated string ``$"..."`` (session 20). bash replaces its text with the
    message catalog's translation and expands that as a double-quoted string (``$(...)`` in a catalog entry ran with
    bash 5.2 and ``TEXTDOMAIN``), so its value is not the text written; and the parser reads ``a$"b"`` in an argument
    as the literal ``a$b`` where bash reads ``ab`` (``cat .en$"v"`` printed ``.env`` while the guard saw ``.en$v``).
    Both shapes count: a ``translated_string`` node, and an unnamed ``$`` directly followed by a ``"``."""
    stack = [node]
    while stack:
        n = stack.pop()
        kids = n.children
        for i, c in enumerate(kids):
            if c.type == "translated_string":
                return True
            if not c.is_named and c.type == "$" and i + 1 < len(kids) and kids[i + 1].is_named and \
                    kids[i + 1].start_byte == c.end_byte and \
                    (kids[i + 1].text or b"")[:1] == b'"':  # a string, or a concatenation that starts with one
                return True
            stack.append(c)
    return False
