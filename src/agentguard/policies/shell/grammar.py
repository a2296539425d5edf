"""The bash grammar walk (issue 25): every statement, word, redirection and here-document of a parse.

:class:`GrammarWalker` parses text with tree-sitter-bash and walks every simple command, pipeline, list,
subshell, compound command, redirection and here-document; command and process substitutions are walked
too (they run). Words become :class:`~.words.Word` values (quoting, escapes, ``$'...'``, braces, tildes,
globs). What the parser cannot read is unresolvable: ``ERROR``/``MISSING`` nodes, and any text no leaf of
the tree covers (:func:`skipped_text`: tree-sitter-bash silently drops the ``-`` of ``rm - 2>x``).
Each simple command's words go to :meth:`~.model.WalkerBase.resolve`.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from .envreads import definite_assignment, expansion_name, while_read_names
from .lexical import (first_error, glued_continuation, heredoc_mismatch, odd_char, skipped_text, translated,
                      unread_substitution)
from .loops import loop_binding, loop_value
from .model import ANY_WORD, MAX_DEPTH, Command, WalkerBase
from .programs import UNSAFE_ENV, plain_name
from .words import (Piece, TooManyWords, Word, decode_ansi_c, dquoted_pieces, literal_word, make_words,
                    unquoted_pieces)

__all__ = ["GrammarWalker", "skipped_text"]

MAX_TEXT = 100_000
#: the longest single word read (a here-document body is not a word: long file contents stay readable)
MAX_WORD = 16_384
_STATEMENTS = frozenset({"program", "list", "pipeline", "compound_statement", "subshell", "do_group",
                         "negated_command", "redirected_statement", "if_statement", "elif_clause", "else_clause",
                         "while_statement", "case_item"})
_WORD_TYPES = frozenset({"word", "number", "string", "raw_string", "ansi_c_string", "concatenation",
                         "simple_expansion", "expansion", "command_substitution", "process_substitution",
                         "arithmetic_expansion", "brace_expression", "translated_string"})
_REDIRECTS = ("file_redirect", "heredoc_redirect", "herestring_redirect")
_BLOCKS = frozenset({"while_statement", "do_group", "compound_statement", "subshell"})
#: ``${a[i]}`` (an index that is not a number, @ or *) and ``${x:o:l}`` with a name in the offset or length
_NAME_SUBSCRIPT = re.compile(r"\$\{[#!]?[A-Za-z_]\w*\[(?!\s*[0-9]+\s*\]|[@*]\])")
_NAME_OFFSET = re.compile(r"\$\{[#!]?([A-Za-z_]\w*|[0-9]+|[@*])(\[[^]]*\])?:(?![-=?+])[^}]*[A-Za-z_$`(\[]")

#: a ``{varname}`` word directly before a redirection operator: bash stores the descriptor number in varname
_NAMED_FD = re.compile(r"(?<![^\s;&|(){}])\{([A-Za-z_]\w*(\[.*?\])?)\}(?=[<>])", re.S)  # not "{ ls; }>f"

_LOCAL = threading.local()  # a tree-sitter parser is not safe to share between threads: one per thread


def _parser() -> Any:
    parser = getattr(_LOCAL, "parser", None)
    if parser is None:
        import tree_sitter_bash
        from tree_sitter import Language, Parser
        parser = _LOCAL.parser = Parser(Language(tree_sitter_bash.language()))
    return parser


class GrammarWalker(WalkerBase):
    """The tree-sitter-bash walk (see the module docstring)."""

    # -- text ------------------------------------------------------------------------------------------
    def text(self, text: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            self.refuse(f"nesting deeper than {MAX_DEPTH} levels")
            return
        if len(text) > MAX_TEXT:
            self.refuse(f"command text longer than {MAX_TEXT} characters")
            return
        if "\x00" in text:
            self.refuse("a NUL character in the command")
            return
        odd = odd_char(text)
        if odd is not None:
            self.refuse(f"an invisible, control or non-ASCII space character U+{ord(odd):04X} in the command "
                        "(readers disagree on where words end)")
            return
        if "\r" in text:
            self.refuse("a carriage return in the command (bash reads it as part of a word; a reader that takes "
                        "CRLF for a line end does not)")
            return
        if glued_continuation(text):
            self.refuse("a backslash-newline inside a word (bash joins the two parts into one word before it "
                        "parses; the parser splits them)")
            return
        for m in _NAMED_FD.finditer(text):  # "true {PATH}>x" assigns PATH the descriptor's number (bash's
            name = m.group(1)                 # {varname} redirection; the parser reads "{PATH}" as an argument)
            if m.group(2) or UNSAFE_ENV.fullmatch(name):
                self.refuse(f"the redirection {m.group()!r} assigns {name!r} (a descriptor number), which changes "
                            "what runs, or evaluates a subscript")
        # the text is parsed as bash reads it: never normalised first (NFKC turns a fullwidth "\uff07" into
        # "'", dropping U+200B turns "\\<U+200B><newline>" into a line continuation; bash does neither)
        data = text.encode("utf-8", "surrogatepass")
        self.src = data
        tree = _parser().parse(data)
        if tree.root_node.has_error:  # an ERROR or MISSING node anywhere, also inside a word ("${a:'x'}")
            bad = first_error(tree.root_node)
            near = data[bad.start_byte:bad.start_byte + 20].decode(errors="replace") if bad is not None else ""
            self.refuse(f"parse error near {near!r} (the parser could not read the command as bash does)")
            return
        skipped = skipped_text(tree.root_node, data)
        if skipped is not None:
            self.refuse(f"the parser skipped text near {skipped!r} (its tree does not cover the command)")
            return
        if translated(tree.root_node):
            self.refuse('a locale-translated string $"..." (bash replaces it with a message catalog\'s text and '
                        "expands that; a$\"b\" is ab for bash, a$b for the parser)")
        kept = set(self.own_vars)  # what a nested text (a subshell, a payload) sets stays there (.envreads)
        self.stmt(tree.root_node, depth, data)
        self.own_vars = kept if depth else self.own_vars

    # -- statements ------------------------------------------------------------------------------------
    def stmt(self, node: Any, depth: int, src: bytes) -> None:
        t = node.type
        if node.is_missing or t == "ERROR":
            self.refuse(f"parse error near {src[node.start_byte:node.start_byte + 20].decode(errors='replace')!r}")
            return
        if not node.is_named or t == "comment":
            return
        if depth > MAX_DEPTH:
            self.refuse(f"nesting deeper than {MAX_DEPTH} levels")
            return
        if t in _STATEMENTS:
            self.spend(1)
            kept = set(self.own_vars)
            for c in node.children:
                if c.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                    self.redirect(c, depth, src)
                else:  # "while read -r line; do ..." sets line in the body (.envreads)
                    self.own_vars |= while_read_names(node, src) if c.type == "do_group" else set()
                    self.stmt(c, depth, src)
            self.own_vars = kept if t in _BLOCKS else self.own_vars  # a block's assignments stay in it (.envreads)
        elif t == "command":
            self.command(node, depth, src)
        elif t in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
            self.redirect(node, depth, src)
        elif t == "variable_assignment" or t == "variable_assignments":
            self.assignment(node, depth, src)
        elif t == "declaration_command" or t == "unset_command":
            self.declaration(node, depth, src)
        elif t in ("for_statement", "select_statement"):
            var = node.child_by_field_name("variable")
            if var is not None and UNSAFE_ENV.fullmatch(src[var.start_byte:var.end_byte].decode(errors="replace")):
                self.refuse(f"a loop assigns {src[var.start_byte:var.end_byte].decode(errors='replace')}, which "
                            "changes what runs or where paths point")
            values: list[Word] = []
            for c in node.children:
                if c.type in _WORD_TYPES:
                    values += self.words(c, depth, src)
                elif c.type == "do_group":  # "$f" in the body is one of the loop's words (.loops)
                    binding = loop_binding(node, src, values)
                    saved, kept = dict(self.loopvars), set(self.own_vars)
                    self.loopvars.update([binding] if binding else [])
                    self.own_vars |= {src[var.start_byte:var.end_byte].decode(errors="replace")} if var else set()
                    self.stmt(c, depth, src)
                    self.loopvars, self.own_vars = saved, kept
        elif t == "case_statement":
            for c in node.children:
                if c.type == "case_item":
                    for cc in c.children:
                        if cc.type in _WORD_TYPES or cc.type == "extglob_pattern":
                            self.words(cc, depth, src)
                        else:
                            self.stmt(cc, depth, src)
                elif c.type in _WORD_TYPES:
                    self.words(c, depth, src)
        elif t == "test_command":
            self.test(node, depth, src)
        elif t == "function_definition":
            self.refuse("a function definition changes what later words run")
        elif t in ("c_style_for_statement", "arithmetic_expansion", "compound_assignment"):
            self.arithmetic(node, depth, src)
        elif t in _WORD_TYPES:
            self.words(node, depth, src)
        else:
            self.refuse(f"unsupported construct {t!r}")

    def test(self, node: Any, depth: int, src: bytes) -> None:
        body = src[node.start_byte:node.end_byte].decode(errors="replace")
        if not re.fullmatch(r"(\[\[?)[ \t\n].*[ \t\n]\]?\]|\(\(.*\)\)", body, re.S):
            # bash reads "[rm]" as one word, a glob: with a file "rm" in the directory it runs rm
            self.refuse(f"{body[:20]!r} is one word for bash (a glob as a command), not a test")
            return
        if re.search(r"(^|\s)-[vR]\s", body) and "[" in body.replace("[[", "").replace("]]", ""):
            self.refuse("[[ -v name[...] ]]: the subscript is evaluated as arithmetic (can run commands)")
        if re.search(r"-(eq|ne|lt|le|gt|ge)\b", body) and re.search(r"[A-Za-z_$]", re.sub(r"-(eq|ne|lt|le|gt|ge)\b|\[\[|\]\]|\(\(|\)\)", "", body)):
            self.refuse("arithmetic on variables can run commands (array subscripts)")
        self.descend_words(node, depth, src)

    def arithmetic(self, node: Any, depth: int, src: bytes) -> None:
        if _has(node, ("variable_name", "simple_expansion", "expansion", "word", "subscript")):
            self.refuse("arithmetic on variables can run commands (array subscripts)")
        self.descend_words(node, depth, src)

    def substitution(self, node: Any, raw: str, depth: int, src: bytes, quoted: bool) -> None:
        """The code of ``$(...)``, ``<(...)``, ``>(...)``; a backquoted one is read again as bash does.

        Inside backquotes a backslash quotes ``$``, `````, ``\\`` (and ``"`` within double quotes) and is removed
        before the body is parsed: ``echo `echo \\`rm x\\``` runs ``rm``. The parser's tree of the body does
        not know that, so the body text is unescaped and read as a command of its own.
        """
        if raw.startswith("`"):
            if not raw.endswith("`") or len(raw) < 2:
                self.refuse("an unterminated backquote substitution")
                return
            body = re.sub(r'\\([$`\\"])' if quoted else r"\\([$`\\])", r"\1", raw[1:-1])
            self.text(body, depth + 1)
            return
        for c in node.children:
            if c.is_named:
                self.stmt(c, depth + 1, src)

    def descend_words(self, node: Any, depth: int, src: bytes) -> None:
        """Walk the substitutions inside any node (they run)."""
        for c in node.children:
            if c.type in ("command_substitution", "process_substitution"):
                self.pieces(c, depth, src, quoted=False)
            elif c.type == "arithmetic_expansion":
                self.arithmetic(c, depth, src)
            elif c.type in ("expansion", "simple_expansion"):  # (a here-document's $TOKEN reads the environment)
                self.pieces(c, depth, src, quoted=True)  # its checks (indirection, subscripts) and substitutions
            elif c.child_count:
                self.descend_words(c, depth, src)

    def assignment(self, node: Any, depth: int, src: bytes) -> None:
        name = node.child_by_field_name("name")
        if name is not None and UNSAFE_ENV.fullmatch(src[name.start_byte:name.end_byte].decode(errors="replace")):
            self.refuse(f"assigning {src[name.start_byte:name.end_byte].decode()} injects code or changes "
                        "what runs")
        for c in node.children:
            if c.type in _WORD_TYPES:
                self.words(c, depth, src)
            elif c.type in ("array", "subscript"):
                self.arithmetic(c, depth, src) if c.type == "subscript" else self.descend_words(c, depth, src)
            elif c.type == "variable_assignment":
                self.assignment(c, depth, src)
        text = src[name.start_byte:name.end_byte].decode(errors="replace") if name is not None else ""
        if name is not None and definite_assignment(node) and text not in self.frozen:  # after its value (T=$T)
            self.own_vars.add(text)

    def declaration(self, node: Any, depth: int, src: bytes) -> None:
        """``export``/``declare``/``typeset``/``readonly``/``local``: every operand names a variable, however the
        parser shaped it. An unquoted ``NAME=value`` is an assignment node, a bare ``NAME`` a name node, and a
        quoted or escaped one (``export 'LD_PRELOAD=x'``, ``export \\PATH=x``, ``export $'PATH=x'``) a plain
        word; bash sees the same ``NAME=value`` after quote removal in all three, so the name is checked
        from the word's value exactly as from the other two shapes (:meth:`declared`). The parser may also cut
        one bash word into parts (``export PA"TH=x"`` is a name node ``PA`` then a string): parts with no blank
        between them are one operand, read as bash reads it, joined."""
        kw = node.children[0].type if node.children else ""
        seen: list[Word] = []  # the operands, for what the builtin prints (.envreads: "export -p", "declare")
        for group in _operands(node.children[1:]):
            c = group[0]
            text = src[c.start_byte:c.end_byte].decode(errors="replace")
            if len(group) > 1:
                if any(x.type not in _WORD_TYPES and x.type != "variable_name" for x in group):
                    self.refuse(f"{kw}: an operand the parser split into parts of another kind (ambiguous)")
                    continue
                pieces = [p for x in group for p in (
                    self.pieces(x, depth, src, quoted=False) if x.type != "variable_name"
                    else unquoted_pieces(src[x.start_byte:x.end_byte].decode(errors="replace")))]
                ws = make_words(pieces)
                seen += ws
                self.declared_words(kw, ws)
            elif c.type == "variable_assignment":
                self.assignment(c, depth, src)
                seen.append(literal_word(text))
            elif c.type in _WORD_TYPES:
                ws = self.words(c, depth, src)
                seen += ws
                self.declared_words(kw, ws)
            elif c.type == "variable_name":
                self.declared(kw, text)
                seen.append(literal_word(text))
        self.printed(kw, seen)
        self.out.commands.append(Command(kw, (kw,), frozenset(), ()))

    def declared_words(self, kw: str, words: list[Word]) -> None:
        """The operands of a declaration builtin as bash hands them over (after expansion and quote removal)."""
        for w in words:
            if not w.literal:
                self.refuse(f"{kw} with an unknown word")
            elif w.text.startswith("-"):
                if re.search(r"[inaAxf]", w.text[1:]) and kw != "export":
                    self.refuse(f"{kw} {w.text}: attributes that evaluate text or name other variables")
            elif not plain_name(w.text.split("=", 1)[0]):
                self.refuse(f"{kw} {w.text[:30]!r}: a subscript in a name is evaluated as arithmetic "
                            "(can run commands)")
            else:
                self.declared(kw, w.text.split("=", 1)[0])

    def declared(self, kw: str, name: str) -> None:
        """A declaration builtin names ``name`` (to set, export or mark it): refused when the variable changes
        what runs (:data:`~.programs.UNSAFE_ENV`), as an assignment to it is."""
        if UNSAFE_ENV.fullmatch(name):
            self.refuse(f"{kw} {name} injects code or changes what runs")

    # -- words -----------------------------------------------------------------------------------------
    def pieces(self, node: Any, depth: int, src: bytes, quoted: bool) -> list[Piece]:
        t = node.type
        unknown: Piece = ("a", "") if quoted else ("A", "")
        raw = src[node.start_byte:node.end_byte].decode("utf-8", "surrogatepass")
        if t in ("word", "number", "string", "concatenation") and unread_substitution(node, src):
            self.refuse(f"a substitution in {raw[:20]!r} that the parser did not read")
        if t in ("word", "number"):
            if re.search(r"(?<!\\)[\s]", raw):
                self.refuse(f"the parser read {raw[:20]!r} as one word across whitespace (ambiguous)")
            return unquoted_pieces(raw)
        if t == "raw_string":
            return [("q", c) for c in raw[1:-1]]
        if t == "ansi_c_string":
            if self.posix_sh:  # dash reads $'..' as "$" and a quoted string: not decodable both ways
                self.refuse("$'...' inside a sh payload (dash and bash read it differently)")
            return [("q", c) for c in decode_ansi_c(raw[2:-1])]
        if t in ("string", "translated_string"):
            out: list[Piece] = []
            pos = node.start_byte + (2 if t == "translated_string" else 1)
            end = node.end_byte - 1
            for c in node.children:
                if not c.is_named:
                    continue
                if c.start_byte > pos:
                    out += dquoted_pieces(src[pos:c.start_byte].decode("utf-8", "surrogatepass"))
                if c.type == "string_content":
                    out += dquoted_pieces(src[c.start_byte:c.end_byte].decode("utf-8", "surrogatepass"))
                else:
                    out += self.pieces(c, depth, src, quoted=True)
                pos = max(pos, c.end_byte)
            if end > pos:
                out += dquoted_pieces(src[pos:end].decode("utf-8", "surrogatepass"))
            return out
        if t == "concatenation":
            out = []
            pos = node.start_byte
            for c in node.children:
                if c.start_byte > pos:
                    gap = src[pos:c.start_byte].decode("utf-8", "surrogatepass")
                    if re.search(r"\s", gap):
                        self.refuse("the parser joined words across whitespace (ambiguous)")
                    out += unquoted_pieces(gap)
                out += self.pieces(c, depth, src, quoted) if c.is_named else unquoted_pieces(
                    src[c.start_byte:c.end_byte].decode("utf-8", "surrogatepass"))
                pos = c.end_byte
            return out
        if t == "brace_expression":
            return unquoted_pieces(raw)
        if t in ("command_substitution", "process_substitution"):
            self.substitution(node, raw, depth, src, quoted)
            return [unknown]
        if t == "arithmetic_expansion":
            self.arithmetic(node, depth, src)
            return [unknown]
        if t in ("simple_expansion", "expansion"):
            if t == "expansion" and re.search(r"[@*]\s*[QEPAKak]\}$|!", raw):
                self.refuse(f"indirect or transforming expansion {raw!r}")
            if re.search(r"\$\(|`|[<>]\(", raw) and not _has(node, ("command_substitution", "process_substitution")):
                self.refuse(f"{raw[:30]!r}: a substitution inside an expansion the parser did not read")
            if t == "expansion" and (_NAME_SUBSCRIPT.match(raw) or _NAME_OFFSET.match(raw)):
                self.refuse(f"{raw[:30]!r}: a subscript or offset is evaluated as arithmetic, and a variable's value "
                            "in it is evaluated again (can run commands)")
            self.read_env(expansion_name(node, src), repr(raw[:30]))  # (.envreads)
            self.descend_words(node, depth, src)
            return [unknown]
        self.descend_words(node, depth, src)
        return [unknown]

    def words(self, node: Any, depth: int, src: bytes) -> list[Word]:
        self.spend(1)
        if node.end_byte - node.start_byte > MAX_WORD:
            self.refuse(f"a word longer than {MAX_WORD} characters (refused unread: the time to decide is bounded)")
            return [ANY_WORD]
        tracked = loop_value(node, src, self.loopvars)
        if tracked is not None:
            return tracked
        try:
            pieces = self.pieces(node, depth, src, quoted=False)
            words = make_words(pieces)
            if self.posix_sh and len(words) > 1:  # dash does no brace expansion, bash-as-sh does: both
                words += make_words([("q", c) if c in "{}," and k == "u" else (k, c) for k, c in pieces])
            return words
        except TooManyWords:
            self.refuse("brace expansion makes too many words, or a brace or glob set is too long to read")
            return [ANY_WORD]

    # -- redirections ----------------------------------------------------------------------------------
    def redirect(self, node: Any, depth: int, src: bytes) -> None:
        t = node.type
        if t == "herestring_redirect":
            self.descend_words(node, depth, src)
            for c in node.children:
                if c.type in _WORD_TYPES:
                    self.words(c, depth, src)
            return
        if t == "heredoc_redirect":
            start = next((c for c in node.children if c.type == "heredoc_start"), None)
            quoted = start is not None and re.search(r"['\"\\]", src[start.start_byte:start.end_byte].decode(
                errors="replace"))
            region = src[node.start_byte:node.end_byte]
            if re.search(rb"\\\r?\n", region):
                self.refuse("a backslash-newline in a here-document or its opening line (bash joins the lines "
                            "before it looks for the delimiter; the parser does not)")
            if b"\r" in region:
                self.refuse("a carriage return in a here-document (where it ends is ambiguous)")
            why = heredoc_mismatch(node, src)
            if why is not None:
                self.refuse(why)
            for c in node.children:
                if c.type == "heredoc_body":
                    if not quoted:
                        if unread_substitution(c, src):
                            self.refuse("a substitution in a here-document the parser did not read")
                        self.descend_words(c, depth, src)
                elif c.is_named and c.type not in ("heredoc_start", "heredoc_end", "heredoc_content",
                                                   "file_descriptor"):
                    if c.type in ("file_redirect", "herestring_redirect", "heredoc_redirect"):
                        self.redirect(c, depth, src)
                    else:
                        self.stmt(c, depth, src)
            return
        op = ""
        dest = None
        for c in node.children:
            if not c.is_named:
                op = src[c.start_byte:c.end_byte].decode(errors="replace")
            elif c.type != "file_descriptor" and dest is None:
                dest = c
            elif c.type != "file_descriptor":
                self.refuse("a redirection with two targets (the parser joined lines; ambiguous)")
        if dest is None:
            self.refuse("a redirection without a target")
            return
        if self.posix_sh and op.startswith("&>"):
            self.refuse("'&>' inside a sh payload (dash reads it as '&' then '>')")
        for w in self.words(dest, depth, src):
            if op in (">&", "<&") and w.literal and re.fullmatch(r"\d+-?|-", w.text):
                continue  # duplicating or closing a descriptor, not a path
            if w.unknown:
                self.refuse(f"redirection target {src[dest.start_byte:dest.end_byte].decode(errors='replace')!r}"
                            " is not a fixed path")
            self.add_paths(w, writes=op.lstrip("0123456789&").startswith(">") or op.startswith("<>"))
        if dest.type == "process_substitution":
            pass

    # -- commands --------------------------------------------------------------------------------------
    def command(self, node: Any, depth: int, src: bytes) -> None:
        argv: list[Word] = []
        groups: list[list[Any]] = []  # adjacent argument nodes are one word for bash
        last_end = -1
        for c in node.children:
            if c.type == "variable_assignment":
                self.assignment(c, depth, src)
            elif c.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                self.redirect(c, depth, src)
            elif c.type == "command_name" or c.type in _WORD_TYPES or (not c.is_named and c.type == "$"):
                inner = c.children[0] if c.type == "command_name" and c.child_count == 1 else c
                if groups and c.start_byte == last_end:
                    groups[-1].append(inner)
                else:
                    groups.append([inner])
                last_end = c.end_byte
            elif c.is_named and c.type not in ("comment",):
                self.refuse(f"unsupported construct {c.type!r} in a command")
        for g in groups:
            if g[-1].end_byte - g[0].start_byte > MAX_WORD:
                self.refuse(f"a word longer than {MAX_WORD} characters (refused unread: the time to decide is "
                            "bounded)")
                argv.append(ANY_WORD)
                continue
            if len(g) == 1:
                argv += self.words(g[0], depth, src) if g[0].is_named else [ANY_WORD]
            else:
                pieces: list[Piece] = []
                for part in g:
                    pieces += self.pieces(part, depth, src, quoted=False) if part.is_named else [("A", "")]
                try:
                    argv += make_words(pieces)
                except TooManyWords:
                    self.refuse("brace expansion makes too many words, or a brace or glob set is too long to read")
                    argv.append(ANY_WORD)
        if argv:
            self.resolve(argv, depth, "")


def _has(node: Any, types: tuple[str, ...]) -> bool:
    if node.type in types:
        return True
    return any(_has(c, types) for c in node.children)


def _operands(nodes: list[Any]) -> list[list[Any]]:
    """Nodes grouped into bash words: a node that starts where the previous one ended is part of its word."""
    groups: list[list[Any]] = []
    for n in nodes:
        if groups and n.start_byte == groups[-1][-1].end_byte:
            groups[-1].append(n)
        else:
            groups.append([n])
    return groups
