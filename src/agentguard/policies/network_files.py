"""The destinations a network client reads from a file its command names (session 23).

``curl -K cfg`` reads options from ``cfg`` (``url = "http://169.254.169.254/"``, ``proxy = corp``), ``wget -i
urls.txt`` and ``aria2c -i urls.txt`` fetch every URL of a file, ``wget --config rc`` reads ``http_proxy = ...``: an
agent that wrote the file one step earlier reaches any host while the command shows none. :func:`file_destinations`
reads each such file as its client does and returns the words that name a destination (as
:func:`.network_programs.program_destinations` does for the command's own words), for the one host reader.

- curl's config (``tool_parsecfg.c``): one option a line, ``--name value``, ``name = value``, ``name: value`` or
  ``name value``, the value optionally double-quoted; read as the option ``--name`` on the command line;
- wget's ``-i``/``--input-file`` and aria2c's ``-i``: one URL a line (aria2c: tab-separated mirrors; indented lines
  are its options); wget's ``--config``: ``name = value`` lines read as assignments (``http_proxy = corp``).

A file that cannot be read here (missing from the guard's directory, a relative one names the tool's; standard input
``-``; unreadable; over 1 MiB) yields a word no host reader takes for a public name, so the command is refused
(fail closed). Session 25: a config file naming another (curl's ``config = f``, wgetrc's ``input = f``: wget 1.21
fetches its URLs) is read too, four deep; the clients' default files (``~/.curlrc``, ``~/.wgetrc``, ``/etc/wgetrc``)
are read by :mod:`.network_configs` with these readers. Written by hand: no package reads these formats.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import threading
from typing import Iterator, Sequence
from contextlib import contextmanager

from .network_programs import assigned_destinations, program_destinations

__all__ = ["Stamp", "config_lines", "curl_config", "docker_context_hosts", "file_destinations",
           "kubeconfig_destinations", "named_inputs", "read_limited", "read_regular", "recorded", "recording", "stamp",
           "wgetrc_destinations"]

_MAX_BYTES = 1 << 20
#: per client, the options (short letters and long names) whose value is a file the client reads destinations from,
#: and how it reads it
_FILE_OPTIONS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "curl": ("K", ("config",), "curl"), "wget": ("i", ("input-file",), "lines"),
    "aria2c": ("i", ("input-file",), "aria2"),
}
_WGET_RC = ("config",)


#: what says a file is the one read before: (device, inode, size, mtime_ns, ctime_ns), None for a missing one
Stamp = tuple[int, int, int, int, int] | None
_RECORDERS = threading.local()


def _stamp_of(st: os.stat_result) -> Stamp:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def stamp(path: str) -> Stamp:
    """The :data:`Stamp` of the file ``path`` (links followed), None when there is none; OSError otherwise."""
    try:
        return _stamp_of(os.stat(path))
    except (FileNotFoundError, NotADirectoryError):
        return None


def recorded(files: Sequence[tuple[str, Stamp]]) -> None:
    """Add ``files`` to every :func:`recording` block open in this thread (a cached reading's files: what the
    reading that includes it depends on too)."""
    for outer in getattr(_RECORDERS, "stack", ()):
        outer.extend(files)


def _note(path: str, st: os.stat_result | None) -> None:
    recorded([(path, None if st is None else _stamp_of(st))])


@contextmanager
def recording() -> Iterator[list[tuple[str, Stamp]]]:
    """The files :func:`read_regular` opens (or finds missing) in this thread within the block, each with its
    :data:`Stamp` as read (session 26: what a cached reading of a configuration file depends on, its includes too)."""
    stack = getattr(_RECORDERS, "stack", None)
    if stack is None:
        stack = _RECORDERS.stack = []
    files: list[tuple[str, Stamp]] = []
    stack.append(files)
    try:
        yield files
    finally:
        stack.pop()


def read_regular(path: str, limit: int = _MAX_BYTES) -> bytes:
    """The first ``limit + 1`` bytes of the regular file ``path`` (a symlink followed); OSError for one that is not a
    regular file (a FIFO, ``/dev/zero``, ``/dev/stdin``, a terminal, a directory, a socket) before anything is read
    from it: opening a FIFO blocks until a writer comes, reading ``/dev/stdin`` reads the guard's own input, and a
    configuration file is never either, so a guard never waits on one (s25 red team: a ``~/.curlrc`` FIFO hung the
    decision). The null device reads as empty (``GIT_CONFIG_GLOBAL=/dev/null``, ``ssh -F /dev/null``: no file)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except (FileNotFoundError, NotADirectoryError):
        _note(path, None)
        raise
    try:
        st = os.fstat(fd)
        _note(path, st)
        if stat.S_ISCHR(st.st_mode) and st.st_rdev == os.stat(os.devnull).st_rdev:
            return b""
        if not stat.S_ISREG(st.st_mode):
            raise IsADirectoryError(errno.EINVAL, "not a regular file", path)
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(limit + 1)
    finally:
        os.close(fd)


def config_lines(text: str) -> list[str]:
    """The lines of a configuration text as curl, wget, git and ssh read them: split at ``\n`` only (a ``\r``
    before it dropped), not at the other breaks :meth:`str.splitlines` knows (``\r``, ``\x0b``, ``\x85``,
    U+2028...): a section header split there is no header here while git reads it (s25 red team: ``[url
    "http://127.0.0.9:9/\u2028"]`` rewrote github.com for real git 2.39 and was not seen)."""
    return [ln[:-1] if ln.endswith("\r") else ln for ln in text.split("\n")]


def read_limited(path: str) -> str | None:
    """The text of the regular file ``path`` (UTF-8, undecodable bytes replaced), or None: standard input ``-``, not
    readable, not a regular file (:func:`read_regular`), over 1 MiB."""
    if path == "-":
        return None
    try:
        data = read_regular(path)   # (a leading byte-order mark dropped: git skips it)
        return data.decode("utf-8", "replace").removeprefix("\ufeff") if len(data) <= _MAX_BYTES else None
    except OSError:
        return None


def _named_files(argv: Sequence[str], short: str, longs: tuple[str, ...]) -> list[str]:
    """The values of ``-X FILE``/``-XFILE`` (X in ``short``, also after other letters of a cluster: ``-sK cfg``; a
    letter after one that takes a value is read as X too, which can only refuse more) and ``--name FILE``/``--name=FILE`` (any unambiguous
    prefix, as getopt_long takes it) in ``argv``."""
    out: list[str] = []
    k = 1
    while k < len(argv):
        w = argv[k]
        k += 1
        if w == "--":
            break
        if w.startswith("--") and len(w) > 2:
            name, eq, value = w[2:].partition("=")
            if any(n.startswith(name) for n in longs) and len(name) > 2:
                if not eq and k < len(argv):
                    value, k = argv[k], k + 1
                out.append(value)
        elif w.startswith("-") and len(w) > 1:   # a cluster of short options: "-sK cfg", "-sSKcfg"
            j = next((j for j, letter in enumerate(w[1:], start=1) if letter in short), None)
            if j is None:
                continue
            value = w[j + 1:]
            if not value and k < len(argv):
                value, k = argv[k], k + 1
            out.append(value)
    return out


_MAX_NESTED = 4   # a config file naming a config file (curl's "config = f", wgetrc's "input = f"), that deep


def curl_config(text: str, depth: int = 0) -> list[str]:
    """The destinations of a curl config file's text (one option a line, read as curl's ``tool_parsecfg.c``), and
    of the files its ``config``/``-K`` lines name in turn (bounded: deeper is unreadable)."""
    words: list[str] = []
    for line in config_lines(text):
        line = line.strip()
        if not line or line[0] in "#/":
            continue
        m = re.match(r"(-{0,2}[\w.-]+)\s*(?:[=:]\s*|\s+|$)(.*)", line)
        if m is None:
            continue
        name, value = m.group(1), m.group(2).strip()
        if len(value) >= 2 and value[0] == '"' and value.endswith('"'):
            value = value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
        name = name if name.startswith("-") else ("-" if len(name) == 1 else "--") + name
        words += [name, value] if value else [name]
    return program_destinations(["curl", *words]) + [w for w in words if "://" in w] + _nested(
        ["curl", *words], depth)


def kubeconfig_destinations(text: str) -> list[str] | None:
    """A kubeconfig's destinations (YAML, as kubectl reads it): every ``server`` and ``proxy-url`` value at any depth
    (``clusters[].cluster.server``); None for a text that is no YAML (session 26)."""
    import yaml   # (loaded when a kubeconfig is read: the library's import stays light)

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    out: list[str] = []
    todo = [data]
    while todo:
        item = todo.pop()
        if isinstance(item, dict):
            out += [str(v) for k, v in item.items() if k in ("server", "proxy-url") and v]
            todo += list(item.values())
        elif isinstance(item, list):
            todo += item
    return out


def docker_context_hosts(text: str) -> list[str] | None:
    """The endpoints of a docker context's ``meta.json`` (``Endpoints.docker.Host``: ``tcp://10.0.0.1:2375``,
    ``ssh://u@h``), but a local socket's (``unix://``, ``npipe://``: the daemon ``docker ps`` reaches by default,
    not read as a destination); None for a text that is no JSON (session 26)."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    endpoints = data.get("Endpoints") if isinstance(data, dict) else None
    hosts = [e.get("Host") for e in endpoints.values() if isinstance(e, dict)] if isinstance(endpoints, dict) else []
    return [h for h in hosts if isinstance(h, str) and h and not h.lower().startswith(("unix:", "npipe:"))]


def wgetrc_destinations(text: str, depth: int = 0) -> list[str]:
    """The destinations of a wgetrc text: ``name = value`` lines read as assignments (``http_proxy = corp``), every
    URL of such a line (``#`` lines are comments), and the URLs of the file an ``input = FILE`` line names (wget
    fetches them as ``-i FILE``)."""
    lines = [ln.strip() for ln in config_lines(text) if "=" in ln and not ln.lstrip().startswith("#")]
    out = [d for line in lines for d in assigned_destinations(re.sub(r"\s*=\s*", "=", line, count=1))]
    out += [w for line in lines for w in line.split() if "://" in w]   # (not a comment's: /etc/wgetrc cites gnu.org)
    inputs = [v.strip() for line in lines for k, _, v in [line.partition("=")]
              if k.strip().lower().replace("_", "") == "input"]
    return out + _nested(["wget", *[w for f in inputs for w in ("-i", f)]], depth)


def _nested(argv: list[str], depth: int) -> list[str]:
    if len(argv) == 1:
        return []
    if depth >= _MAX_NESTED:
        return [f"(a configuration file names another one {_MAX_NESTED} deep: not read)"]
    return file_destinations(argv, depth + 1)


def _inputs(argv: Sequence[str]) -> list[tuple[str, str]]:
    """``(file, how it is read)`` of each file the client ``argv`` names by an option of :data:`_FILE_OPTIONS`."""
    prog = argv[0].rsplit("/", 1)[-1].lower() if argv else ""
    spec = _FILE_OPTIONS.get(prog)
    if spec is None:
        return []
    files = [(f, spec[2]) for f in _named_files(argv, spec[0], spec[1])]
    return files + ([(f, "wgetrc") for f in _named_files(argv, "", _WGET_RC)] if prog == "wget" else [])


def named_inputs(argv: Sequence[str]) -> list[str]:
    """The files the client ``argv`` reads destinations from by its options (``curl -K``, ``wget -i``/``--config``,
    ``aria2c -i``), as written."""
    return [f for f, _ in _inputs(argv)]


def file_destinations(argv: Sequence[str], depth: int = 0) -> list[str]:
    """The destinations the client ``argv`` (program first, as bash expanded it) reads from the files it names
    (see the module docstring); a file that cannot be read gives a word no host reader takes for a public name."""
    prog = argv[0].rsplit("/", 1)[-1].lower() if argv else ""
    out: list[str] = []
    files = _inputs(argv)
    for path, how in files:
        text = read_limited(path)
        if text is None:
            out.append(f"(the file {path!r} that {prog} reads destinations from cannot be read here)")
        elif how == "curl":
            out += curl_config(text, depth)
        elif how == "wgetrc":
            out += wgetrc_destinations(text, depth)
        else:   # one URL a line (aria2c: tab-separated mirrors; an indented line is an option of the one above)
            for line in config_lines(text):
                if line.strip() and not line.lstrip().startswith("#") and not (how == "aria2" and line[:1].isspace()):
                    out += [u for u in line.strip().split("\t") if u]
    return out
