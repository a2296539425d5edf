"""Which arguments of a tool call name a file it writes (session 17): a file tool's side of the config-file rule.

The shell guard refuses a command that writes a file which makes a program run code the next time it starts
(:data:`~.shell.programs.CONFIG_FILES`: ``~/.gitconfig``, the shells' start-up files, ``.envrc``, ``*.pth``,
``sitecustomize.py``, ``~/.local/bin/*``, a git directory's ``config``...). The same write through a file tool
(``write_file {"path": "~/.zshrc"}``) is the same act, so :class:`~.rules.ToolRuleGuard` asks the same matcher
(:func:`~.shell.model.configures`) about the path spellings it already reads from a tool's arguments
(:func:`~.arguments.path_values`: one normalisation for both), and refuses with the same reason.

Which tools write is decided fail closed, by an allow list of tools that only read:

- with ``read_only_tools`` (globs) given, exactly the tools it names read (matched against the whole name, with an
  MCP proxy's ``__`` kept, as an ``allow`` list grants: :func:`~agentguard.core.canonical.grant_name`), and no
  name is inferred;
- otherwise a tool reads when its own name (the part after the last namespace separator of
  :func:`~agentguard.core.canonical.name_forms`: ``fs__read_file`` is ``read_file``, ``read__file`` is the tool
  ``file``) starts with a read verb (:func:`read_verbs`: the read kind of the published verb vocabularies,
  :func:`~.toolnames.external_kinds`, and the file tools' own ``show``, ``cat``, ``ls``, ``stat``, ``grep``...)
  and no later word joins a second action (``and``, ``or``, ``then``, ``to``) or is a verb of another kind
  (:func:`other_verbs`: ``get_or_create_file``, ``search_replace``, ``view_and_save``, ``read_to_file`` write).

Every other tool's path values (:func:`~.arguments.path_values`: a path-named argument's value, any path-shaped
value, a name joined to a directory argument, a mapping's keys) count as writes, whatever their argument is called
(an unknown ``save_document {"filename": "~/.bashrc"}``, ``{"doc": {"x": "~/.zshrc"}}``, a multi-file
``{"files": {"~/.zshrc": "..."}}``); a reader's argument named as an output (:data:`OUTPUT_WORDS`: ``output``,
``dest``, ``save_to``...; a name word starting with one, ``outputFile``, counts) is a write too. Not write targets
(the first two decided by what the tool defines, an argument's name or the tool's kind, never by a value the agent
chose):

- an argument named as the text a tool writes or sends (:data:`TEXT_WORDS`: ``content``, ``body``, ``text``,
  ``message``, ``subject``...) and not also as a path (``note_path`` is a path): it is what is written, not
  where (``write_file {"path": "notes.txt", "content": "I changed ~/.zshrc"}``);
- the directory a shell tool's command runs in and its environment (``cwd``, ``env`` of ``run_command``...): the
  shell analysis reads what the command itself writes, relative to that directory (for any other tool they are
  path values like the rest: an agent may add a ``command`` key to a call, not make a tool a shell);
- a web URL (``https://host/v1/config``) in an argument named as a URL (``url``, ``link``...) or not named as a
  path: a remote resource, fetched or posted to, as the path reading already treats it
  (:func:`~.arguments.web_url`); unless its path holds a component of dots only (``https://x/../../home/u/.zshrc``:
  a tool reading it as a local path climbs out of the directory ``https:``). A downloader that names its file
  after the URL is out of reach, as ``wget URL`` is for the shell analysis;
- the glob reading of a value in an argument not named as a path (``1/2 * 3`` in a ``value``, ``./*.py`` in a
  ``query``): such a value is read literally (the file ``open()`` names), also below the call's directories.

Values are still matched against ``deny_paths`` whatever the tool (a read of ``/etc/shadow`` is refused).

The guarantee (``tests/policies/test_writes.py``, properties against the shell): through an argument named as a
path of a tool that writes (or as an output, of a reader), a value the shell refuses as a write target
(``echo x > VALUE``) is refused, unless it is a web URL that climbs nowhere in an argument named as a URL; through
any other argument not named as text, the same holds for the value's literal reading; a read
(``read_file {"path": "~/.gitconfig"}``) is not refused.
"""

from __future__ import annotations

import re
from functools import lru_cache

from typing import Any

from ..core.canonical import canonical_name, decoded_path, grant_name, strip_invisible
from .arguments import path_named, path_values, web_url
from .shell.model import configures
from .shell.paths import PathForm
from .toolnames import external_kinds, tokens

__all__ = ["OUTPUT_WORDS", "TEXT_WORDS", "TREE_VERBS", "config_write", "name_words", "other_verbs", "read_verbs",
           "reads_only", "reads_trees", "writes_to"]

#: verbs of file tools that only read (besides the published vocabularies' read kind)
_FILE_READS = frozenset({"show", "cat", "ls", "stat", "grep", "glob", "tail", "describe", "inspect", "count",
                         "preview", "lookup", "diff", "locate"})
#: words of a tool name that join a second action to its verb, or send its result somewhere
_JOINERS = frozenset({"and", "or", "then", "to", "into", "plus"})
#: verbs of file tools that write, move, link, unpack or run (besides the published vocabularies' other kinds)
_FILE_WRITES = frozenset({
    "save", "store", "set", "edit", "copy", "cp", "move", "mv", "link", "ln", "symlink", "rename", "upload",
    "download", "install", "export", "import", "dump", "touch", "mkdir", "make", "remove", "rm", "overwrite",
    "truncate", "modify", "apply", "commit", "push", "sync", "restore", "extract", "unzip", "untar", "unpack",
    "clone", "run", "exec", "execute", "eval", "deploy", "generate", "render", "emit", "output", "log", "record",
    "persist", "cache", "attach", "merge", "chmod", "chown", "tee", "fix", "change", "configure", "init",
    "setup", "fetch", "pull", "checkout", "open", "convert", "compile", "build", "format",
})
#: words of an argument's canonical name that make it where a tool puts its result (a reader's output file); a
#: word starting with one of them counts too (``outputfile``, ``destpath``: ``outputFile`` is one canonical word)
OUTPUT_WORDS = frozenset({"out", "output", "dest", "destination", "dst", "save", "export", "write", "log", "target"})
#: words that count only whole
_OUTPUT_EXACT = frozenset({"to", "into"})
#: words of an argument's canonical name that make its value the text a tool writes or sends, not a file name
TEXT_WORDS = frozenset({"content", "contents", "body", "text", "message", "msg", "subject", "title", "description",
                        "comment", "comments", "note", "notes", "summary", "caption", "prompt", "question", "answer",
                        "reply", "html", "markdown", "bio", "status"})
#: words of an argument's canonical name that make its value a URL (a path-named argument ``url`` is fetched)
_URL_WORDS = frozenset({"url", "urls", "uri", "uris", "link", "links", "href", "endpoint", "webhook"})
#: the namespace separators of :func:`~agentguard.core.canonical.name_forms` (``__``, ``.``, ``/``, ``:``)
_NAMESPACE = re.compile(r"__|[./:]")


@lru_cache(maxsize=1)
def read_verbs() -> frozenset[str]:
    """The verbs that make a tool a reader: the published vocabularies' read kind and :data:`_FILE_READS`."""
    return frozenset(v for v, kind in external_kinds().items() if kind == "read") | _FILE_READS


@lru_cache(maxsize=1)
def other_verbs() -> frozenset[str]:
    """Verbs of every other kind (write, send, delete: the published vocabularies) and :data:`_FILE_WRITES`."""
    return frozenset(v for v, kind in external_kinds().items() if kind != "read") | _FILE_WRITES


@lru_cache(maxsize=4096)
def name_words(name: str) -> tuple[tuple[str, ...], ...]:
    """The words of each namespace part of a tool's name (NFKC, invisible characters removed, split at the
    separators, then into identifier words): ``fs__readFile`` -> ``(("fs",), ("read", "file"))``; the last part
    is the tool's own name."""
    return tuple(tuple(tokens(part)) for part in _NAMESPACE.split(strip_invisible(name)))


def reads_only(name: str, readers: re.Pattern[str] | None = None) -> bool:
    """Whether the tool ``name`` only reads (see the module docstring); ``readers``: the compiled
    ``read_only_tools`` globs (canonical, as :func:`~agentguard.core.canonical.grant_name` spells names). A name
    over 256 characters, or with a verb of another kind or a joining word in any part (``write_file.read``), does
    not read."""
    if readers is not None:
        return bool(readers.match(grant_name(name)))
    if len(name) > 256:
        return False
    parts = name_words(name)
    own = parts[-1] if parts else ()
    return bool(own) and own[0] in read_verbs() and not any(
        w in _JOINERS or w in other_verbs() for part in parts for w in (part[1:] if part is own else part))


#: verbs of tools that read every file below the directories they are given (a search of contents, a walk)
TREE_VERBS = frozenset({"search", "grep", "rg", "find", "scan", "index", "walk", "crawl", "glob", "locate"})
#: argument names (canonical) that make any tool read below its directories when true
_RECURSIVE = frozenset({"recursive", "recurse", "recursively", "deep", "r"})
_FALSE = frozenset({"", "false", "f", "no", "n", "off", "0", "none", "null"})


#: words of a tool's own name that make it list a whole tree (``directory_tree``, ``file_tree``, ``rglob``)
TREE_WORDS = frozenset({"tree", "trees", "rglob", "recursive", "recursively", "walk", "subtree"})
#: argument names (canonical) of how deep a listing goes: a depth other than 0 or 1 lists below the directory
_DEPTH = frozenset({"depth", "max_depth", "maxdepth", "levels", "level", "max_level", "recursion_depth",
                    "recurse_depth", "max_levels"})


_RECURSIVE_FLAG = re.compile(r"-[A-Za-z]*[rR][A-Za-z]*|--recursive|--recurse|--dereference-recursive|--archive")


def reads_trees(name: str, arguments: Any) -> bool:
    """Whether the tool ``name`` called with ``arguments`` (a mapping) may read every file below a directory its
    path arguments name: its own name starts with a search verb (:data:`TREE_VERBS`: ``search_files``, ``grep``,
    ``find_in_files``) or holds a tree word (:data:`TREE_WORDS`: ``directory_tree``, whose listing names every file
    below), an argument named ``recursive`` (or alike) is not false, one named as a depth (``max_depth``) is
    not 0 or 1 (a value that is no number counts: fail closed), or a value is a recursive flag (``-R``, ``-ra``,
    ``--recursive``: a tool passing its flags to ``ls``, ``grep`` or ``cp``; not ``-a``, which is ``ls``'s
    "all"). A name over 256 characters counts as one."""
    if len(name) > 256:
        return True
    parts = name_words(name)
    if parts and parts[-1] and (parts[-1][0] in TREE_VERBS or not TREE_WORDS.isdisjoint(parts[-1])):
        return True
    args = dict(arguments).items()
    if any(isinstance(x, str) and _RECURSIVE_FLAG.fullmatch(x.strip()) for _, v in args
           for x in (v if isinstance(v, (list, tuple)) else [v])):  # {"flags": "-R"}: ls -R, grep -r, cp -a
        return True
    if any(canonical_name(k) in _DEPTH and v is not None and str(v).strip().casefold() not in (
            "0", "1", "0.0", "1.0", "false", "true", "") for k, v in args):
        return True
    return any(canonical_name(k) in _RECURSIVE and v is not None and v is not False and not (
        isinstance(v, (int, float)) and not isinstance(v, bool) and v == 0) and not (
        isinstance(v, str) and v.strip().casefold() in _FALSE) for k, v in args)


def _remote(value: str) -> bool:
    """A web URL whose path climbs nowhere: no component of dots only (``..``, ``%2e%2e``, Windows' ``...``), which
    a tool reading the value as a local path would follow out of the directory ``https:``."""
    return web_url(value) and not any(c.strip(". ") == "" and ".." in c for c in decoded_path(value).split("/"))


def writes_to(key: str, value: Any, reader: bool, context: frozenset[str] = frozenset()) -> bool:
    """Whether the path values of argument ``key`` (canonical) holding ``value`` (a string or an argv list) are
    files the call may write: every argument of a tool that writes but those in ``context`` (a command's directory
    and environment) and the text it writes (:data:`TEXT_WORDS`), a reader's output arguments
    (:data:`OUTPUT_WORDS`); never a value that is only web URLs."""
    words = set(key.split("_")) | {key}
    if (not path_named(key) or not _URL_WORDS.isdisjoint(words)) and all(
            _remote(str(v)) for v in (value if isinstance(value, list) else [value])):
        return False
    if reader:
        return not _OUTPUT_EXACT.isdisjoint(words) or any(w.startswith(tuple(OUTPUT_WORDS)) for w in words)
    return key not in context and (TEXT_WORDS.isdisjoint(words) or path_named(key))


def config_write(key: str, value: Any, forms: list[PathForm], bases: tuple[str, ...], reader: bool,
                 context: frozenset[str] = frozenset()) -> str | None:
    """Why the call writes a file that configures what a program runs through argument ``key`` (canonical) holding
    ``value``, or None. ``forms``: the spellings :func:`~.arguments.path_values` read from it (with ``bases``, the
    call's directories). An argument named as a path is read as the guard reads it for ``deny_paths``, globs
    included (a tool may expand ``~/.z*rc``); any other argument literally only (the file ``open()`` names: a glob
    in a text, ``1/2 * 3``, is not a file a tool writes to), also below each directory of the call."""
    if not writes_to(key, value, reader, context):
        return None
    if path_named(key):
        return configures(forms)
    literal: list[PathForm] = []
    if path_values(key, value, literal, bases, globs=False):
        return configures(forms)  # refused unread already (too many pieces, past the bounds)
    return configures(literal)
