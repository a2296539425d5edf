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

Added by the session-10 red team (``tests/policies/shell/test_analysis_redteam.py``: each attack ran in real
bash while the guard allowed it): the text is parsed raw, never normalised first, and invisible, control
and non-ASCII space characters are refused (:mod:`.lexical`); a line continuation inside a word, a carriage
return, a here-document that bash would end elsewhere (delimiter after quote removal, backslash-newline), a
backquote or ``$(`` no node of the parse covers, and a ``[..]`` "test" without blanks (a glob command word)
are refused; backquoted bodies are read again after bash's unescaping; a variable name with a subscript
(``test -v``, ``printf -v``, ``unset``, ``declare``) and a name in ``${a[i]}``/``${x:o:l}`` (evaluated as
arithmetic, which runs ``$(...)``) are refused; loop variables are assignments; options of allowed programs
that run commands or read file names elsewhere (:data:`~.programs.HAZARDS`: ``tar --to-command``, ``git grep
-O``, ``make --eval``, ``sed`` scripts read by a GNU sed parser...) are refused, and so is writing a file that
configures what a program runs (:data:`~.startup.CONFIG_FILES`: ``~/.gitconfig``, ``.npmrc``...). A command
that reads, copies, moves or links a whole tree (:data:`~.programs.RECURSIVE`) lists its operands (and
working directories) in :attr:`Analysis.subtrees`.

Added by the session-11 red team (``tests/policies/shell/test_analysis_redteam_s11.py``, with a stub-logging
oracle, ``tests/policies/shell/stub_sandbox.py``): an ERROR or MISSING node anywhere in the tree (also inside a
word) refuses the text; ``$'...'`` ends at a NUL as in bash; GNU sed labels end at ``;`` or a blank; a
declaration builtin however spelled (``"export"``, ``builtin declare``, ``read``, ``getopts``) and a
``{varname}`` redirection are assignments; ``set -k/-H/-o keyword...`` are refused; a git directory's files,
the output operands of readers (``uniq IN OUT``, ``xxd -r``), the file ``cp``/``mv``/``ln`` write into a target
directory and archive extraction under stored names are config writes or unresolvable; the time to decide is
bounded (linear brace and bracket readers, :data:`~.grammar.MAX_WORD`, at most 64 globs in a word,
:data:`~.model.MAX_WORK`): past a bound the command is refused unread.

Added by the session-19 red team (``tests/policies/shell/test_analysis_redteam_s19.py``, oracles against real git,
make, pytest, npm, cmake, mypy and ln): a git checkout, switch, restore, reset or pull of content from outside the
project (only HEAD~N, the index, the stash, plain local branch names, the upstream and origin's branches are trusted;
session 19b), ``merge``/``apply``/..., a fetch that moves local refs and a new remote or a branch or tag at foreign
content are refused as ``tar -x`` is (the commit chooses the files: a symlink to ``~/.ssh/id_rsa``, a repository
whose config runs a command; :mod:`.vcs`); the
options of ``make``, ``pytest``, ``npm``, ``cargo``, ``go`` and ``python -m unittest`` are allow lists, and a runner
(``cmake``/``ctest`` too) on a directory or tests outside the project is refused (:mod:`.runners`); a link to a
directory above start-up files (``ln -s /etc/profile.d p``) is refused (:func:`~.model.configures_below`).

Added by the session-20 red team (``tests/policies/shell/test_analysis_redteam_s20.py``, against real bash and jq): a
read of the process environment (``echo "$TOKEN"``, ``printenv``, ``env``, ``export -p``, ``jq -n env``) is refused
unless the name holds no secret (``HOME``, ``PATH``...) or the command itself certainly set it first
(:mod:`.envreads`); a locale-translated string ``$"..."`` is refused (bash replaces it with a catalog's text and
expands that, and reads ``a$"b"`` as ``ab`` where the parser reads ``a$b``: ``cat .en$"v"`` printed ``.env``); writing
``./origin`` (git's path for ``git pull origin NAME`` without such a remote), ``~/.mypy.ini``, ``~/.rustup/*``,
``~/.less``, ``~/.cargo/bin/*`` or ``~/.pyenv/*`` is a start-up file's write; less's log-file option and the tree
options of grep and zip are read abbreviated or in a cluster (``--log-f``, ``-so``, ``--dereference-rec``); ``make -p``
(prints the environment) left make's option allow list.

Added by the session-21 red team (``tests/policies/shell/test_analysis_redteam_s21.py``, against real git, npm, pip,
pyenv and a stub oracle): a git command that may print a value of git's configuration (``git remote -v``, ``get-url``,
``show``) reads ``.git/config`` and ``~/.gitconfig`` (a remote URL carries ``https://user:TOKEN@host``;
:func:`~.gitargs.prints_config`); the start-up files (:mod:`.startup`) take in the import directories, the tools'
other installation prefixes, version managers, PATH directories and what start-up files source by convention, and a
literal ``~/bin/make`` is read below a home as ``~/bin/ma?e`` was; a command word that is a reserved word or an
assignment is a misread (``time if ...; then rm ...; fi`` gave the program ``then``) and is refused.

Added by the session-22 red team (``tests/policies/shell/test_analysis_redteam_s22.py``, stub oracle and real ls, find
and du; 436 probes in ``attacks_s22.txt``): a recursive listing (``ls -R``, ``du -a``, ``tree``, ``find``) reads its
operands as trees, so ``ls -R ~`` and ``find ~`` are judged as ``ls ~/.ssh`` is (a listing names the denied files); a
program name with an upper-case letter, a non-ASCII character or a blank is refused (the rules fold names, bash runs
them as written: ``HEAD``, libwww-perl's web client, passed as ``head``; ``ｌｓ`` as ``ls``).

Why tree-sitter-bash and not bashlex (both on PyPI; compared on the corpus of
``tests/policies/shell/benign_commands.txt``, the attack families and ``benchmarks/shell_analysis.py``): tree-sitter-bash is
maintained (the grammar the editors use), parses every construct of the corpus (bashlex 0.18 raises
``NotImplementedError`` on ``case``, ``coproc`` and arithmetic expansion and a ``ParsingError`` on
``[[ ... ]]``), marks what it cannot read with ``ERROR`` nodes instead of aborting (so the refusal can
say where), and is a compiled parser (about 4x faster than bashlex's pure-Python yacc on a pipeline).
Where its tree differs from what bash does (``coproc``, ``$"..."``), the analysis refuses or merges, and
the differential harness (``tests/policies/shell/test_analysis_differential.py``) runs real bash to find such gaps.
"""

from __future__ import annotations

import functools
from typing import Any, Iterable

from ...core.canonical import strip_invisible
from .envreads import EnvReader
from .grammar import GrammarWalker
from .model import MAX_DEPTH, MAX_WORK, Analysis, Command, TooMuchWork, program_name
from .paths import path_forms
from .payloads import PayloadReader
from .resolve import Resolver
from .words import Word, literal_word

__all__ = ["Analysis", "Command", "MAX_DEPTH", "analyse", "analyse_argv", "program_name"]


_TOO_MUCH = f"more than {MAX_WORK} words and paths to read: refused unread (the time to decide is bounded)"


class _Walker(GrammarWalker, Resolver, PayloadReader, EnvReader):
    """One walk: the grammar (:mod:`.grammar`), resolution (:mod:`.resolve`), payloads (:mod:`.payloads`), reads of
    the environment (:mod:`.envreads`)."""


def _start(cwds: Iterable[str]) -> _Walker:
    """A walker whose working directory may also be each of ``cwds`` (a tool's ``cwd`` argument)."""
    w = _Walker()
    for c in cwds:
        for form, _ in path_forms(c):
            if form not in w.cwds:
                w.cwds.append(form)
    w.start_cwds = len(w.cwds)
    return w


_DEEP = "nesting too deep to read"
#: the longest command whose reading is kept (:func:`analyse`)
MEMO_TEXT = 4096


class _NotKept(Exception):
    pass


@functools.lru_cache(maxsize=512)
def _kept(command: str) -> Analysis:
    a = _read(command, ())
    if _DEEP in a.unresolvable:  # where Python's recursion limit stopped it depends on the caller's stack
        raise _NotKept
    return a


def analyse(command: str, cwds: Iterable[str] = ()) -> Analysis:
    """Every command ``command`` runs when bash reads it, every path it names, and what is unresolvable.

    ``cwds``: directories the command may start in besides the unknown one (a tool's ``cwd`` argument).
    The reading is a function of the text alone: without ``cwds`` the last 512 readings of texts up to
    :data:`MEMO_TEXT` characters are kept (the rules and the network guard read a call's command each, and agents
    repeat commands); each call gets lists of its own (their elements are immutable).
    """
    cwds = tuple(cwds)
    if not cwds and type(command) is str and len(command) <= MEMO_TEXT:
        try:
            a = _kept(command)
        except _NotKept:
            return _read(command, cwds)
        return Analysis(list(a.commands), list(a.paths), list(a.unresolvable), list(a.subtrees), list(a.writes))
    return _read(command, cwds)


def _read(command: str, cwds: Iterable[str]) -> Analysis:
    w = _start(cwds)
    try:
        w.text(command, 0)
    except RecursionError:
        w.refuse(_DEEP)
    except TooMuchWork:
        w.refuse(_TOO_MUCH)
    return w.out


def analyse_argv(argv: Iterable[Any], cwds: Iterable[str] = ()) -> Analysis:
    """The same for an argv list (``["rm", "-rf", "/"]``): the first word is the program, nothing is re-split.

    Non-string scalars (``0``, ``True``) become their text, as ``subprocess`` callers usually do; anything
    else in the list (a dict, a nested list, None) makes the call unresolvable.
    """
    w = _start(cwds)
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
    except TooMuchWork:
        w.refuse(_TOO_MUCH)
    return w.out
