"""How a tool's argument values are read by the rules guard (:mod:`.rules`): strings, argv lists, paths.

A tool decides how it reads its arguments, not their names: :func:`path_values` reads any single-line string
that could name a file (:func:`path_shaped`) and the value of an argument named as a path (``notebook_path``,
``source_file``) as a path and as the glob pattern a tool may expand.

Session 19: a tool also decides which argument it joins to which. :func:`base_dirs` names every directory a call
gives (an argument named as one, or any path-shaped value, at any depth, the relative ones also joined to the
others), and a file name, a pattern list or any one-word value is read below each (``{"workspace": "/home/u/.aws",
"path": "credentials"}``); a name alone below the tool's own working directory. What no bounded reading covers
(more than :data:`MAX_BASES` directories or :data:`MAX_JOINS` readings) is refused unread. Not read: two bare words
of arguments named neither as directories nor as names chained into one path (``{"root": "/", "a": "etc",
"b": "shadow"}``), the file a free text merely mentions.
"""

from __future__ import annotations

import datetime
import enum
import functools
import ipaddress
import json
import numbers
import os
import posixpath
import re
import uuid
from collections import deque
from collections.abc import Mapping
from typing import Any, Callable

from ..core.canonical import canonical_name, strip_invisible
from .shell import path_forms, pattern_paths
from .shell.words import TooManyWords

__all__ = ["DESCRIPTOR_ARGS", "DIR_WORDS", "MAX_BASES", "MAX_ENTRIES", "MAX_JOINS", "MAX_NESTING", "MAX_PATH",
           "MAX_PIECES", "NAME_WORDS", "PATH_ARGS", "PATH_WORDS", "SEARCH_WORDS", "TooDeep", "as_text", "base_dirs",
           "descriptors", "json_container", "keyed_values", "leaves", "named_entries", "path_named", "path_shaped",
           "path_values", "readings", "strings", "web_url"]

#: argument names (canonical) whose values are file system paths
PATH_ARGS = frozenset({"path", "paths", "file", "files", "filename", "file_name", "filepath", "file_path", "dir",
                       "directory", "folder", "target", "source", "src", "dst", "dest", "destination", "cwd",
                       "output", "input", "location", "uri", "url"})


#: argument names (canonical) whose integer value Python's ``open()`` reads as a file descriptor (``open(3)``)
DESCRIPTOR_ARGS = (PATH_ARGS - {"uri", "url"}) | frozenset({"fd", "fileno", "file_descriptor", "descriptor"})


class TooDeep:
    """Marks a value nested deeper than :data:`MAX_NESTING`, a string list with objects in it, or an object of a
    type no JSON reader gives (not text, bytes, a path, a number, a list, a set or a mapping: a ``memoryview`` is
    read as its bytes, anything else is text only as its own class says): refused unread."""


MAX_NESTING = 8

#: standard-library values whose text is fixed by the library (a date, an address, an id): read as that text
_TEXT_VALUES = (datetime.date, datetime.time, datetime.timedelta, uuid.UUID, ipaddress.IPv4Address,
                ipaddress.IPv6Address, ipaddress.IPv4Network, ipaddress.IPv6Network, ipaddress.IPv4Interface,
                ipaddress.IPv6Interface)


_PLAIN = frozenset({str, int, float, bool, type(None), list, dict, tuple})


def as_text(value: Any) -> Any:
    """``value`` as the text a tool reads from it, where there is one: a path (``os.fspath``), bytes (UTF-8, what
    cannot be decoded kept as surrogates), a ``memoryview`` (its bytes), an :class:`enum.Enum` member that is not
    itself text or a number (its value), a standard-library value of fixed text (:data:`_TEXT_VALUES`: a date, an
    IP address, a UUID); anything else unchanged."""
    if type(value) in _PLAIN:
        return value
    if isinstance(value, enum.Enum) and not isinstance(value, (str, numbers.Number)):
        value = value.value
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "surrogateescape")
    return str(value) if isinstance(value, _TEXT_VALUES) else value


def strings(value: Any, depth: int = 0) -> list[Any]:
    """The strings and argv lists inside an argument value (nested lists/dicts, bounded depth).

    A list of scalars (strings, numbers) is an argv list; deeper nesting than :data:`MAX_NESTING` yields a
    :class:`TooDeep` marker, which the guard refuses. A mapping's string keys are read as well as its values (a
    tool writing several files takes ``{path: content}``: ``{"~/.ssh/authorized_keys": "ssh-rsa ..."}``), and
    ``bytes`` and ``os.PathLike`` values as the text ``open()`` reads them as.
    """
    value = as_text(value)
    if isinstance(value, str):
        inner = json_container(value) if depth <= MAX_NESTING else None
        return [value] if inner is None else [value, *strings(inner, depth + 1)]
    if depth > MAX_NESTING:
        return [TooDeep()]
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value) \
                and any(isinstance(v, str) for v in value):
            return [list(value)]
        if any(isinstance(v, str) for v in value) and any(
                not isinstance(v, (str, int, float)) or isinstance(v, bool) for v in value):
            return [TooDeep()]  # a string list with objects in it: not an argv anyone can read, refused
        return [s for v in value for s in strings(v, depth + 1)]
    if isinstance(value, Mapping):
        return [s for k, v in value.items() for s in ([k] if isinstance(k, str) else []) + strings(v, depth + 1)]
    if isinstance(value, (set, frozenset)):
        return [s for v in value for s in strings(v, depth + 1)]
    return [] if value is None or isinstance(value, numbers.Number) else [TooDeep()]  # an object: refused unread


MAX_JSON = 1 << 20  # a longer string is read as itself only
#: the most nested path-named entries :func:`named_entries` reads in one argument (more: refused unread)
MAX_ENTRIES = 1024


def descriptors(name: str, value: Any) -> list[int]:
    """The file descriptors ``open()`` reads from an argument ``name`` (canonical) holding ``value``: an integer, or a
    list of them, in a :data:`DESCRIPTOR_ARGS` argument (``open(3)``; not the standard streams 0-2, nor a boolean,
    which is 0 or 1). In an argument named only as a descriptor (``fd``, ``fileno``...) also what a framework
    coerces to an integer (pydantic's lax mode: ``"3"``, ``3.0``), since its schema can only want one."""
    if name not in DESCRIPTOR_ARGS:
        return []
    items = value if isinstance(value, list) else [value]
    if name in _FD_ONLY:
        items = [int(v) if isinstance(v, float) and v.is_integer() else
                 int(v) if isinstance(v, str) and len(v) < 64 and v.strip().isascii() and v.strip().isdigit() else v
                 for v in items]
    ok = items and all(type(v) is int for v in items)
    return [v for v in items if v > 2] if ok else []  # 0-2: the tool's own standard streams, no file of the host


_FD_ONLY = frozenset({"fd", "fileno", "file_descriptor", "descriptor"})


def named_entries(value: Any, depth: int = 0) -> list[tuple[str, Any]] | None:
    """The ``(key, value)`` pairs of the mappings nested in an argument value (inside lists, mappings and strings
    holding JSON: :func:`json_container`) whose key names a path, a file name or a descriptor (:func:`path_named`,
    :data:`NAME_WORDS`,
    :data:`DESCRIPTOR_ARGS`), keys canonical: ``{"spec": {"src": "id_rsa"}}`` names the file ``id_rsa`` as
    ``{"src": "id_rsa"}`` does. None past :data:`MAX_ENTRIES` (refused unread); deeper than :data:`MAX_NESTING`
    nothing (:func:`strings` refuses it)."""
    found, _deep = _keyed(value, _file_named, depth)
    return found


def _file_named(key: str) -> bool:
    return path_named(key) or key in DESCRIPTOR_ARGS or not NAME_WORDS.isdisjoint(_words(key))


def _keyed(value: Any, wanted: Callable[[str], bool], depth: int = 0) -> tuple[list[tuple[str, Any]] | None, bool]:
    """The one walk of :func:`named_entries` and :func:`keyed_values`: the ``(canonical key, value)`` pairs under keys
    ``wanted`` accepts at any depth (mappings, lists, JSON texts), outermost first (None past :data:`MAX_ENTRIES`),
    and whether a part lies deeper than :data:`MAX_NESTING` (not walked)."""
    out: list[tuple[str, Any]] = []
    deep = False
    todo: deque[tuple[Any, int]] = deque([(value, depth)])
    while todo:
        item, level = todo.popleft()
        if level > MAX_NESTING:
            deep = True
            continue
        if isinstance(item, str):
            inner = json_container(item) if ("{" in item or "[" in item) else None
            if inner is not None:
                todo.append((inner, level + 1))
        elif isinstance(item, (list, tuple)):
            todo.extend((v, level + 1) for v in item)
        elif isinstance(item, Mapping):
            for k, v in item.items():
                key = canonical_name(k) if isinstance(k, str) else ""
                if key and wanted(key):
                    out.append((key, v))
                    if len(out) > MAX_ENTRIES:
                        return None, deep
                todo.append((v, level + 1))
    return out, deep


def json_container(text: str) -> Any:
    """The object, array or string ``text`` holds as JSON, or None: a tool may parse a string argument as JSON (LangChain's
    single-input tools, an MCP tool taking ``params`` as text), so ``{"input": "{\\"path\\": \\"/etc/shadow\\"}"}``
    names ``/etc/shadow`` to it. A key given twice keeps every value (parsers differ on which one wins). The
    standard library's parser: the one such tools use; Python's own reading of the text, nothing lenient."""
    t = text.strip()
    if len(t) < 2 or len(t) > MAX_JSON or t[0] + t[-1] not in ("{}", "[]", '""'):
        return None
    try:
        return json.loads(t, object_pairs_hook=_all_pairs)
    except (ValueError, RecursionError):
        return None


def _all_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, list[Any]] = {}
    for k, v in pairs:
        out.setdefault(k, []).append(v)
    return {k: vs[0] if len(vs) == 1 else vs for k, vs in out.items()}


#: words of an argument's canonical name that make it a path a tool may expand as a pattern (``notebook_path``,
#: ``source_file``, ``output_dir``): read literally and as a glob
PATH_WORDS = frozenset({"path", "paths", "pathname", "file", "files", "filename", "filenames", "filepath", "fname",
                         "fpath", "dir", "dirs", "directory", "folder", "root", "dest", "destination", "src", "source",
                         "target", "output", "input", "location", "uri", "url", "glob", "attachment", "attachments",
                         "attach", "segments"})
_PATH_PUNCT = frozenset("/\\%")
MAX_PATH = 4096  # PATH_MAX: a longer value opens no file
_WEB_URL = re.compile(r"\s*(?:https?|wss?|ftps?)://", re.IGNORECASE)


#: words of an argument's name that make its value a directory the call's other path values may be relative to
#: (``search_files(path="~", pattern=".ssh/id_*")``, ``read(folder="~/.ssh", name="id_rsa")``); the relative ones
#: (``subdir``, ``rel``) may also be joined to another directory of the call
DIR_WORDS = frozenset({"dir", "dirs", "directory", "folder", "root", "base", "basedir", "cwd", "workdir", "parent",
                       "path", "paths", "location", "chdir", "workspace", "repo", "repository", "project", "home",
                       "subdir", "subpath", "subfolder", "rel", "relative", "relpath", "prefix", "under", "within"})
#: words of an argument's name that make its value a file name or pattern a tool may join to such a directory, or
#: to its own working directory when the call names none
NAME_WORDS = PATH_WORDS | {"name", "names", "pattern", "patterns", "include", "includes", "exclude", "mask",
                           "filter", "basename", "rel", "relative", "relpath", "subpath", "subdir", "child", "entry",
                           "member", "ext", "extension", "suffix", "stem"}
#: words that make a search tool's argument (:func:`~.writes.reads_trees`) a name it may match files by, as well as
#: text it matches their contents with: the guard cannot tell which (``search_files {"query": "id_rsa"}``)
SEARCH_WORDS = frozenset({"query", "q", "search", "term", "terms", "keyword", "keywords", "regex", "expression",
                          "expr", "needle"})
#: words of an argument's name that make its value a list of patterns a tool may split at blanks too
_LISTS = SEARCH_WORDS | {"glob", "globs", "pattern", "patterns", "include", "includes", "exclude", "mask", "filter",
                         "names", "ext", "extension", "extensions", "suffix", "suffixes", "types"}
#: the most directories one call names (DIR_WORDS arguments and path-shaped values, at any depth, and the joins of
#: the relative ones to the others); past it the call is refused unread
MAX_BASES = 64
#: the most readings of a call's strings below its bases (single-line strings times bases): past it the call is
#: refused unread (reading every value below every base costs their product; a glob's reading milliseconds each)
MAX_JOINS = 256


def _words(name: str) -> set[str]:
    return set(name.split("_")) | {name}


def _scalars(arguments: Mapping[str, Any], canonical: Any) -> list[tuple[str, str]] | None:
    """Every ``(canonical key, string)`` of a mapping entry at any depth (in lists, mappings and strings holding
    JSON), a list of strings as its elements; None past :data:`MAX_ENTRIES` (too many to read)."""
    out: list[tuple[str, str]] = []
    todo: list[tuple[str, Any, int]] = [(canonical(k) if isinstance(k, str) else "", v, 0)
                                        for k, v in arguments.items()]
    while todo:
        key, item, level = todo.pop()
        if level > MAX_NESTING:
            continue
        if isinstance(item, str):
            out.append((key, item))
            inner = json_container(item) if ("{" in item or "[" in item) else None
            if inner is not None:
                todo.append((key, inner, level + 1))
        elif isinstance(item, (list, tuple)):
            todo += [(key, v, level + 1) for v in item]
        elif isinstance(item, Mapping):
            todo += [(canonical(k) if isinstance(k, str) else "", v, level + 1) for k, v in item.items()]
        if len(out) > MAX_ENTRIES:
            return None
    return out


def base_dirs(arguments: Mapping[str, Any], canonical: Any) -> tuple[str, ...] | None:
    """The directories a call names, which a tool may join its other path values to (so those are read relative to
    each as well): the single-line values, at any depth, of arguments named as directories (:data:`DIR_WORDS`) and
    every path-shaped value (:func:`path_shaped`: a tool decides which argument it joins to, not its name:
    ``{"workspace": "/home/u/.aws", "path": "credentials"}``), and each relative one joined to the others
    (``{"cwd": "/home/u", "subdir": ".aws", "name": "credentials"}``). None (the call is refused unread) past
    :data:`MAX_ENTRIES` strings, :data:`MAX_BASES` directories or :data:`MAX_JOINS` readings."""
    entries = _scalars(arguments, canonical)
    if entries is None:
        return None
    plain = [(k, strip_invisible(v).strip() if len(v) > MAX_PATH else v.strip()) for k, v in entries]
    lines = [(k, v) for k, v in plain if v and "\n" not in v and len(v) <= MAX_PATH]  # (padding a tool strips)
    dirs = list(dict.fromkeys(v for k, v in lines
                              if not web_url(v) and (not DIR_WORDS.isdisjoint(_words(k)) or path_shaped(v))))
    if len(dirs) > MAX_BASES:
        return None
    out = dict.fromkeys(dirs + [posixpath.join(d, r) for d in dirs for r in dirs
                                if r != d and not r.startswith(("/", "~")) and not _ROOTED.match(r)])
    return tuple(out) if len(out) <= MAX_BASES and len(out) * len(lines) <= MAX_JOINS else None


_ROOTED = re.compile(r"[A-Za-z]:|[\\/]|file:", re.IGNORECASE)  # a drive, a root, a URL: not joined to another


def path_named(name: str) -> bool:
    """Whether an argument's canonical name names a path (:data:`PATH_ARGS`, or a word of :data:`PATH_WORDS`)."""
    return name in PATH_ARGS or not PATH_WORDS.isdisjoint(name.split("_"))


def web_url(text: str) -> bool:
    """Whether a value is an ``http(s)``, ``ws(s)`` or ``ftp(s)`` URL (a remote resource, fetched)."""
    return bool(_WEB_URL.match(text))


def path_values(name: str, text: Any, paths: list[Any], bases: tuple[str, ...] = (), globs: bool = True,
                names: frozenset[str] = NAME_WORDS) -> str | None:
    """Add the path spellings of one argument value to ``paths``; a reason to refuse it unread, or None.

    The tool decides how it reads its arguments, not their names, so every value that could name a file is read
    both literally and as the glob pattern a tool may expand (:func:`~.shell.pattern_paths`: ``glob.glob``,
    ``pathlib.Path.glob``, a shell): the value of an argument named as a path (:data:`PATH_ARGS`, or a name with
    a word of :data:`PATH_WORDS`), and any :func:`path_shaped` value whatever its argument is called
    (``{"doc": {"x": "~/.ss[h]/id_rsa"}}``: the structural rule of the thirteenth session's red team; a bare
    word with no ``/`` such as ``*`` or ``?env`` in an argument not named as a path is read as no file). With
    ``bases`` (:func:`base_dirs`), these values and any single-line value of an argument named as a file name or
    pattern (``names``: :data:`NAME_WORDS`, and :data:`SEARCH_WORDS` for a search tool) are also read relative to
    each base, and to the tool's own working directory (session 19: ``{"name": "id_rsa"}``; any other argument's
    one-word value below each base only: :func:`_word`), a file named by a reference marker (``@/etc/shadow``,
    ``field=@file``: :func:`_references`), whole and as the list a tool may split it into (at line breaks, ``,``
    and ``;``, and in a pattern list's argument at blanks: ``"*.py .env"``). With ``globs=False`` every value is read
    literally only (:func:`~.shell.path_forms`: the file ``open()`` names). Also read (session 18): a list of
    strings joined as ``os.path.join`` and ``pathlib.Path`` join pieces (in a path-named argument, or when a piece
    is path-shaped), an integer in a :data:`DESCRIPTOR_ARGS` argument as the descriptor ``open(int)`` reads (any
    file), variables as a tool that expands them reads them (in a path-named argument, or a value without blanks:
    :func:`~.shell.paths.path_forms` with ``env``). A value longer than :data:`MAX_PATH` is read literally (a tool
    may normalise it before opening it) in a path-named argument only: reading every long single-line text (a
    minified file's content) costs seconds a megabyte, so ``{"x": "/" + "a/../" * 2000 + "etc/shadow"}`` is a known
    gap (session 18); the length is the value's without surrounding blanks and invisible characters, which a tool
    may strip (``"/etc/shadow" + " " * 5000``).
    """
    named = path_named(name)
    joins = tuple(b for b in bases if b != text)
    name_like = not names.isdisjoint(_words(name))
    values = list(text) if isinstance(text, list) else [text]
    joined = _joined(values) if named or any(path_shaped(str(v)) for v in values) else None
    for value in values + ([joined] if joined else []):
        if name in DESCRIPTOR_ARGS and type(value) is int:  # open(3) reads descriptor 3: any file held open
            value = f"/dev/fd/{value}"
        value = str(value)
        blanks = globs and not _LISTS.isdisjoint(_words(name))  # "*.py .env": a pattern list split at blanks
        pieces = (_pieces(value, blanks=blanks) if named or name_like else []) + _references(value)
        if len(pieces) > MAX_PIECES:
            return f"a value listing more than {MAX_PIECES} paths, refused unread"
        for p in dict.fromkeys([value, value.split("\x00", 1)[0]] + pieces):
            if len(p) > MAX_PATH and len(strip_invisible(p).strip()) <= MAX_PATH:
                p = strip_invisible(p).strip()  # padded: the value a tool that strips it opens
            if len(p) > MAX_PATH:  # no open() takes it, but a tool may normalise it first (os.path.abspath)
                if named:  # (any other argument's long text is not read: seconds a megabyte, see the docstring)
                    paths += path_forms(p)
            elif not named and _WEB_URL.match(p):
                paths += path_forms(p)   # an http(s) URL is fetched, not expanded as a glob
            elif named or path_shaped(p) or (name_like and "\n" not in p.strip()) or _word(p, joins):
                try:   # the literal spellings (path_forms) and the glob's, also below each directory of the call
                    own = named or name_like or path_shaped(p)  # also the tool's own directory: "id_rsa" alone
                    cwds = ("",) + joins if own else joins  # (a bare word of another argument: below a base only)
                    env = named or not any(ch.isspace() for ch in p)  # "$HOME/.aws/x", not a text naming $USER
                    paths += pattern_paths(p, cwds, env=env) if globs else path_forms(p, cwds, env=env)
                except TooManyWords:
                    return "a path pattern beyond the expansion bounds, refused unread"
    return None


def _word(text: str, joins: tuple[str, ...]) -> bool:
    """Whether a value of an argument named neither as a path nor as a name is still read below the call's
    directories: one word (no blanks, at most ``NAME_MAX`` 255 characters) when the call names a directory (a tool
    decides which argument it joins to its directory: ``{"path": "/home/u/.aws", "which": "credentials"}``)."""
    return bool(joins) and 0 < len(text) <= 255 and not any(ch.isspace() for ch in text)


def _joined(values: list[Any]) -> str | None:
    """A list of path pieces as ``os.path.join(*values)`` and ``pathlib.Path(*values)`` join them (an absolute
    piece restarts the path: ``["/", "etc", "shadow"]``, ``["~", ".ssh", "id_rsa"]``); None for fewer than two
    strings or more than :data:`MAX_PIECES`."""
    if not 2 <= len(values) <= MAX_PIECES or not all(isinstance(v, str) for v in values):
        return None
    return posixpath.join(*[v.replace("\\", "/") for v in values])


#: the most paths one path-named value is read as a list of (lines, ``,``, ``;``, ``:``); more is refused unread
MAX_PIECES = 256
_SEPARATED = re.compile(r"[,;\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")


def _pieces(value: str, blanks: bool = False) -> list[str]:
    """A path-named value read as a list, as a tool may split it: at line breaks, ``,`` and ``;`` (and at ``:``,
    a ``PATH``-style list, unless it holds a URL's ``://``; with ``blanks``, a name list's, also at blanks:
    ``"*.py .env"``); C's ``open()`` also ends a name at a NUL."""
    cut = value.split("\x00", 1)[0]
    parts = re.split(r"[\s,;\x1c-\x1e\x85]", cut) if blanks else _SEPARATED.split(cut)
    if "://" not in cut and ":" in cut:
        parts += [q for part in parts for q in part.split(":")]
    return [q for q in dict.fromkeys(parts) if q.strip() and q != value]


_REFERENCE = re.compile(r"(?:^|(?<=[\s=:]))[@<]|(?<=\w)@")


def _references(value: str) -> list[str]:
    """The files a value names by a file-reference marker (session 19), as the programs that read one do:
    ``@file`` (curl's ``-d @file``, argparse's ``fromfile_prefix_chars``, response files), ``<file``, httpie's
    ``field@file``, ``field=@file``, ``field:=@file`` and curl's ``-F field=<file``. A value starting with a marker
    names the rest (``./`` prepended: a bare ``@id_rsa`` is the file ``id_rsa`` of the working directory); a
    marker inside it names what follows up to a blank when that is path-shaped (``ann@example.com`` names no
    file). Only for a value of at most :data:`MAX_PATH` characters holding ``@`` or ``<``."""
    if len(value) > MAX_PATH or ("@" not in value and "<" not in value):
        return []
    out = []
    for m in _REFERENCE.finditer(value):
        if m.start() == len(value) - len(value.lstrip()):  # the value starts with the marker: all of the rest
            rest = value[m.end():].strip()
            out.append(rest if path_shaped(rest) else "./" + rest)
        else:
            rest = re.split(r"\s", value[m.end():], maxsplit=1)[0]
            if path_shaped(rest):
                out.append(rest)
    return [r for r in out if r.strip("./")][:MAX_PIECES + 1]


def path_shaped(text: str) -> bool:
    """Whether a value of an argument not named as a path could still name a file, and be expanded as a glob:
    a single-line string that holds ``/``, ``\\`` or ``%`` or starts with ``~``, ``.`` or ``file:`` (after
    blanks)."""
    head = text.lstrip()
    return "\n" not in text.strip() and (head.startswith(("~", ".")) or head[:5].casefold() == "file:"
                                        or not _PATH_PUNCT.isdisjoint(text))


def leaves(value: Any, depth: int = 0) -> list[str] | None:
    """The scalar values inside an argument (a list of recipients: each one; a mapping: keys and values), as
    text; None when nested deeper than :data:`MAX_NESTING` or holding an object of another type than text, bytes,
    a path, a number, a list, a set or a mapping (refused unread). ``bytes`` and ``os.PathLike`` values
    are read as the text they hold."""
    value = as_text(value)
    if isinstance(value, (str, numbers.Number)) or value is None:
        return [] if value is None else [value if isinstance(value, str) else str(value)]
    if depth > MAX_NESTING or not isinstance(value, (list, tuple, set, frozenset, Mapping)):
        return None  # too deep, or an object no JSON reader gives (its text is whatever its class says): unread
    items = (list(value) if not isinstance(value, Mapping) else [x for kv in value.items() for x in kv])
    out: list[str] = []
    for item in items:
        if item is None:
            continue
        sub = leaves(item, depth + 1)
        if sub is None:
            return None
        out += sub
    return out


#: the strings a framework reads as a boolean (pydantic, YAML 1.1, argparse-style flags), and as which
_BOOLEANS = {**dict.fromkeys(("true", "t", "yes", "y", "on", "1"), "true"),
             **dict.fromkeys(("false", "f", "no", "n", "off", "0"), "false")}


def _numbers(text: str) -> list[str]:
    """The decimal texts of the numbers ``text`` spells in any way a framework reads one (Python's ``int`` and
    ``float``: ``1_000``, ``１０００``, ``1e3``, `` 42 ``; ``int(x, 0)`` and YAML: ``0x3e8``, ``0o17``; pydantic's lax
    ``int``/``float``, which an MCP server's prompt or any ``validate_call`` function receives: ``"0-9"`` is ``-9``
    to it and ``"+_7"`` is ``7``), each parser's own reading, in that order."""
    out: list[str] = []
    for parse in (int, lambda t: int(t, 0), float, *_lax_numbers()):
        try:
            n = parse(text)  # type: ignore[operator]
        except (ValueError, OverflowError):  # pydantic's ValidationError is a ValueError
            continue
        out.append(str(int(n)) if isinstance(n, float) and n.is_integer() else str(n))
    return list(dict.fromkeys(out))


@functools.lru_cache(maxsize=1)
def _lax_numbers() -> tuple[Any, ...]:
    """pydantic's lax ``int`` and ``float`` validators (none without pydantic: no framework then reads that way)."""
    try:
        from pydantic import TypeAdapter
    except ImportError:  # pragma: no cover - pydantic comes with every adapter's framework
        return ()
    return tuple(TypeAdapter(kind).validate_python for kind in (int, float))


def readings(text: str, exact: bool = False) -> list[str]:
    """The values one argument string may be read as by the tool's framework: the text itself, its NFKC form
    with invisible characters and surrounding blanks removed (``"ｔ\u200bｒｕｅ"`` is ``true``) and, unless
    ``exact``, the number it spells (``"1e3"``, ``"1_000"``, ``"0x3e8"`` are ``1000``) and the boolean it spells
    (``"yes"``, ``"on"`` are ``true``). An argument rule's ``forbid`` refuses a value when any reading matches; its
    ``match`` needs the text and its NFKC form (``exact``) to match: the numeric readings would refuse a zip code
    ``02134`` read as ``2134``."""
    plain = strip_invisible(text).strip() if len(text) <= MAX_PATH else text
    out = [text, plain]
    if not exact and len(plain) <= 64:
        out.extend(_numbers(plain))
        if plain.casefold() in _BOOLEANS:
            out.append(_BOOLEANS[plain.casefold()])
    return list(dict.fromkeys(out))


def keyed_values(value: Any, wanted: Callable[[str], bool]) -> list[Any] | None:
    """Every value held under a key whose canonical name ``wanted`` accepts, at any depth of ``value`` (inside
    mappings, lists and strings holding JSON: :func:`json_container`), outermost first: a tool or the library it
    hands a nested object to may read ``{"payment": {"recipient": ...}}`` or ``{"headers": {"Bcc": ...}}`` as it
    reads the top-level argument. None past :data:`MAX_ENTRIES` values or deeper than :data:`MAX_NESTING` levels
    (unreadable: the caller refuses it)."""
    found, deep = _keyed(value, wanted)
    return None if found is None or deep else [v for _, v in found]
