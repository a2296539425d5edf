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
``dest``, ``save_to``...) is a write too. Three things are not write targets, each decided by what the tool
defines (an argument's name, the call's kind), never by a value the agent chose, except the last:

- an argument named as the text a tool writes or sends (:data:`TEXT_WORDS`: ``content``, ``body``, ``text``,
  ``message``, ``subject``...) and not also as a path (``note_path`` is a path): it is what is written, not
  where (``write_file {"path": "notes.txt", "content": "I changed ~/.zshrc"}``);
- the directory a command runs in and its environment (``cwd``, ``env``) in a call that runs a command: the
  shell analysis reads what the command itself writes, relative to that directory;
- a web URL (``https://host/v1/config``): a remote resource, fetched or posted to, as the path reading already
  treats it (:func:`~.arguments.web_url`). A tool that reads such a value as a local path would open a
  directory named ``https:``; a downloader that names its file after the URL is out of reach, as ``wget URL``
  is for the shell analysis.

Values are still matched against ``deny_paths`` whatever the tool (a read of ``/etc/shadow`` is refused).

The guarantee: for a tool that writes, a path value whose spelling the shell guard would refuse as a write
target (``echo x > PATH``) is refused; a read (``read_file {"path": "~/.gitconfig"}``) is not.
"""

from __future__ import annotations

import re
from functools import lru_cache

from typing import Any

from ..core.canonical import grant_name, strip_invisible
from .arguments import path_named, path_values, web_url
from .shell.model import configures
from .shell.paths import PathForm
from .toolnames import external_kinds, tokens

__all__ = ["OUTPUT_WORDS", "TEXT_WORDS", "config_write", "name_words", "other_verbs", "read_verbs", "reads_only",
           "writes_to"]

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
#: words of an argument's canonical name that make it where a tool puts its result (a reader's output file)
OUTPUT_WORDS = frozenset({"out", "output", "outputs", "outfile", "outdir", "dest", "destination", "dst", "save",
                          "saveas", "write", "export", "log", "logfile", "target", "to", "into"})
#: words of an argument's canonical name that make its value the text a tool writes or sends, not a file name
TEXT_WORDS = frozenset({"content", "contents", "body", "text", "message", "msg", "subject", "title", "description",
                        "comment", "comments", "note", "notes", "summary", "caption", "prompt", "question", "answer",
                        "reply", "html", "markdown", "bio", "status"})
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
def name_words(name: str) -> tuple[str, ...]:
    """The words of a tool's own name: NFKC, invisible characters removed, the part after the last namespace
    separator, split into identifier words (``fs__readFile`` -> ``read``, ``file``)."""
    return tuple(tokens(_NAMESPACE.split(strip_invisible(name))[-1]))


def reads_only(name: str, readers: re.Pattern[str] | None = None) -> bool:
    """Whether the tool ``name`` only reads (see the module docstring); ``readers``: the compiled
    ``read_only_tools`` globs (canonical, as :func:`~agentguard.core.canonical.grant_name` spells names)."""
    if readers is not None:
        return bool(readers.match(grant_name(name)))
    words = name_words(name if len(name) <= 256 else name[:256])
    return bool(words) and words[0] in read_verbs() and not any(
        w in _JOINERS or w in other_verbs() for w in words[1:])


def writes_to(key: str, value: Any, reader: bool, context: frozenset[str] = frozenset()) -> bool:
    """Whether the path values of argument ``key`` (canonical) holding ``value`` (a string or an argv list) are
    files the call may write: every argument of a tool that writes but those in ``context`` (a command's directory
    and environment) and the text it writes (:data:`TEXT_WORDS`), a reader's output arguments
    (:data:`OUTPUT_WORDS`); never a value that is only web URLs."""
    words = set(key.split("_")) | {key}
    if all(web_url(str(v)) for v in (value if isinstance(value, list) else [value])):
        return False
    if reader:
        return not OUTPUT_WORDS.isdisjoint(words)
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
