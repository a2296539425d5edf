"""Every command a bash string runs, read with the bash grammar (tree-sitter-bash), fail closed.

:func:`analyse` parses the text with tree-sitter-bash and walks every simple command, pipeline, list,
subshell, compound command, redirection and here-document; command and process substitutions are walked
too (they run). Each command's program is resolved through wrappers with their real option arity
(:mod:`.programs`), ``busybox``/``toybox`` applets, ``find -exec/-execdir/-ok/-okdir`` (and ``-delete``,
read as ``rm -r -f`` of the start points), POSIX shells' ``-c`` payloads (parsed again, recursively) and
``su -c``/``flock -c``/``env -S``/``watch`` payloads. Every argument is a path candidate (:mod:`.paths`),
and so is every redirection target.

Fail closed by construction: whatever cannot be resolved statically is listed in
:attr:`Analysis.unresolvable` with a reason, and a rule set decides what that means (``ToolRuleGuard``:
refuse by default). Unresolvable: a parse error (tree-sitter ``ERROR``/``MISSING`` nodes), a command
word that is not a fixed word (``$(printf rm)``, ``$x``, ``rm${IFS}-rf``, a glob), a redirection or
``cd`` target that is not fixed, ``eval``/``source``/``.``/``alias``/``trap``/``coproc``/``hash``/``shopt``
and the like, a function definition, arithmetic on variables, a shell or interpreter reading code from a
file, standard input or a here-document, inline code of a non-shell interpreter (``python -c``,
``perl -e``, ``php -r``), ``awk`` programs that can run commands or write files, a wrapper option whose
arity is unknown, environment variables that inject code (``BASH_ENV``, ``LD_PRELOAD``...), and nesting
beyond :data:`MAX_DEPTH`. Nothing is skipped silently.

Why tree-sitter-bash and not bashlex (both on PyPI; compared on the corpus of
``tests/policies/test_shell_analysis.py`` and ``benchmarks/shell_analysis.py``): tree-sitter-bash is
maintained (the grammar the editors use), parses every construct of the corpus (bashlex 0.18 raises
``NotImplementedError`` on ``case``, ``coproc`` and arithmetic expansion and a ``ParsingError`` on
``[[ ... ]]``), marks what it cannot read with ``ERROR`` nodes instead of aborting (so the refusal can
say where), and is a compiled parser (about 4x faster than bashlex's pure-Python yacc on a pipeline).
Where its tree differs from what bash does (``coproc``, ``$"..."``), the analysis refuses or merges, and
the differential harness (``tests/policies/test_shell_differential.py``) runs real bash to find such gaps.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Iterable

from ...core.canonical import canonical_name, strip_invisible
from .globs import ANY_CHAR, Token, intersects, literal_tokens
from .paths import PathForm, word_paths
from .programs import (AWKS, INFO_OPTIONS, INTERPRETERS, NO_PATH_OPERANDS, OTHER_SHELLS, POSIX_SHELLS, UNRESOLVABLE_BUILTINS, UNSAFE_ENV, WRAPPERS,
                       Wrapper, flags_of)
from .words import Piece, TooManyWords, Word, decode_ansi_c, literal_word, make_words

__all__ = ["MAX_DEPTH", "Analysis", "Command", "analyse", "analyse_argv"]

MAX_DEPTH = 8
MAX_TEXT = 100_000
_DASH_ANY: tuple[Token, ...] = (("c", (False, frozenset("-"))), ("*", ANY_CHAR))
_ANY_WORD = Word("*", (("*", ANY_CHAR),), literal=False, unknown=True, split=True)
_STATEMENTS = frozenset({"program", "list", "pipeline", "compound_statement", "subshell", "do_group",
                         "negated_command", "redirected_statement", "if_statement", "elif_clause", "else_clause",
                         "while_statement", "case_item"})
_WORD_TYPES = frozenset({"word", "number", "string", "raw_string", "ansi_c_string", "concatenation",
                         "simple_expansion", "expansion", "command_substitution", "process_substitution",
                         "arithmetic_expansion", "brace_expression", "translated_string"})


@dataclass(frozen=True)
class Command:
    """One command that runs: canonical program name, its words, flags and operands as rules see them."""

    program: str
    argv: tuple[str, ...]            # the words as expanded (unknown parts shown as ``*``)
    flags: frozenset[str]
    operands: tuple[str, ...]
    unknown_args: bool = False       # some word is unknown or a glob that could expand to an option
    via: str = ""                    # the wrapper chain that runs it ("sudo > timeout")
    words: tuple[Word, ...] = ()


@dataclass
class Analysis:
    """What a command string does, as far as it can be known statically (see the module docstring)."""

    commands: list[Command] = field(default_factory=list)
    paths: list[PathForm] = field(default_factory=list)
    unresolvable: list[str] = field(default_factory=list)

    @property
    def resolved(self) -> bool:
        return not self.unresolvable

    @property
    def programs(self) -> list[str]:
        return [c.program for c in self.commands]


_PARSER: Any = None


def _parser() -> Any:
    global _PARSER
    if _PARSER is None:
        import tree_sitter_bash
        from tree_sitter import Language, Parser
        _PARSER = Parser(Language(tree_sitter_bash.language()))
    return _PARSER


def program_name(word: str) -> str:
    base = os.path.basename(strip_invisible(word).rstrip("/")) or word
    base = re.sub(r"\.exe$", "", base, flags=re.IGNORECASE)
    name = canonical_name(base)
    return re.sub(r"^(python|perl|ruby|php|lua|pypy)[0-9._]*$", r"\1", name)


class _Walker:
    def __init__(self) -> None:
        self.out = Analysis()
        self.cwds: list[str] = [""]
        self.posix_sh = False  # inside a payload for sh/dash/ash: braces may stay unexpanded

    # -- reporting -------------------------------------------------------------------------------------
    def refuse(self, why: str) -> None:
        if why not in self.out.unresolvable:
            self.out.unresolvable.append(why)

    def add_paths(self, word: Word) -> None:
        self.out.paths.extend(word_paths(word, self.cwds))

    # -- text ------------------------------------------------------------------------------------------
    def text(self, text: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            self.refuse(f"nesting deeper than {MAX_DEPTH} levels")
            return
        if len(text) > MAX_TEXT:
            self.refuse(f"command text longer than {MAX_TEXT} characters")
            return
        clean = strip_invisible(text)
        if "\x00" in clean:
            self.refuse("a NUL character in the command")
            return
        data = clean.encode("utf-8", "surrogatepass")
        self.src = data
        tree = _parser().parse(data)
        skipped = _skipped_text(tree.root_node, data)
        if skipped is not None:
            self.refuse(f"the parser skipped text near {skipped!r} (its tree does not cover the command)")
            return
        self.stmt(tree.root_node, depth, data)

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
            for c in node.children:
                if c.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                    self.redirect(c, depth, src)
                else:
                    self.stmt(c, depth, src)
        elif t == "command":
            self.command(node, depth, src)
        elif t in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
            self.redirect(node, depth, src)
        elif t == "variable_assignment" or t == "variable_assignments":
            self.assignment(node, depth, src)
        elif t == "declaration_command" or t == "unset_command":
            self.declaration(node, depth, src)
        elif t in ("for_statement", "select_statement"):
            for c in node.children:
                if c.type in _WORD_TYPES:
                    self.words(c, depth, src)
                elif c.type == "do_group":
                    self.stmt(c, depth, src)
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
        if re.search(r"-(eq|ne|lt|le|gt|ge)\b", body) and re.search(r"[A-Za-z_$]", re.sub(r"-(eq|ne|lt|le|gt|ge)\b|\[\[|\]\]|\(\(|\)\)", "", body)):
            self.refuse("arithmetic on variables can run commands (array subscripts)")
        self.descend_words(node, depth, src)

    def arithmetic(self, node: Any, depth: int, src: bytes) -> None:
        if _has(node, ("variable_name", "simple_expansion", "expansion", "word", "subscript")):
            self.refuse("arithmetic on variables can run commands (array subscripts)")
        self.descend_words(node, depth, src)

    def descend_words(self, node: Any, depth: int, src: bytes) -> None:
        """Walk the substitutions inside any node (they run)."""
        for c in node.children:
            if c.type in ("command_substitution", "process_substitution"):
                self.pieces(c, depth, src, quoted=False)
            elif c.type == "arithmetic_expansion":
                self.arithmetic(c, depth, src)
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

    def declaration(self, node: Any, depth: int, src: bytes) -> None:
        kw = node.children[0].type if node.children else ""
        for c in node.children[1:]:
            if c.type == "variable_assignment":
                self.assignment(c, depth, src)
            elif c.type in _WORD_TYPES:
                for w in self.words(c, depth, src):
                    if not w.literal:
                        self.refuse(f"{kw} with an unknown word")
                    elif w.text.startswith("-") and re.search(r"[inaAxf]", w.text[1:]) and kw != "export":
                        self.refuse(f"{kw} {w.text}: attributes that evaluate text or name other variables")
            elif c.type == "variable_name":
                txt = src[c.start_byte:c.end_byte].decode(errors="replace")
                if UNSAFE_ENV.fullmatch(txt):
                    self.refuse(f"{kw} {txt} injects code or changes what runs")
        self.out.commands.append(Command(kw, (kw,), frozenset(), ()))

    # -- words -----------------------------------------------------------------------------------------
    def pieces(self, node: Any, depth: int, src: bytes, quoted: bool) -> list[Piece]:
        t = node.type
        unknown: Piece = ("a", "") if quoted else ("A", "")
        raw = src[node.start_byte:node.end_byte].decode("utf-8", "surrogatepass")
        if t in ("word", "number"):
            if re.search(r"(?<!\\)[\s]", raw):
                self.refuse(f"the parser read {raw[:20]!r} as one word across whitespace (ambiguous)")
            return _unquoted(raw)
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
                    out += _dquoted(src[pos:c.start_byte].decode("utf-8", "surrogatepass"))
                if c.type == "string_content":
                    out += _dquoted(src[c.start_byte:c.end_byte].decode("utf-8", "surrogatepass"))
                else:
                    out += self.pieces(c, depth, src, quoted=True)
                pos = max(pos, c.end_byte)
            if end > pos:
                out += _dquoted(src[pos:end].decode("utf-8", "surrogatepass"))
            return out
        if t == "concatenation":
            out = []
            pos = node.start_byte
            for c in node.children:
                if c.start_byte > pos:
                    gap = src[pos:c.start_byte].decode("utf-8", "surrogatepass")
                    if re.search(r"\s", gap):
                        self.refuse("the parser joined words across whitespace (ambiguous)")
                    out += _unquoted(gap)
                out += self.pieces(c, depth, src, quoted) if c.is_named else _unquoted(
                    src[c.start_byte:c.end_byte].decode("utf-8", "surrogatepass"))
                pos = c.end_byte
            return out
        if t == "brace_expression":
            return _unquoted(raw)
        if t in ("command_substitution", "process_substitution"):
            for c in node.children:
                if c.is_named:
                    self.stmt(c, depth + 1, src)
            return [unknown]
        if t == "arithmetic_expansion":
            self.arithmetic(node, depth, src)
            return [unknown]
        if t in ("simple_expansion", "expansion"):
            if t == "expansion" and re.search(r"[@*]\s*[QEPAKak]\}$|!", raw):
                self.refuse(f"indirect or transforming expansion {raw!r}")
            self.descend_words(node, depth, src)
            return [unknown]
        self.descend_words(node, depth, src)
        return [unknown]

    def words(self, node: Any, depth: int, src: bytes) -> list[Word]:
        try:
            pieces = self.pieces(node, depth, src, quoted=False)
            words = make_words(pieces)
            if self.posix_sh and len(words) > 1:  # dash does no brace expansion, bash-as-sh does: both
                words += make_words([("q", c) if c in "{}," and k == "u" else (k, c) for k, c in pieces])
            return words
        except TooManyWords:
            self.refuse("brace expansion makes too many words")
            return [_ANY_WORD]

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
            for c in node.children:
                if c.type == "heredoc_body":
                    if not quoted:
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
            self.add_paths(w)
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
            if len(g) == 1:
                argv += self.words(g[0], depth, src) if g[0].is_named else [_ANY_WORD]
            else:
                pieces: list[Piece] = []
                for part in g:
                    pieces += self.pieces(part, depth, src, quoted=False) if part.is_named else [("A", "")]
                try:
                    argv += make_words(pieces)
                except TooManyWords:
                    self.refuse("brace expansion makes too many words")
                    argv.append(_ANY_WORD)
        if argv:
            self.resolve(argv, depth, "")

    def resolve(self, argv: list[Word], depth: int, via: str, stdin_args: bool = False) -> None:
        """Record ``argv`` as a command and resolve what it runs in turn (wrappers, payloads)."""
        if depth > MAX_DEPTH:
            self.refuse(f"nesting deeper than {MAX_DEPTH} levels")
            return
        if not argv:
            return
        head = argv[0]
        if not head.literal:
            self.refuse(f"the command word {head.text!r} is not a fixed word (expansion, substitution or glob)")
            return
        name = program_name(head.text)
        args = argv[1:]
        literal_args = [w.text for w in args]
        flags, operands = flags_of(name, [w.text for w in args if w.literal])
        unknown = stdin_args or any(not w.literal and (w.split or intersects(w.tokens, _DASH_ANY)) for w in args)
        if stdin_args:  # xargs: more words come from standard input
            args = args + [_ANY_WORD]
            argv = argv + [_ANY_WORD]
        self.out.commands.append(Command(name, tuple([head.text] + literal_args), flags,
                                         tuple(w.text for w in args if not (w.literal and w.text in ()) and
                                               not (w.literal and w.text.startswith("-"))),
                                         unknown, via, tuple(argv)))
        if name == "printf" and args and args[0].text.startswith("-v"):
            var = args[0].text[2:] or (args[1].text if len(args) > 1 and args[1].literal else "PATH")
            if not args[0].literal or UNSAFE_ENV.fullmatch(var.split("[", 1)[0]):
                self.refuse("printf -v sets a variable that changes what runs")
        for w in args:  # echo's words are text, but a glob (or an unquoted expansion) makes bash list a directory
            if name not in NO_PATH_OPERANDS or w.split or not (w.literal or w.unknown):
                self.add_paths(w)
        if name in UNRESOLVABLE_BUILTINS:
            why = UNRESOLVABLE_BUILTINS[name]
            if why:
                self.refuse(why)
            return
        if name in ("cd", "pushd", "popd"):
            self.chdir(name, args)
        elif name in WRAPPERS:
            self.wrapper(name, WRAPPERS[name], args, depth, via)
        elif name in ("busybox", "toybox"):
            rest = [w for w in args]
            while rest and rest[0].literal and rest[0].text.startswith("-"):
                if rest[0].text == "--":
                    rest = rest[1:]
                    break
                return  # busybox --list / --install: runs no applet
            if rest:
                self.resolve(rest, depth + 1, _chain(via, name))
        elif name in POSIX_SHELLS or name in OTHER_SHELLS:
            self.shell(name, args, depth, via)
        elif name in INTERPRETERS:
            self.interpreter(name, INTERPRETERS[name], args)
        elif name in AWKS:
            self.awk(name, args)
        elif name in ("find", "gfind", "bfs"):
            self.find(name, args, depth, via)
        elif name == "sed" or name == "gsed":
            self.sed(args)

    def chdir(self, name: str, args: list[Word]) -> None:
        targets = [w for w in args if not (w.literal and w.text.startswith("-") and w.text != "-")]
        if name == "popd" or not targets:
            return
        w = targets[0]
        if not w.literal:
            self.refuse(f"{name} to {w.text!r}, not a fixed directory")
            return
        if w.text == "-":
            return  # back to a directory already in the set
        for form, _ in word_paths(w, self.cwds):
            if form not in self.cwds:
                self.cwds.append(form)
        if len(self.cwds) > 16:
            self.refuse("too many directory changes to follow")

    def wrapper(self, name: str, spec: Wrapper, args: list[Word], depth: int, via: str) -> None:
        i = 0
        meaning: set[str] = set()
        payload: Word | None = None
        while i < len(args):
            w = args[i]
            if not w.literal:
                self.refuse(f"{name}: the word {w.text!r} is not fixed, so where the command starts is unknown")
                return
            text = w.text
            if text == "--":
                i += 1
                break
            if name == "env" and text == "-":
                i += 1
                continue
            if text.startswith("--") and len(text) > 2:
                opt, eq, _ = text[2:].partition("=")
                known = [n for n in spec.long_arg | spec.long_flag if n.startswith(opt)]
                exact = opt in spec.long_arg or opt in spec.long_flag
                if not exact and len(known) != 1:
                    self.refuse(f"{name}: unknown option --{opt}")
                    return
                full = opt if exact else known[0]
                meaning.add(spec.extra.get(full, ""))
                value: Word | None = None
                if full in spec.long_arg:
                    if eq:
                        value = literal_word(text.split("=", 1)[1])
                    else:
                        if i + 1 >= len(args):
                            self.refuse(f"{name}: --{full} needs a value")
                            return
                        value = args[i + 1]
                        i += 1
                    self.option_value(name, spec.extra.get(full, ""), value, depth, via)
                    if spec.extra.get(full) == "payload":
                        payload = value
                i += 1
                continue
            if spec.numeric_option and re.fullmatch(r"-\d+", text):
                i += 1
                continue
            if text.startswith("-") and len(text) > 1:
                j = 1
                while j < len(text):
                    ch = text[j]
                    if ch in spec.short_arg:
                        attached = text[j + 1:]
                        if attached:
                            value = literal_word(attached)
                        else:
                            if i + 1 >= len(args):
                                self.refuse(f"{name}: -{ch} needs a value")
                                return
                            value = args[i + 1]
                            i += 1
                        meaning.add(spec.extra.get(ch, ""))
                        self.option_value(name, spec.extra.get(ch, ""), value, depth, via)
                        if spec.extra.get(ch) == "payload":
                            payload = value
                        break
                    if ch in spec.optional_attached:
                        break
                    if ch not in spec.short_flag:
                        self.refuse(f"{name}: unknown option -{ch}")
                        return
                    meaning.add(spec.extra.get(ch, ""))
                    j += 1
                i += 1
                continue
            if spec.assignments and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", text, re.S):
                if UNSAFE_ENV.fullmatch(text.split("=", 1)[0]):
                    self.refuse(f"{name} {text.split('=', 1)[0]}=...: injects code or changes what runs")
                i += 1
                continue
            break
        rest = args[i:]
        if "unknown" in meaning:
            self.refuse(f"{name}: an option whose meaning depends on the version")
            return
        if "noexec" in meaning or "edit" in meaning:
            return  # sudo -l / -e (sudoedit: operands are files), command -v: nothing else runs
        positional = spec.positional
        if positional == -1:  # su [options] [user [args...]]: args go to the user's shell
            if payload is None:
                self.refuse(f"{name} without -c starts a shell")
            elif len(rest) > 1:
                self.refuse(f"{name}: extra arguments are passed to the user's shell")
            return
        if len(rest) < positional:
            if spec.no_command == "shell" or (payload is None and positional):
                self.refuse(f"{name}: incomplete command") if spec.no_command != "shell" else \
                    self.refuse(f"{name} without a command starts a shell")
            return
        for w in rest[:positional]:
            if not w.literal:
                self.refuse(f"{name}: the word {w.text!r} is not fixed")
                return
        rest = rest[positional:]
        if payload is not None:
            if rest and name == "flock":
                self.refuse("flock: both -c and a command")
            return
        if "shell" in meaning and not rest:
            self.refuse(f"{name} -s/-i without a command starts a shell")
            return
        if not rest:
            if spec.no_command == "shell":
                self.refuse(f"{name} without a command starts a shell")
            return
        if spec.extra.get("join") and "exec" not in meaning:  # watch: the words joined, run by sh -c
            if any(not w.literal for w in rest):
                self.refuse(f"{name}: a command with unknown words")
                return
            self.text(" ".join(w.text for w in rest), depth + 1)
            return
        self.resolve(rest, depth + 1, _chain(via, name), stdin_args=bool(spec.extra.get("stdin_args")))

    def option_value(self, name: str, meaning: str, value: Word, depth: int, via: str) -> None:
        self.add_paths(value)
        if meaning == "payload":
            if not value.literal:
                self.refuse(f"{name}: the code to run is not a fixed string")
            else:
                self.text(value.text, depth + 1)
        elif meaning == "split":  # env -S 'rm -rf /': split like env does (quotes, no expansions)
            if not value.literal or re.search(r"\$|\\[^\\'\" _tnrfv#]", value.text):
                self.refuse(f"{name} -S with expansions or escapes")
                return
            try:
                parts = shlex.split(value.text, comments=True)
            except ValueError:
                self.refuse(f"{name} -S: unbalanced quotes")
                return
            self.resolve([literal_word(p) for p in parts], depth + 1, _chain(via, name))
        elif meaning in ("cwd", "root"):
            if not value.literal:
                self.refuse(f"{name}: the directory {value.text!r} is not fixed")
            elif meaning == "cwd":
                for form, _ in word_paths(value, self.cwds):
                    self.cwds.append(form) if form not in self.cwds else None
        elif meaning == "assign":
            if UNSAFE_ENV.fullmatch(value.text.split("=", 1)[0]):
                self.refuse(f"{name}: setting {value.text.split('=', 1)[0]} injects code")

    def shell(self, name: str, args: list[Word], depth: int, via: str) -> None:
        code = False
        i = 0
        while i < len(args):
            w = args[i]
            if not w.literal:
                self.refuse(f"{name}: the word {w.text!r} is not fixed")
                return
            text = w.text
            if text in ("--", "-"):
                i += 1
                break
            if text in ("--login", "-l") or (text.startswith("-") and not text.startswith("--") and "l" in text):
                self.refuse(f"{name} {text}: a login shell runs profile files that cannot be read here")
                return
            if text in ("--rcfile", "--init-file"):
                self.refuse(f"{name} {text} runs an unknown file")
                return
            if text.startswith("--"):
                i += 1
                continue
            if (text.startswith("-") or text.startswith("+")) and len(text) > 1:
                letters = text[1:]
                if "c" in letters:
                    code = True
                if "s" in letters or "i" in letters:
                    self.refuse(f"{name} {text} reads commands from standard input")
                    return
                if "o" in letters or "O" in letters:
                    i += 1  # -o option / -O shopt take a value
                i += 1
                continue
            break
        rest = args[i:]
        if not code:
            if rest:
                self.refuse(f"{name} runs the script {rest[0].text!r}, which cannot be read here")
            else:
                self.refuse(f"{name} reads commands from standard input")
            return
        if not rest:
            self.refuse(f"{name} -c without code")
            return
        if name in OTHER_SHELLS:
            self.refuse(f"{name} -c: code in another shell's grammar")
            return
        if not rest[0].literal:
            self.refuse(f"{name} -c: the code to run is not a fixed string")
            return
        saved = self.posix_sh
        self.posix_sh = saved or name != "bash"
        try:
            self.text(rest[0].text, depth + 1)
        finally:
            self.posix_sh = saved

    def interpreter(self, name: str, code_opts: str, args: list[Word]) -> None:
        for w in args:
            if not w.literal:
                self.refuse(f"{name}: the word {w.text!r} is not fixed")
                return
            text = w.text
            if text in ("-m",) and name.startswith(("python", "pypy")):
                return  # runs a named module: the allow list decides on the module's name
            if text in ("--version", "--help") or text in INFO_OPTIONS.get(name, ()):
                return  # prints the version or the usage and exits: no code runs
            if text.startswith("--eval") or text.startswith("--print") or text == "--":
                self.refuse(f"{name}: inline code cannot be resolved")
                return
            if text.startswith("-") and not text.startswith("--") and len(text) > 1:
                if any(ch in code_opts for ch in text[1:]):
                    self.refuse(f"{name} {text}: inline code cannot be resolved")
                    return
                if text == "-":
                    break
                continue
            if text.startswith("--"):
                continue
            return  # a script file: the allow list decides on the program
        self.refuse(f"{name} reads code from standard input")

    def awk(self, name: str, args: list[Word]) -> None:
        i = 0
        program: Word | None = None
        while i < len(args):
            text = args[i].text
            if not args[i].literal:
                self.refuse(f"{name}: the word {text!r} is not fixed")
                return
            if text in ("-f", "--file", "-i", "--include", "-l", "--load", "-E", "--exec") or \
                    text.startswith(("--file=", "--include=", "--load=", "--exec=")):
                self.refuse(f"{name} {text}: a program from a file")
                return
            if text in ("-e", "--source"):
                program = args[i + 1] if i + 1 < len(args) else None
                i += 2
                continue
            if text in ("-v", "-F", "--assign", "--field-separator"):
                i += 2
                continue
            if text.startswith("-") and len(text) > 1 and text != "--":
                i += 1
                continue
            if text == "--":
                i += 1
            break
        if program is None:
            program = args[i] if i < len(args) else None
        if program is None:
            self.refuse(f"{name} without a program")
        elif re.search(r"system|\||>|getline|@load|@include|ENVIRON\[|PROCINFO", program.text):
            self.refuse(f"{name}: the program can run commands or write files")

    def sed(self, args: list[Word]) -> None:
        scripts = []
        i = 0
        given = False
        while i < len(args):
            text = args[i].text
            if text in ("-e", "--expression") and i + 1 < len(args):
                scripts.append(args[i + 1])
                given = True
                i += 2
                continue
            if text in ("-f", "--file") or text.startswith("--file="):
                self.refuse("sed -f: a script from a file")
                return
            if text.startswith("-") and len(text) > 1:
                i += 1
                continue
            if not given:
                scripts.append(args[i])
            break
        for s in scripts:
            if not s.literal or re.search(r"(^|[;\n}{]|\d|\$|/)\s*[ewWrR]\b|/[gpiImM0-9]*[ew]", s.text):
                self.refuse("sed: the script can run commands or read/write files (e, w, r)")
                return

    def find(self, name: str, args: list[Word], depth: int, via: str) -> None:
        i = 0
        starts: list[Word] = []
        while i < len(args) and args[i].literal and args[i].text in ("-H", "-L", "-P") or \
                (i < len(args) and args[i].literal and args[i].text.startswith(("-D", "-O"))):
            i += 2 if args[i].text == "-D" else 1
        while i < len(args) and not (args[i].literal and (args[i].text.startswith("-") or args[i].text in "()!,")):
            starts.append(args[i])
            i += 1
        while i < len(args):
            w = args[i]
            if not w.literal:
                i += 1
                continue
            if w.text in ("-exec", "-execdir", "-ok", "-okdir"):
                j = i + 1
                while j < len(args) and not (args[j].literal and args[j].text in (";", "+")):
                    j += 1
                inner = [_ANY_WORD if (x.literal and "{}" in x.text and k > i + 1) else x
                         for k, x in enumerate(args[i + 1:j], start=i + 1)]
                if j >= len(args):
                    self.refuse(f"{name} {w.text} without ';' or '+'")
                if inner:
                    self.resolve(inner, depth + 1, _chain(via, f"{name} {w.text}"))
                i = j + 1
                continue
            if w.text == "-delete":
                targets = starts or [literal_word(".")]
                self.out.commands.append(Command("rm", ("rm", "-r", "-f", *[t.text for t in targets]),
                                                 frozenset({"r", "f"}), tuple(t.text for t in targets), True,
                                                 _chain(via, f"{name} -delete"), tuple(targets)))
            i += 1


_OPAQUE = frozenset({"heredoc_body", "string", "translated_string"})  # text between their children is content
_CODE = frozenset({"command_substitution", "process_substitution"})  # code again inside an opaque node
_GAP = re.compile(rb"(?:[ \t\r\n]|\\\n)*")


def _skipped_text(root: Any, src: bytes) -> str | None:
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


def _chain(via: str, name: str) -> str:
    return f"{via} > {name}" if via else name


def _has(node: Any, types: tuple[str, ...]) -> bool:
    if node.type in types:
        return True
    return any(_has(c, types) for c in node.children)


def _unquoted(raw: str) -> list[Piece]:
    out: list[Piece] = []
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and i + 1 < len(raw):
            if raw[i + 1] != "\n":
                out.append(("q", raw[i + 1]))
            i += 2
            continue
        out.append(("u", ch))
        i += 1
    return out


def _dquoted(raw: str) -> list[Piece]:
    out: list[Piece] = []
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and i + 1 < len(raw) and raw[i + 1] in '$`"\\\n':
            if raw[i + 1] != "\n":
                out.append(("q", raw[i + 1]))
            i += 2
            continue
        out.append(("q", ch))
        i += 1
    return out


def analyse(command: str) -> Analysis:
    """Every command ``command`` runs when bash reads it, every path it names, and what is unresolvable."""
    w = _Walker()
    try:
        w.text(command, 0)
    except RecursionError:
        w.refuse("nesting too deep to read")
    return w.out


def analyse_argv(argv: Iterable[Any]) -> Analysis:
    """The same for an argv list (``["rm", "-rf", "/"]``): the first word is the program, nothing is re-split.

    Non-string scalars (``0``, ``True``) become their text, as ``subprocess`` callers usually do; anything
    else in the list (a dict, a nested list, None) makes the call unresolvable.
    """
    w = _Walker()
    words: list[Word] = []
    for a in argv:
        if isinstance(a, bool) or not isinstance(a, (str, int, float)):
            w.refuse(f"an argv element of type {type(a).__name__}")
            return w.out
        words.append(literal_word(strip_invisible(str(a))))
    try:
        w.resolve(words, 0, "")
    except RecursionError:
        w.refuse("nesting too deep to read")
    return w.out
