"""git's path operands read with git's own grammar: object names (``<rev>:<path>``) and pathspecs.

git does not open its operands as file names. An operand before ``--`` may be an *object name*, and
``HEAD:.env``, ``:.env``, ``:0:.env``, ``HEAD@{1}:.env``, ``HEAD^{tree}:.env`` name the file ``.env`` of a
commit or of the index (git's ``object-name.c``: the name is split at the first ``:`` outside ``{...}``; a
leading ``:`` names the index, ``:<n>:`` its stage ``n``; ``:/<text>`` searches commit messages and names no
path). Any operand may be a *pathspec* (``git help glossary``): an optional magic signature, long
(``:(top,icase,literal,glob,exclude,attr:...)``) or short (``:/`` top, ``:!`` and ``:^`` exclude), then a
pattern git matches with ``wildmatch`` against the repository's file names, where ``*``, ``?`` and ``[...]``
also match ``/`` (``*env`` reaches ``.env`` and ``config/.env``) and ``\\`` escapes the next character; with
``glob`` magic ``*`` stays in one component and only ``**`` as a whole component crosses directories.
:func:`git_readings` returns what each operand names that way, and the shell guard checks it like any path
operand (case folded as every path is, which covers ``icase``).

Guarantees (fail closed):

- an object name's path part is read as the path it names, through globs and unknown parts of the word
  (bash may expand ``HEAD:.en?`` to ``HEAD:.env`` before git splits it): a glob or unknown token that may be
  a ``:`` is also a split point;
- a pathspec's pattern is read as the glob git matches. A ``*`` that may cross ``/`` is read as staying in
  its component, and, when it starts inside a component (``.s*rsa``), also as ending that component, so the
  directory it completes (``.ssh``) is checked; the directories a crossing ``*`` passes through below the
  named part are read as a tree (:attr:`~.model.Analysis.subtrees`), the same reading ``git log -p`` with
  no pathspec (which reads the whole repository) already gets. So ``*env``, ``.e*``, ``.s*rsa``,
  ``:(icase).ENV`` meet ``.env`` or ``*/.ssh/*`` and ``*.py`` does not;
- ``exclude`` magic only narrows and names nothing; ``attr:`` narrows the pattern it is given with;
  ``literal`` makes the pattern the file name itself; a magic word this reader does not know (``prefix:``,
  a reserved short mnemonic such as ``:-``, an unclosed ``:(``) is unresolvable, never read as a literal;
- a word whose value bash computes (a glob, ``$x``) may carry any magic and any wildcards: every suffix after
  a token that may be ``:`` or ``)`` is read as a pattern too, and each computed part as a ``*`` that crosses
  ``/`` (``git add *.py`` may expand to a file named ``*.py``, which git matches at any depth);
- the word after an option that takes a message or a search string (``commit -m``, ``log --grep``, ``grep
  -e``) and ``git grep``'s own pattern are not operands; ``git -C DIR`` and ``--work-tree`` put the relative
  operands below ``DIR`` as well.

Written by hand: no maintained Python library parses git's object names or pathspec magic (GitPython and
dulwich call git or read refs; neither exposes ``parse_pathspec``); the rules above follow git's
``object-name.c`` (``get_oid_with_context_1``), ``pathspec.c`` (``parse_long_magic``,
``parse_short_magic``) and ``wildmatch.c``, and a differential test against real git
(``tests/policies/shell/test_gitargs.py``) checks them.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from .globs import ANY_CHAR, NOT_SLASH, SetTooLong, Token, parse_set
from .words import Word, literal_word

__all__ = ["CONFIG_READ", "GLOBAL_VALUES", "GitReadings", "MAX_READINGS", "READ_ONLY", "git_readings",
           "object_paths", "pattern_readings", "prints_config"]

_SLASH: Token = ("c", (False, frozenset("/")))
_NS_STAR: Token = ("*", NOT_SLASH)
#: long magic words git knows (``pathspec.c``); ``prefix:`` is internal and refused
_LONG_MAGIC = frozenset({"top", "literal", "glob", "icase", "exclude"})
#: short magic: the mnemonics git knows, and the reserved characters it dies on (``GIT_PATHSPEC_MAGIC``)
_SHORT_MAGIC = {"/": "top", "!": "exclude", "^": "exclude"}
_RESERVED = frozenset("!\"#%&',-/:;<=>@_`~")
#: the most readings one pattern expands to before every wildcard is read as crossing ``/`` (always sound)
MAX_READINGS = 16
#: options whose next word is a message, a search string or a count, not an operand (per subcommand)
_VALUE_OPTIONS: dict[str, frozenset[str]] = {
    **{s: frozenset({"-m", "--message"}) for s in ("commit", "tag", "stash", "merge", "notes")},
    **{s: frozenset({"--author", "--committer", "--grep", "-S", "-G"})
       for s in ("log", "show", "diff", "shortlog", "whatchanged", "rev-list")},
    "grep": frozenset({"-e", "-A", "-B", "-C", "-m", "--max-depth", "--threads", "--context", "--after-context",
                       "--before-context", "--max-count"}),
}


#: subcommands that write no file their operands name (a pathspec of ``checkout``, ``restore``, ``stash`` names
#: files git writes into the working tree, checked as writes by the caller)
READ_ONLY = frozenset({"log", "show", "diff", "grep", "blame", "annotate", "ls-files", "ls-tree", "rev-parse",
                       "shortlog", "describe", "status", "cat-file", "whatchanged", "reflog", "rev-list", "name-rev",
                       "diff-tree", "diff-index", "diff-files", "add", "commit", "remote", "ls-remote", "var"})
#: the files git keeps its configuration in, a remote's URL among it: read when a command prints a value of it
CONFIG_READ = (".git/config", "~/.gitconfig", "~/.config/git/config")


@dataclass
class GitReadings:
    """What git's grammar makes of a command's operands: paths it names, trees it reads, refusals."""

    paths: list[Word] = field(default_factory=list)
    trees: list[Word] = field(default_factory=list)
    unresolvable: list[str] = field(default_factory=list)
    writes: bool = True  # the subcommand may write the files its operands name (not in :data:`READ_ONLY`)


def _lit(ch: str) -> Token:
    return ("c", (False, frozenset(ch)))


def _is_lit(tok: Token, ch: str | None = None) -> bool:
    kind, (neg, chars) = tok
    return kind == "c" and not neg and len(chars) == 1 and (ch is None or ch in chars)


def _may_be(tok: Token, ch: str) -> bool:
    kind, (neg, chars) = tok
    return kind != "^" and ((ch not in chars) if neg else (ch in chars))


def _word(tokens: list[Token], like: Word) -> Word:
    shown = "".join(next(iter(t[1][1])) if _is_lit(t) else ("*" if t[0] == "*" else "?") for t in tokens
                    if t[0] != "^")
    literal = all(_is_lit(t) for t in tokens)
    return Word(shown, tuple(tokens), literal, like.unknown and not literal)


def object_paths(tokens: list[Token]) -> list[list[Token]]:
    """The path parts ``tokens`` may name as a git object name (empty when it names no path)."""
    if not tokens:
        return []
    out: list[list[Token]] = []
    first = tokens[0]
    if _is_lit(first, ":"):
        if len(tokens) > 2 and _is_lit(tokens[1], "/"):
            return []  # ":/<text>": the youngest commit whose message matches <text>
        if len(tokens) > 3 and _is_lit(tokens[2], ":") and _is_lit(tokens[1]) and \
                next(iter(tokens[1][1][1])) in "0123":
            out.append(tokens[3:])  # ":<n>:<path>": stage n of the index
        else:
            out.append(tokens[1:])
    depth, split, guessed = 0, False, False
    for k, tok in enumerate(tokens):
        if not _is_lit(tok):
            if _may_be(tok, ":"):  # a glob or unknown part may be the ":" git splits at
                out.append(([tok] if tok[0] == "*" else []) + tokens[k + 1:])
            guessed = guessed or _may_be(tok, "{") or _may_be(tok, "}")
            continue
        ch = next(iter(tok[1][1]))
        if ch == "{":
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
        elif ch == ":" and k > 0 and ((depth == 0 and not split) or guessed):
            split = split or depth == 0
            out.append(tokens[k + 1:])
    return [p for p in out if p]


def _magic(text: str) -> tuple[set[str], str] | str:
    """``(magic words, pattern)`` of a literal pathspec, or why it is refused."""
    if not text.startswith(":"):
        return set(), text
    if text.startswith(":("):
        end = text.find(")")
        if end < 0:
            return f"git pathspec {text[:40]!r}: an unclosed magic signature"
        words: set[str] = set()
        for item in filter(None, text[2:end].split(",")):
            if item.startswith("attr:"):
                words.add("attr")
            elif item in _LONG_MAGIC:
                words.add(item)
            else:
                return f"git pathspec magic {item[:30]!r} is not one this guard reads"
        return words, text[end + 1:]
    words = set()
    k = 1
    while k < len(text) and text[k] != ":":
        ch = text[k]
        if ch in _SHORT_MAGIC:
            words.add(_SHORT_MAGIC[ch])
        elif ch in _RESERVED:
            return f"git pathspec magic {ch!r} is not one this guard reads"
        else:
            break
        k += 1
    if k < len(text) and text[k] == ":":
        k += 1
    return words, text[k:]


def _elements(tokens: list[Token], glob: bool) -> list[tuple[str, Token | None]]:
    """A pattern as wildmatch reads it: ("lit", tok), ("one", set), ("star", None), ("deep", None) (a ``**``
    component of ``glob`` magic), ("any", None) (a part bash computes: any text, wildcards included)."""
    out: list[tuple[str, Token | None]] = []
    k = 0
    while k < len(tokens):
        tok = tokens[k]
        if tok[0] == "^":
            k += 1
            continue
        if not _is_lit(tok):
            out.append(("any", None))
            k += 1
            continue
        ch = next(iter(tok[1][1]))
        if ch == "\\" and k + 1 < len(tokens):
            nxt = tokens[k + 1]
            out.append(("lit", nxt) if _is_lit(nxt) else ("any", None))
            k += 2
        elif ch == "*":
            run = k
            while k < len(tokens) and _is_lit(tokens[k], "*"):
                k += 1
            whole = (run == 0 or _is_lit(tokens[run - 1], "/")) and (k == len(tokens) or _is_lit(tokens[k], "/"))
            if glob and k - run > 1 and whole:  # "**/" any directories (its "/" with it), a trailing "/**" all
                out.append(("deep", None))
                k += k < len(tokens)
            else:
                out.append(("star", None))
        elif ch == "?":
            out.append(("one", ("c", NOT_SLASH if glob else ANY_CHAR)))
            k += 1
        elif ch == "[":
            rest = "".join(next(iter(t[1][1])) if _is_lit(t) else "\0" for t in tokens[k:])
            try:
                parsed = parse_set(rest, 0, exclude_slash=glob, limit=256)
            except SetTooLong:
                parsed = ((True, frozenset()), len(rest))
            if parsed is None or "\0" in rest[:parsed[1]]:
                out.append(("lit", tok) if parsed is None else ("any", None))
                k += 1 if parsed is None else parsed[1]
            else:
                out.append(("one", ("c", parsed[0])))
                k += parsed[1]
        else:
            out.append(("lit", tok))
            k += 1
    return out


def _choices(elems: list[tuple[str, Token | None]], glob: bool) -> list[list[list[Token]]]:
    """Per element, the token sequences it is read as (see the module docstring)."""
    out: list[list[list[Token]]] = []
    for k, (kind, tok) in enumerate(elems):
        at_start = k == 0 or elems[k - 1] == ("lit", _SLASH)
        if kind == "lit" and tok is not None:
            out.append([[tok]])
        elif kind == "one" and tok is not None:  # "?" and "[...]" match "/" too (not with glob magic)
            neg, chars = tok[1]
            in_part: Token = ("c", (True, chars | {"/"}) if neg else (False, chars - {"/"}))
            out.append([[in_part]] + ([[_SLASH]] if _may_be(tok, "/") else []))
        elif kind == "deep":  # "**/" (any directories) or a trailing "/**" (all below): read as a tree
            out.append([[]])
        elif kind == "any":  # bash computed it: a name holding any wildcards, each may cross "/"
            out.append([[("*", ANY_CHAR)]])
        elif kind == "star" and (glob or at_start):
            out.append([[_NS_STAR]])  # the directories it crosses first are below the named part: a tree
        else:  # completes the component it starts in (".s*rsa" names ".ssh"), or crosses into another
            out.append([[_NS_STAR], [_NS_STAR, _SLASH, _NS_STAR]])
    return out


def pattern_readings(tokens: list[Token], glob: bool) -> tuple[list[list[Token]], list[Token] | None]:
    """The paths a pathspec pattern names (token lists) and the directory it reads below, if it crosses one."""
    elems = _elements(tokens, glob)
    wild = next((k for k, (kind, _) in enumerate(elems) if kind != "lit"), None)
    if wild is None:
        return [[t for _, t in elems if t is not None]], None
    cut = max((k for k in range(wild) if elems[k] == ("lit", _SLASH)), default=-1)
    tree = [t for _, t in elems[:cut] if t is not None] if cut > 0 else [_SLASH] if cut == 0 else [_lit(".")]
    choices = _choices(elems, glob)
    total = 1
    for c in choices:
        total *= len(c)
    if total > MAX_READINGS:  # too many: every wildcard crosses "/" (matches more, never less)
        flat: list[Token] = []
        for (kind, tok), c in zip(elems, choices):
            flat += [tok] if kind == "lit" and tok is not None else [("*", ANY_CHAR)]
        return [flat], tree
    return [[t for part in combo for t in part] for combo in itertools.product(*choices)], tree


def _pathspec(word: Word, out: GitReadings) -> None:
    tokens = [t for t in word.tokens if t[0] != "^"] if not word.literal else list(word.tokens)
    patterns: list[tuple[set[str], list[Token]]] = []
    if word.literal:
        parsed = _magic(word.text)
        if isinstance(parsed, str):
            out.unresolvable.append(parsed)
            return
        patterns.append((parsed[0], [_lit(ch) for ch in parsed[1]]))
    else:  # bash computes the text: it may carry any magic, so every suffix may be the pattern
        patterns.append((set(), tokens))
        for k, tok in enumerate(tokens):
            if not _is_lit(tok) or _may_be(tok, ":") or _may_be(tok, ")"):
                patterns.append((set(), ([tok] if tok[0] == "*" else []) + tokens[k + 1:]))
    for magic, spec in patterns:
        if "exclude" in magic or not spec:
            continue  # an exclusion only narrows what the other pathspecs name
        if "literal" in magic:
            out.paths.append(_word(spec, word))
            out.trees.append(_word(spec, word))
            continue
        readings, tree = pattern_readings(spec, "glob" in magic)
        out.paths += [_word(r, word) for r in readings if r]
        out.trees.append(_word(tree if tree is not None else spec, word))


def prints_config(sub: str, rest: list[Word]) -> bool:
    """The git command ``git ... SUB REST`` may print a value of git's configuration: a remote's URL, which may carry
    the credential of ``https://user:TOKEN@host`` (git 2.39 prints it verbatim, after ``url.X.insteadOf`` rewriting
    from ``~/.gitconfig``, in ``git remote -v``, ``--verb``, ``-vv``, ``show [-n] R``, ``get-url R``; ``fetch``
    and ``pull`` print it anonymised). Any word after ``remote`` counts (``git remote`` alone prints the names),
    as does ``config``, ``var`` and ``ls-remote`` (its "From URL" line): fail closed, never a guess at an
    abbreviation."""
    return sub in ("config", "var", "ls-remote") or (sub == "remote" and bool(rest))


def git_readings(args: list[Word]) -> GitReadings:
    """What git makes of the operands ``args`` (the words after ``git``): object names' paths and pathspecs.

    Options (``-x``, ``--x=v``) before ``--`` are not operands; the word after a value option of
    :data:`_VALUE_OPTIONS` (a commit message, a search string) is not either. Before ``--`` an operand is
    read both as an object name and as a pathspec (git tries both); after it, as a pathspec only. A word of
    unknown extent (an unquoted ``$x``) is already read as any path by the caller.
    """
    out = GitReadings()
    sub, dirs = _subcommand(args)
    out.writes = sub not in READ_ONLY
    at = next((k for k, w in enumerate(args) if w.literal and w.text == sub), len(args))
    if sub and prints_config(sub, args[at + 1:]):  # what it prints is a read of the file it comes from
        out.paths += [literal_word(p) for p in CONFIG_READ]
    values = _VALUE_OPTIONS.get(sub, frozenset())
    ended = False
    skip = False
    # git grep's first operand is its pattern unless -e or -f give the patterns (a short cluster holding "e"
    # or "f", "--file"): read as an operand when in doubt
    regex = sub == "grep" and not any(w.literal and (w.text.startswith("--f") or (
        w.text.startswith("-") and not w.text.startswith("--") and ("e" in w.text or "f" in w.text)))
        for w in args[:next((k for k, w in enumerate(args) if w.literal and w.text == "--"), len(args))])
    seen_sub = False
    for w in args:
        if skip:
            skip = False
            continue
        if not seen_sub and w.literal and w.text == sub:
            seen_sub = True
            continue
        if not seen_sub and w.literal and w.text in GLOBAL_VALUES:
            skip = True  # the value of git's own option (a -C directory is read as a path by the caller)
            continue
        if not ended and w.literal and w.text == "--":
            ended = True
            continue
        if not ended and w.literal and w.text.startswith("-"):
            skip = w.text in values or (sub in ("commit", "tag", "stash") and not w.text.startswith("--")
                                        and w.text.endswith("m") and w.text[1:].isalpha())
            continue
        if w.split:
            continue
        if regex and not ended:
            regex = False
            continue
        if not ended:
            for path in object_paths(list(w.tokens)):
                out.paths.append(_word(path, w))
                out.trees.append(_word(path, w))
        _pathspec(w, out)
    for d in dirs:  # "git -C DIR": relative operands are below DIR (or its repository's top, unknown anyway)
        for kind in (out.paths, out.trees):
            kind += [_word([_lit(ch) for ch in d.rstrip("/") + "/"] + list(w.tokens), w) for w in list(kind)
                     if not w.text.startswith(("/", "~"))]
    return out


#: git's own options that take the next word as their value (``git -C DIR``, ``git -c k=v``)
GLOBAL_VALUES = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix",
                            "--config-env", "--exec-path", "--list-cmds", "--attr-source"})


def _subcommand(args: list[Word]) -> tuple[str, list[str]]:
    """git's subcommand (after its own options) and the directories ``-C``/``--work-tree`` move it to."""
    dirs: list[str] = []
    k = 0
    while k < len(args):
        w = args[k]
        if not w.literal:
            return "", dirs
        if w.text in GLOBAL_VALUES:
            if k + 1 < len(args) and args[k + 1].literal and w.text in ("-C", "--work-tree"):
                dirs.append(args[k + 1].text)
            k += 2
            continue
        if w.text.startswith("--work-tree="):
            dirs.append(w.text.split("=", 1)[1])
        if not w.text.startswith("-"):
            return w.text, dirs
        k += 1
    return "", dirs
