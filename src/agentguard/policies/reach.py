"""What a file tool's call may reach beyond the literal files its values name (session 19), for :mod:`.rules`.

Three readings the rules guard adds to the path spellings of :func:`~.arguments.path_values`:

- a **listing**: any path a tool is given may be a directory it lists (``list_dir``, an editor's ``view`` of a
  directory, ``stat``, ``ls``): the listing reveals the names of the directory's entries, so a path that may be a
  directory whose every entry a rule denies (``~/.aws`` under ``~/.aws/*``, ``/run/secrets`` under
  ``/run/secrets/*``: :func:`listed`) is refused as the entries are. A rule naming one file (``/etc/shadow``) does
  not hide its name: ``/etc`` may still be listed;
- **case and Unicode folding**: the literal match of the guard already ignores case (``re.IGNORECASE``) and
  reads NFKC (:func:`~agentguard.core.canonical.decoded_path`: an NFD name on macOS is the NFC one); Python's
  ``re`` does not fold ``ß`` to ``ss`` as a full case folding does, so a literal path is also matched in its
  ``str.casefold()`` form against the case-folded rules (:func:`casefolded`);
- **symbolic links** (opt in, ``resolve_links``: only meaningful where the guard sees the tool's file system):
  each value a call names, absolute or joined to the call's directories and to the guard's working directory, is
  also read as ``os.path.realpath`` resolves it at decision time (every link on the way followed, ``..`` after a
  link as the kernel reads it), a glob as the files ``glob.glob`` finds for it (at most :data:`MAX_MATCHES`,
  more: refused unread), and a tree a search reads as every directory a link inside it points to (a walk of at
  most :data:`MAX_WALK` entries, more: refused unread) (:func:`linked`). Guaranteed: the paths the OS would
  open *at decision time* are judged. Not guaranteed: a link created or retargeted after the decision (a race
  between check and use) is not seen; only an OS sandbox (``openat2`` with ``RESOLVE_BENEATH``, a mount
  namespace, a container) closes that.

The conventional homes a ``~`` rule also names (:func:`home_variants`, :func:`home_tokens`) live here too.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re
from itertools import islice
from typing import Any, Iterable

from ..core.canonical import decoded_path
from ..core.errors import InputError
from .shell import fnmatch_tokens, intersects, literal_tokens
from .shell.globs import ANY_CHAR, Token, fold_case, fold_text, prefix_regex, token_regex

__all__ = ["GlobRules", "HOMES", "MAX_MATCHES", "MAX_WALK", "TreeRules", "casefolded", "home_tokens", "home_variants",
           "link_option", "linked", "listed", "listing_dirs", "listing_regex", "rule_forms"]

#: where ``~`` may point: $HOME is unknown statically, so a rule for ``~/.ssh/*`` also names every
#: conventional home (``/home/agent/.ssh/id_rsa`` is the same file when HOME=/home/agent)
HOMES = ("/root", "/home/*", "/Users/*", "/var/home/*", "/export/home/*", "/var/root")  # (/var/root: macOS' root)
_SLASH: list[Token] = [("c", (False, frozenset("/")))]
_HOME: list[Token] = [("c", (False, frozenset("~")))] + _SLASH
_BELOW: list[Token] = _SLASH + [("*", ANY_CHAR)]


def _around(tokens: list[Token], relative: bool) -> list[list[Token]]:
    """A path's tokens, and a relative one's below ``/`` and ``~`` too (the working directory may be either)."""
    return [tokens] + ([_SLASH + tokens, _HOME + tokens] if relative else [])


def home_tokens(pattern: str) -> list[list[Any]]:
    """The anchored globs of one ``deny_paths`` entry as tokens, a conventional home's ``*`` one directory name
    (``~/.ssh/*`` -> ``/home/<name>/.ssh/*``...): what a file tool's tree is checked against."""
    if pattern != "~" and not pattern.startswith("~/"):
        return [fnmatch_tokens(pattern)] if pattern.startswith("/") and not pattern.startswith("/*") else []
    rest = fnmatch_tokens(pattern[1:])
    out = [fnmatch_tokens(pattern)]
    for home in list(HOMES) + [os.path.expanduser("~")]:
        head = home.rstrip("/")
        out.append((literal_tokens(head[:-1]) + [("*", (True, frozenset("/")))] if head.endswith("/*")
                    else literal_tokens(head)) + rest)
    return out


def home_variants(pattern: str) -> list[str]:
    """``~/x`` -> ``~/x``, ``/root/x``, ``/home/*/x``, ... and this machine's home, and ``*/x`` when ``x`` starts
    with a literal directory or file name; others unchanged.

    ``*/x``: a home is wherever $HOME points, not only a conventional one (a service account's ``/var/lib/jenkins``,
    ``/var/lib/postgresql``, ``/srv/app``, ``/opt/app``): ``~/.aws/*`` also denies
    ``/var/lib/jenkins/.aws/credentials``, as ``*/.ssh/*`` already named every ``.ssh``. Only for a literal first
    name (``~/.aws/*``, ``~/.bashrc``): ``~/*`` or ``~/*.txt`` would name every file. The tree readings
    (:func:`home_tokens`) keep the conventional homes: a ``*/`` glob is not checked against trees."""
    if pattern != "~" and not pattern.startswith("~/"):
        return [pattern]
    rest = pattern[1:]
    homes = list(HOMES) + [os.path.expanduser("~")]
    first = rest[1:].split("/", 1)[0]
    anywhere = ["*" + rest] if first and not set(first) & set("*?[]{}\\") else []
    return list(dict.fromkeys([pattern] + [h.rstrip("/") + rest for h in homes] + anywhere))


def rule_forms(rules: list[str]) -> tuple[list[str], list[str], list[str]]:
    """The forms of the ``deny_paths`` globs (canonical) the rules guard reads paths with: ``(every form, the forms a
    literal path and an absolute glob are matched with, the forms a relative glob is matched with)``. Every form:
    :func:`home_variants` of each. For literals, a rule's ``*/x`` form alone where it has one (it also matches ``~/x``
    and every home's ``x``: the others would only repeat the work). A relative glob is read without the ``*/x`` forms:
    its stars may cross directories, and ``docs/**/*.md`` would meet every ``*/.ssh/*``."""
    variants = [home_variants(p) for p in rules]
    anywhere = [vs[0].startswith("~/") and vs[-1][:2] == "*/" for vs in variants]
    return ([v for vs in variants for v in vs], [v for vs, a in zip(variants, anywhere) for v in (vs[-1:] if a else vs)],
            [v for vs, a in zip(variants, anywhere) for v in (vs[:-1] if a else vs)])


def listing_dirs(denied: Iterable[str]) -> list[list[Token]]:
    """The directories whose every entry a rule denies (``~/.aws/*`` -> ``~/.aws``, ``*/.ssh/*`` -> ``*/.ssh``),
    case folded: listing one reveals what the rule hides."""
    heads = [p.rstrip("*") for p in denied if p.endswith("*")]  # "~/.aws/*", "~/.aws/**" -> "~/.aws"
    heads = [h for h in heads if h.endswith("/")]
    return [fold_case(fnmatch_tokens(h[:-1])) for h in heads if len(h) > 1]


def listing_regex(denied: Iterable[str]) -> re.Pattern[str] | None:
    """The directories of :func:`listing_dirs` as one case-insensitive regex, for literal paths (fast)."""
    heads = [h[:-1] for h in (p.rstrip("*") for p in denied if p.endswith("*")) if h.endswith("/") and len(h) > 1]
    return re.compile("|".join(f"(?:{fnmatch.translate(h)})" for h in heads), re.IGNORECASE) if heads else None


def listed(text: str, tokens: Any, dirs: list[list[Token]], literal: re.Pattern[str] | None) -> bool:
    """Whether the path ``text`` (its glob ``tokens``, or None when literal) may be a directory of ``dirs``
    (:func:`listing_dirs`; ``literal``: :func:`listing_regex`); a relative path also below the root and a home, as
    every relative path is read."""
    relative = not text.startswith(("/", "~"))
    if tokens is None:
        plain = text.rstrip("/") or text
        return literal is not None and any(literal.fullmatch(p) for p in [plain] + (
            ["/" + plain, "~/" + plain] if relative else []))
    path = fold_case(list(tokens))
    inside = _around(path, relative)
    return any(intersects(p, d) for p in inside for d in dirs)


class _Memo:
    """Answers kept per guard for glob inputs (the rules never change): at most ``MEMO``, then forgotten at once. A
    product automaton of two star-led globs (``*h*e*a*d*``, a revision git may read as a path, against ``*/.ssh``) costs
    ~20 us per rule, so an agent repeating a command pays it once (session 25)."""

    MEMO = 4096

    def __init__(self) -> None:
        self._memo: dict[Any, bool] = {}

    def kept(self, key: Any, compute: Any) -> bool:
        hit = self._memo.get(key)
        if hit is None:
            hit = bool(compute())
            if len(self._memo) >= self.MEMO:
                self._memo.clear()
            self._memo[key] = hit
        return hit


class GlobRules(_Memo):
    """Whether a path glob (a word bash expands, a value a tool may glob) could match a path a rule glob denies
    (:func:`~.shell.globs.intersects` with each, a relative one also as ``/glob`` and ``~/glob``; kept: :class:`_Memo`),
    or may be a directory whose entries one denies (:func:`listed`). Each comes as (absolute, relative): a relative
    glob is read without the rules' ``*/x`` forms (:func:`home_variants`), whose leading star meets any relative glob
    that may cross directories (``docs/**/*.md`` against ``*/.ssh/*``)."""

    def __init__(self, globs: tuple[list[list[Token]], list[list[Token]]],
                 dirs: tuple[list[list[Token]], list[list[Token]]], literal: re.Pattern[str] | None) -> None:
        super().__init__()
        self.globs, self.dirs, self.literal = globs, dirs, literal

    def meets(self, tokens: list[Token], relative: bool) -> bool:
        def compute() -> bool:
            return any(intersects(t, d) for t in _around(fold_case(tokens), relative) for d in self.globs[relative])
        return self.kept(("meets", tuple(tokens), relative), compute)

    def listed(self, text: str, tokens: list[Token] | None) -> bool:
        if tokens is None or not self.dirs[0]:
            return bool(self.dirs[0]) and listed(text, None, self.dirs[0], self.literal)
        dirs = self.dirs[not text.startswith(("/", "~"))]
        return self.kept(("listed", text, tuple(tokens)), lambda: listed(text, tokens, dirs, self.literal))


class TreeRules(_Memo):
    """Whether a tree a command or a tool reads (``grep -r x DIR``, ``tar czf o DIR``, a search below ``DIR``) holds a
    denied path: something below it meets a glob anchored at the root or a home (``anchored``), or it is or lies in a
    directory whose entries a glob denies (``dirs``: :func:`listing_dirs`); a relative tree also as ``/tree`` and
    ``~/tree``. Decided by :func:`~.shell.globs.intersects` over the token lists, and for a literal tree (the usual
    case) by two regular expressions compiled once (:func:`~.shell.globs.prefix_regex` of every anchored glob,
    :func:`~.shell.globs.token_regex` of every directory and what lies below it): the same answer (a differential
    test) in one C-level match instead of a product automaton per rule (session 25: ~460 anchored globs made
    ``git log`` cost tens of milliseconds)."""

    def __init__(self, anchored: list[list[Token]], dirs: tuple[list[list[Token]], list[list[Token]]]) -> None:
        super().__init__()
        self.anchored, self.dirs = anchored, dirs  # dirs: (absolute or literal, relative glob), as GlobRules reads
        self._below = re.compile("|".join(f"(?:{prefix_regex(d)})" for d in anchored), re.S) if anchored else None
        self._inside = (re.compile("|".join(f"(?:{token_regex(d)}(?:/.*)?)" for d in dirs[0]), re.S)
                        if dirs[0] else None)

    def holds(self, text: str, tokens: list[Token] | None) -> bool:
        relative = not text.startswith(("/", "~"))
        if not tokens:  # literal
            tree = fold_text(text.rstrip("/"))
            inside = [tree] + (["/" + tree, "~/" + tree] if relative else [])
            return bool(self._below is not None and self._below.fullmatch(tree + "/")) or (
                self._inside is not None and any(self._inside.fullmatch(t) for t in inside))
        def compute() -> bool:
            folded = fold_case(list(tokens))
            return any(intersects(folded + _BELOW, d) for d in self.anchored) or any(
                intersects(t, d) or intersects(t, d + _BELOW) for t in _around(folded, relative)
                for d in self.dirs[relative])
        return self.kept((relative, tuple(tokens)), compute)


def casefolded(denied: Iterable[str]) -> re.Pattern[str] | None:
    """The ``deny_paths`` globs case folded in full (``str.casefold``: ``Straße`` is ``strasse``), for a literal
    path's casefolded form; None when folding changes no rule beyond what ``re.IGNORECASE`` already matches."""
    pats = [p.casefold() for p in denied if p.casefold() != p.lower()]
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in pats)) if pats else None


#: the most files one glob may match, and the most entries a tree's walk reads, when links are resolved
MAX_MATCHES = 1000
MAX_WALK = 20000
_GLOB = re.compile(r"[*?\[]")


def link_option(value: Any, guard: str) -> bool:
    """The ``resolve_links`` setting: ``True`` or ``False`` only (a string ``"yes"`` is a configuration error)."""
    if not isinstance(value, bool):
        raise InputError(f"{guard}.resolve_links must be true or false, got {value!r}")
    return value


def _places(value: str, bases: Iterable[str]) -> list[str]:
    """Where the OS opens ``value``: itself when absolute (or ``~``), else below each absolute base and the
    guard's working directory."""
    out = []
    for v in dict.fromkeys([value, decoded_path(value)]):
        v = os.path.expanduser(v.strip())
        if not v:
            continue
        if os.path.isabs(v):
            out.append(v)
            continue
        for base in [b for b in (os.path.expanduser(b) for b in bases) if os.path.isabs(b)] + [os.getcwd()]:
            out.append(os.path.join(base, v))
    return list(dict.fromkeys(out))


def linked(values: Iterable[str], bases: Iterable[str], trees: Iterable[str]) -> tuple[list[str], list[str], str]:
    """The real paths (links resolved now) of ``values`` (the strings a call names, each also below ``bases``),
    the real directories a search of ``trees`` (and a recursive glob ``**``'s literal head) may enter through a
    link, and why the call is refused unread (past :data:`MAX_MATCHES` or :data:`MAX_WALK`), or ``""``. A path that
    does not exist resolves as far as it does (``realpath``'s reading of the rest is lexical)."""
    bases = list(bases)
    real: list[str] = []
    trees = list(trees)
    for value in values:
        if not value or "\n" in value or "\x00" in value or len(value) > 4096:
            continue
        for place in _places(value, bases):
            found = [place]
            if "**" in place:  # a recursive glob may walk a whole tree before it matches: walked as one, bounded
                trees.append(os.path.dirname(_GLOB.split(place, maxsplit=1)[0]) or "/")
            elif _GLOB.search(place):
                found += list(islice(glob.iglob(place, recursive=True, include_hidden=True), MAX_MATCHES + 1))
                if len(found) > MAX_MATCHES:
                    return real, [], f"a pattern matching more than {MAX_MATCHES} files, refused unread"
            # only where a link was followed: the lexical reading of the rest is the guard's own already
            pairs = [(os.path.realpath(f), os.path.normpath(os.path.abspath(f))) for f in found]
            real += [r for r, lexical in pairs if r != lexical]
    doors: list[str] = []
    seen = 0
    for top in dict.fromkeys(t for tree in trees for t in _places(tree, bases)):  # (a link's own target: realpath)
        if not os.path.isdir(top):
            continue
        if os.path.realpath(top) != os.path.normpath(top):  # the tree itself lies through a link
            doors.append(os.path.realpath(top))
        for root, dirnames, filenames in os.walk(top):
            seen += len(dirnames) + len(filenames)
            if seen > MAX_WALK:
                return real, doors, f"a tree of more than {MAX_WALK} entries, its links unread: refused"
            for name in dirnames + filenames:
                full = os.path.join(root, name)
                if os.path.islink(full):
                    doors.append(os.path.realpath(full))
    return list(dict.fromkeys(real)), list(dict.fromkeys(doors)), ""

