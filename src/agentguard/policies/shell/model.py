"""The analysis' result types and the walker's shared state (issue 25): :class:`Command`, :class:`Analysis`.

:class:`WalkerBase` holds what every part of the walk shares (the result, the directories a ``cd`` may
have moved to, whether the text is a ``sh`` payload) and how a part reports: :meth:`WalkerBase.refuse`
(unresolvable, with a reason) and :meth:`WalkerBase.add_paths`. The grammar walk (:mod:`.grammar`), the
resolution of programs through wrappers (:mod:`.resolve`) and the payload readers (:mod:`.payloads`)
are mixins over it, put together in :mod:`.analysis`.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field
from typing import Iterable

from ...core.canonical import canonical_name, strip_invisible
from .globs import ANY_CHAR, Token, fnmatch_tokens, fold_case, intersects
from .paths import PathForm, word_paths
from .programs import CONFIG_FILES, REMOTE_PATHS
from .words import Word

__all__ = ["ANY_WORD", "Analysis", "CASED_PROGRAMS", "Command", "MAX_DEPTH", "MAX_WORK", "TooMuchWork", "WalkerBase",
           "chain", "configures", "configures_below", "first_match", "glob_matcher", "program_name",
           "spelled_name_reason"]

MAX_DEPTH = 8
#: the most words and path spellings one analysis reads (a benign command uses well under 100); past it the
#: command is refused unread, so the time to decide is bounded whatever the input (session 11: 800 "cd a;"
#: took 170 s, 20,000 "[" took 260 s before the quadratic parts were removed)
MAX_WORK = 3000


class TooMuchWork(Exception):
    """Raised when an analysis passes :data:`MAX_WORK`; :func:`~.analysis.analyse` refuses the command."""


def glob_matcher(globs: Iterable[str]) -> tuple[list[list[Token]], re.Pattern[str]]:
    """``globs`` (fnmatch, ``*`` crosses ``/``) compiled for :func:`first_match`."""
    globs = list(globs)
    return [fold_case(fnmatch_tokens(p)) for p in globs], re.compile(
        "|".join(f"(?:{fnmatch.translate(p)})" for p in globs) or "(?!)", re.IGNORECASE)


_CONFIG_GLOBS = glob_matcher(CONFIG_FILES)
_REMOTE_GLOBS = glob_matcher(REMOTE_PATHS)
_SLASH: list[Token] = [("c", (False, frozenset("/")))]


def _directories_above(pattern: str) -> list[str]:
    """The directories of a :data:`~.startup.CONFIG_FILES` glob that a link can stand for: ``/``, ``/etc`` and
    ``/etc/profile.d`` for ``/etc/profile.d/*``; ``*/.config`` for ``*/.config/autostart/*``. A prefix whose last
    component is only ``*`` (``*`` of ``*/config``) names no directory: the rest of the pattern is then in the path
    written through the link itself (``l/.git/config``), which :func:`configures` reads."""
    comps = pattern.split("/")
    out = ["/"] if pattern.startswith("/") else []
    out += ["/".join(comps[:k]) for k in range(1, len(comps)) if comps[k - 1].strip("*")]
    return [d for d in out if d]


_ABOVE = sorted({d for p in CONFIG_FILES + REMOTE_PATHS for d in _directories_above(p)})
_ABOVE_TOKENS = [(d, fold_case(fnmatch_tokens(d))) for d in _ABOVE]


def configures_below(forms: Iterable[PathForm]) -> str | None:
    """Why a link to one of ``forms`` makes start-up files writable under a name the text never spells, or None.

    ``ln -s /etc/profile.d p`` then ``echo id > p/x.sh`` writes ``/etc/profile.d/x.sh`` (session 19): the write names
    ``p/x.sh``, which no start-up file glob matches. So a link target (a directory) that may be one of the directories
    above a start-up file (``/``, ``/usr``, ``/etc/profile.d``, ``~/.config``, ``.git``) is refused; a relative target
    is read below any directory, as :func:`configures` reads it (``.`` may be ``/``)."""
    for text, tokens in forms:
        toks = list(tokens) if tokens is not None else [("c", (False, frozenset(ch))) for ch in text]
        rest = toks[1:] if text.startswith("~") else toks
        toks = fold_case(rest if text.startswith("/") or rest[:1] == _SLASH else _SLASH + rest)
        while len(toks) > 1 and toks[-1] == _SLASH[0]:
            toks = toks[:-1]
        if toks[-2:] == [_SLASH[0], ("c", (False, frozenset(".")))] and len(toks) > 2:
            toks = toks[:-2]
        if toks == [_SLASH[0], ("c", (False, frozenset(".")))]:
            toks = list(_SLASH)
        for shown, d in _ABOVE_TOKENS:
            if intersects(toks, d):
                return f"a link to {text!r} ({shown}) makes the start-up files below it writable under another name"
    return None


def first_match(forms: Iterable[PathForm], *matchers: tuple[list[list[Token]], re.Pattern[str]]) -> str | None:
    """The first spelling of ``forms`` that one of the globs (:func:`glob_matcher`) may match, or None: a glob
    spelling (one that could match such a file), case folded as a case-insensitive file system opens it; a relative
    spelling read below any directory, ``~`` as any home; a wholly unknown word (``$x``) matches none."""
    for text, tokens in forms:
        if tokens is not None and all(t == ("*", ANY_CHAR) for t in tokens):
            continue
        if tokens is None:
            # "~/bin/make" is "/bin/make" below a home, as the token reading above has it (not "//bin/make", which
            # no glob starting with "/" matched: session 21, ~/bin is on PATH in Debian's /etc/skel/.profile)
            full = text if text.startswith("/") else "/" + text.lstrip("~").lstrip("/")
            hit = any(rx.fullmatch(full) for _, rx in matchers)
        else:
            rest = list(tokens[1:] if text.startswith("~") else tokens)
            toks = fold_case(rest if text.startswith("/") or rest[:1] == _SLASH else _SLASH + rest)
            hit = any(intersects(toks, c) for globs, _ in matchers for c in globs)
        if hit:
            return text
    return None




def configures(forms: Iterable[PathForm], remotes: bool = True) -> str | None:
    """Why writing one of ``forms`` (spellings of one path, :func:`~.paths.word_paths` or
    :func:`~.paths.pattern_paths`) runs code later, or None: the first that names a file of
    :data:`~.startup.CONFIG_FILES` (a glob spelling: one that could match such a file), case folded as a
    case-insensitive file system opens it. A relative spelling is read below any directory (``.envrc``,
    ``g/config``), ``~`` as any home. A wholly unknown word (``$x``) is not reported here: it meets every
    ``deny_paths`` glob already. The one matcher of the class: the shell guard's writes (:meth:`WalkerBase.add_paths`)
    and a file tool's (:mod:`agentguard.policies.writes`) both ask it, so the two give one answer. With ``remotes``
    (the default) a path git reads as the remote origin (:data:`~.startup.REMOTE_PATHS`) counts too."""
    text = first_match(forms, _CONFIG_GLOBS, *([_REMOTE_GLOBS] if remotes else []))
    return None if text is None else f"{text!r} configures what a program runs (writing it runs code later)"
DASH_ANY: tuple[Token, ...] = (("c", (False, frozenset("-"))), ("*", ANY_CHAR))
#: a word whose value is unknown and split: any number of any words
ANY_WORD = Word("*", (("*", ANY_CHAR),), literal=False, unknown=True, split=True)


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
    #: paths whose whole tree a command reads, copies, moves, links or changes (``grep -r x ~``, ``cp -r /etc
    #: d``, ``tar czf o ~``, ``ln -s /etc e``): a rule denying anything below one of them is met
    subtrees: list[PathForm] = field(default_factory=list)
    #: the spellings of each path a command may write or change (:meth:`WalkerBase.add_paths` with ``writes``): a
    #: guard that reads one kind of program's configuration (the network guard: ``.curlrc``, ``.gitconfig``) matches
    #: its own files among them (:func:`first_match`)
    writes: list[list[PathForm]] = field(default_factory=list)

    @property
    def resolved(self) -> bool:
        return not self.unresolvable

    @property
    def programs(self) -> list[str]:
        return [c.program for c in self.commands]


#: program names with upper-case letters that name one real program, read as that program (by the rules' folded
#: name: ``R`` is ``r``): GNU R's ``R`` and ``Rscript``, the X servers, VirtualBox's and NetworkManager's tools. Each
#: one's folded name is no other program (on a case-insensitive file system the folded name runs the same file).
#: Not ``HEAD``/``GET``/``POST``/``PUT`` (libwww-perl's web client, whose folded ``head`` is coreutils' reader).
CASED_PROGRAMS = frozenset({"R", "Rscript", "Rcmd", "X", "Xvfb", "Xorg", "Xwayland", "Xephyr", "Xnest", "Xvnc",
                            "VBoxManage", "VBoxHeadless", "NetworkManager", "ModemManager"})


def spelled_name_reason(text: str) -> str | None:
    """Why the program name (the last path component of a fixed command word) may run another program than the one
    the rules' folded name reads, or None: an upper-case letter (``HEAD`` is libwww-perl's web client, folded
    ``head``; session 22), a non-ASCII character (``ｌｓ`` folds to ``ls``) or a blank. bash runs the name as written,
    so the name is judged by what it resolves to: an exact :data:`CASED_PROGRAMS` name (``R``, ``Rscript``) is that
    program (session 23: ``R --version`` was refused for its case). Any other is refused; the walk still reads it as
    its folded program (what a case-insensitive file system runs: ``CURL 0:8080`` is curl's), so every reader sees
    the reading that refuses most."""
    base = text.rstrip("/").rsplit("/", 1)[-1]
    if base in CASED_PROGRAMS:
        return None
    if not base.isascii() or base != base.lower() or re.search(r"\s", base):
        return (f"the program name {base!r} is not written as the rules read it (lower-case ASCII without blanks): "
                "bash runs another program than the one the rules name")
    return None


def program_name(word: str) -> str:
    base = os.path.basename(strip_invisible(word).rstrip("/")) or word
    base = re.sub(r"\.exe$", "", base, flags=re.IGNORECASE)
    name = canonical_name(base)
    return re.sub(r"^(python|perl|ruby|php|lua|pypy)[0-9._]*$", r"\1", name)


class WalkerBase:
    """Shared state and reporting of a walk; the parts call each other through these two entry points."""

    def __init__(self) -> None:
        self.out = Analysis()
        self.cwds: list[str] = [""]
        self.start_cwds = 1  # how many of cwds the text started in (the tool's cwd argument); a cd adds the rest
        self.posix_sh = False  # inside a payload for sh/dash/ash: braces may stay unexpanded
        self.loopvars: dict[str, list[Word]] = {}  # a loop's variable -> its words, inside the body (.loops)
        self.work = 0
        #: variables the command certainly set before the point the walk is at (:mod:`.envreads`)
        self.own_vars: set[str] = set()
        #: variables the command made read-only: a later assignment to one fails and keeps its value (.envreads)
        self.frozen: set[str] = set()

    def spend(self, units: int) -> None:
        """Count work (words, path spellings); past :data:`MAX_WORK` the walk stops (:class:`TooMuchWork`)."""
        self.work += units
        if self.work > MAX_WORK:
            raise TooMuchWork

    # -- reporting -------------------------------------------------------------------------------------
    def refuse(self, why: str) -> None:
        if why not in self.out.unresolvable:
            self.out.unresolvable.append(why)

    def refuse_spelled(self, command_word: str) -> None:
        """Refuse a program name spelled otherwise than the rules read it (:func:`spelled_name_reason`)."""
        why = spelled_name_reason(command_word)
        if why is not None:
            self.refuse(why)

    def add_paths(self, word: Word, writes: bool = False, remotes: bool = True) -> list[PathForm]:
        """Record the paths ``word`` may name; with ``writes``, one that configures what a program runs
        (:data:`~.startup.CONFIG_FILES`, and with ``remotes`` :data:`~.startup.REMOTE_PATHS`) is refused: writing
        it runs code the next time that program starts."""
        forms = word_paths(word, self.cwds)
        self.spend(len(forms))
        self.out.paths.extend(forms)
        if writes:
            self.out.writes.append(forms)
        why = configures(forms, remotes) if writes else None
        if why:
            self.refuse(why)
        return forms

    def text(self, text: str, depth: int) -> None:
        """Read ``text`` as bash code (:mod:`.grammar`)."""
        raise NotImplementedError

    def read_env(self, name: str | None, what: str) -> None:
        """Refuse a read of the environment variable ``name`` that may be a secret (:mod:`.envreads`)."""
        raise NotImplementedError

    def printed(self, name: str, args: list[Word]) -> None:
        """Refuse what ``name args`` prints of the environment that may be a secret (:mod:`.envreads`)."""
        raise NotImplementedError

    def resolve(self, argv: list[Word], depth: int, via: str, stdin_args: bool = False) -> None:
        """Record ``argv`` as a command and resolve what it runs (:mod:`.resolve`)."""
        raise NotImplementedError

    # the payload readers (:mod:`.payloads`)
    def interpreter(self, name: str, code_opts: str, args: list[Word]) -> None:
        raise NotImplementedError

    def awk(self, name: str, args: list[Word]) -> None:
        raise NotImplementedError

    def sed(self, args: list[Word]) -> None:
        raise NotImplementedError

    def find(self, name: str, args: list[Word], depth: int, via: str) -> None:
        raise NotImplementedError


def chain(via: str, name: str) -> str:
    return f"{via} > {name}" if via else name
