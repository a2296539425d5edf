"""A loop variable's values: ``for f in *.py; do wc -l "$f"; done`` reads ``"$f"`` as one of the loop's words (s19).

Before this, every expansion was an unknown word, so the everyday loop above was refused (``"$f"`` could be any
path). A ``for NAME in WORDS`` loop assigns NAME each of WORDS in turn (after their expansion: a glob's matches, or
the glob itself when nothing matches), so inside the body a double-quoted ``"$NAME"`` or ``"${NAME}"`` standing
alone as a word is exactly one of those words, and is read as them (a glob word as its pattern, which covers each
match). Guarantees (fail closed: where one does not hold, the expansion stays unknown):

- the loop has an ``in`` list (``for f; do`` reads the positional parameters) and is a ``for``, not ``select`` (which
  reads standard input: tree-sitter-bash gives it the same node type, told apart by its keyword);
- the body never names NAME but as ``$NAME`` or ``${NAME}``: no ``read NAME``, ``NAME=``, ``declare``, ``unset``,
  ``printf -v NAME``, ``(( NAME++ ))``, ``${#NAME}``, nested ``for NAME`` (any other occurrence of the name as a word
  stops the reading);
- only the whole double-quoted word: unquoted ``$f`` is split and globbed again (a file named ``x -rf.py`` becomes two
  words), and ``"$f.bak"`` or ``"${f%.py}"`` are other values; those stay unknown.
"""

from __future__ import annotations

import re
from typing import Any

from .words import Word

__all__ = ["loop_binding", "loop_value"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def loop_binding(node: Any, src: bytes, values: list[Word]) -> tuple[str, list[Word]] | None:
    """``(NAME, its values)`` for a ``for_statement`` node whose body only expands NAME, or None."""
    if node.type != "for_statement" or not values or not node.children or node.children[0].type != "for":
        return None  # tree-sitter-bash parses "select" as a for_statement too
    var = node.child_by_field_name("variable")
    body = next((c for c in node.children if c.type == "do_group"), None)
    if var is None or body is None:
        return None
    name = src[var.start_byte:var.end_byte].decode(errors="replace")
    if not _NAME.fullmatch(name):
        return None
    text = src[body.start_byte:body.end_byte].decode(errors="replace")
    if re.search(rf"(?<!\$)(?<!\$\{{)\b{name}\b", text) or re.search(rf"\$\{{{name}[^}}A-Za-z0-9_]", text):
        return None
    return name, values


def loop_value(node: Any, src: bytes, bound: dict[str, list[Word]]) -> list[Word] | None:
    """The words a double-quoted ``"$NAME"``/``"${NAME}"`` word may be, NAME bound by an enclosing loop, or None."""
    if not bound or node.type != "string":
        return None
    raw = src[node.start_byte:node.end_byte].decode(errors="replace")
    m = re.fullmatch(r'"\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})"', raw)
    if m is None:
        return None
    values = bound.get(m.group(1) or m.group(2))
    return list(values) if values is not None else None
