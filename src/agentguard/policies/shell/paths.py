"""Paths as the OS reads them, for words that may be patterns.

:func:`path_forms` turns one word a command names (or one path argument of a tool) into the canonical
spellings a rule is checked against: :func:`~agentguard.core.canonical.canonical_path` (percent-decoding,
``\\`` as ``/``, ``.``/``..``/``//`` resolved lexically, ``file://`` URLs read as their path,
``/proc/self/root``, ``/proc/<pid>/root`` and ``/proc/thread-self/root`` read as ``/``), ``~user``
also as that user's home directory, and a relative path also joined to each directory a preceding ``cd``
may have moved to. Glob and unknown parts survive normalisation as placeholder characters, so
``/etc/./shad*w`` becomes the pattern ``/etc/shad*w`` and is matched against a rule's glob with
:func:`~.globs.intersects` ("a pattern that could match a denied path is treated as matching it").

A spelling is also read through the aliases an operating system installs (session 19: ``/private/etc`` on macOS,
``/var/run`` on Linux, ``Documents and Settings`` on Windows: :func:`_aliases`).

A spelling is also read the ways a tool may decode it before ``open()`` (session 18; each one more reading, never
instead of the literal one): a lenient percent-decoder's (overlong UTF-8 ``%c0%ae``, ``%uXXXX``:
:func:`_lenient`), Windows' (trailing dots and spaces, ``:$DATA``, a drive, a drive-relative ``C:x``, a UNC share
such as ``\\\\wsl$\\Ubuntu`` or a device path from its root, an 8.3 short name ``SSH~1`` as the long names it
stands for: :func:`_short`), and with ``env`` a variable expander's (``$HOME``, ``${X:-y}``, ``%APPDATA%``,
``$env:X``: each variable any text). What no reading can name (an unknown variable, an open descriptor) is a
placeholder that meets every rule it could: fail closed.
"""

from __future__ import annotations

import posixpath
import re
from typing import Iterable

from ...core.canonical import canonical_path, decoded_path
from .globs import ANY_CHAR, NOT_SLASH, Token, intersects, literal_tokens
from .words import Word, _homes, make_words

__all__ = ["PathForm", "path_forms", "pattern_paths", "word_paths"]

_SHOWN = {"*": "*", "c": "?", "^": ""}
_PUA = 0xF0000  # supplementary private use area: placeholders for non-literal tokens
_TILDE = re.compile(r"^~([A-Za-z0-9_.][A-Za-z0-9_.-]*)?(?=/|$)")

#: (display text, tokens or None when literal)
PathForm = tuple[str, "tuple[Token, ...] | None"]


def _encode(word: Word) -> tuple[str, dict[str, Token]]:
    table: dict[str, Token] = {}
    out = []
    for tok in word.tokens:
        kind, (neg, chars) = tok
        if kind == "c" and not neg and len(chars) == 1:
            out.append(next(iter(chars)))
        else:
            key = chr(_PUA + len(table))
            table[key] = tok
            out.append(key)
    return "".join(out), table


def _decode(text: str, table: dict[str, Token]) -> tuple[Token, ...]:
    return tuple(table[ch] if ch in table else ("c", (False, frozenset(ch))) for ch in text)


def _may_be(comp: str, pattern: re.Pattern[str]) -> bool | None:
    """True when a path component is a name ``pattern`` matches, None when it holds a glob placeholder (it may
    be one), False otherwise."""
    if pattern.fullmatch(comp):
        return True
    return None if any(ord(ch) >= _PUA for ch in comp) else False


_PID = re.compile(r"self|thread-self|\d+")
_TASK = re.compile(r"task")
_TID = re.compile(r"\d+")
_ROOT = re.compile(r"root")
_CWD = re.compile(r"cwd")
_FD = re.compile(r"fd")
_DEV_FD = {"fd": [], "stdin": ["0"], "stdout": ["1"], "stderr": ["2"]}
_MAX_READINGS = 16


def _magic(stack: list[str]) -> list[tuple[str, bool]]:
    """The magic links of ``/proc`` the absolute path ``stack`` may end at: ("root", "dir" or "any", exactly);
    "dir" is the working directory (``cwd``), "any" an open descriptor ``fd/<n>`` (any file or directory)."""
    fd = len(stack) in (4, 6) and _may_be(stack[-2], _FD)
    if len(stack) not in (3, 4, 5, 6) or stack[0] != "proc" or (len(stack) in (4, 6) and fd is False):
        return []
    head = stack[1:-2] if len(stack) in (4, 6) else stack[1:-1]
    parts = [_may_be(head[0], _PID)] + ([_may_be(head[1], _TASK), _may_be(head[2], _TID)] if len(head) == 3 else [])
    if len(head) not in (1, 3) or False in parts:
        return []
    if len(stack) in (4, 6):  # an open descriptor: any file or directory (standard streams are the tool's own)
        last = _may_be(stack[-1], _TID)
        return [] if last is False or stack[-1] in ("0", "1", "2") else [
            ("any", last is True and fd is True and all(parts))]
    out = []
    for kind, pattern in (("root", _ROOT), ("dir", _CWD)):
        last = _may_be(stack[-1], pattern)
        if last is not False:
            out.append((kind, last is True and all(parts)))
    return out


def _resolved(path: str) -> list[str]:
    """``path`` resolved component by component as the kernel walks it, through the magic links of ``/proc``:
    ``/proc/<pid>/root`` (also ``self``, ``thread-self``, ``task/<tid>``) is ``/``, so a later ``..`` stays at
    the root and a nested one restarts there (``/proc/self/root/../etc/shadow``,
    ``/proc/self/root/proc/1/root/etc/shadow`` are ``/etc/shadow``); ``/proc/<pid>/cwd`` is the working
    directory (what follows is relative, read as every relative path is; a ``..`` climbs out of it); an open
    descriptor ``/proc/<pid>/fd/<n>`` other than the standard streams is any file or directory (read as
    ``../`` + what follows: any absolute path ending so); ``/dev/fd`` is ``/proc/self/fd`` and ``/dev/stdin``
    its ``0``. A component that is a glob (``/proc/*/root``) may be a magic link or not: both
    readings are kept (at most :data:`_MAX_READINGS`)."""
    out: list[str] = []
    comps = path.split("/")
    todo: list[tuple[bool, list[str], int, int]] = [(path.startswith("/"), [], 0, 0)]
    while todo and len(out) < _MAX_READINGS:
        absolute, stack, up, i = todo.pop()
        while i < len(comps):
            comp = comps[i]
            i += 1
            if comp in ("", "."):
                continue
            if comp == "..":
                if stack:
                    stack.pop()
                elif not absolute:
                    up += 1
                continue
            stack.append(comp)
            if absolute and len(stack) == 2 and stack[0] == "dev" and comp in _DEV_FD:
                stack = ["proc", "self", "fd"] + _DEV_FD[comp]
            links = _magic(stack) if absolute and len(stack) <= 6 else []
            for kind, exact in links:
                if exact:  # the link is followed: from "/", the working directory or any directory ("../")
                    absolute, stack, up = kind == "root", [], int(kind == "any")
                    break
                if len(todo) < _MAX_READINGS:
                    todo.append((kind == "root", [], int(kind == "any"), i))
        text = "/".join([".."] * up + stack)
        out.append(("/" + text) if absolute else (text or "."))
    return list(dict.fromkeys(out))


_DRIVE = re.compile(r"^(?:/[^/]/|/)?[A-Za-z][:|](?=/|$)|^/[^/]/UNC/[^/]+/[^/]+(?=/|$)|^/[^/?.][^/]*/[A-Za-z]\$(?=/|$)",
                    re.IGNORECASE)  # "\\?\" written as a shell glob "?" is a placeholder: any one character
#: what Windows drops from a path component: trailing dots and spaces (``.ssh.`` is ``.ssh``), a stream suffix
#: (``id_rsa::$DATA``, ``id_rsa:$DATA`` are ``id_rsa``)
_WIN_TAIL = re.compile(r"(?::[^/]*)?[. ]*(?=/|$)")


#: an 8.3 short name Windows gives a long or dotted name (``.ssh`` -> ``SSH~1``, ``.git`` -> ``GIT~1``,
#: ``credentials`` -> ``CREDEN~1``, ``.env.local`` -> ``ENV~1.LOC``): up to six characters, ``~``, a number and
#: up to three characters of the extension
_SHORT = re.compile(r"([^~/.\s]{1,6})~[0-9]{1,6}(?:\.([^./\s]{1,3}))?", re.IGNORECASE)
#: placeholders (supplementary private use area, above the word placeholders of :func:`_encode`) for what a
#: reading cannot spell: dots and spaces (dropped from a long name in its 8.3 name), one character but ``/`` (an
#: 8.3 name's ``_`` for a character it cannot hold), any characters but ``/``, any characters (an unset variable),
#: the rest of an extension (any characters but ``/`` and ``.``)
_DOTS = chr(0xFFFFA)
_ONE = chr(0xFFFFB)
_NAME_ANY = chr(0xFFFFC)
_UNKNOWN = chr(0xFFFFD)
_EXT_ANY = chr(0xFFFF9)
_OS_TABLE: dict[str, Token] = {_EXT_ANY: ("*", (True, frozenset("/."))), _DOTS: ("*", (False, frozenset(". "))),
                               _ONE: ("c", NOT_SLASH), _NAME_ANY: ("*", NOT_SLASH), _UNKNOWN: ("*", ANY_CHAR)}


def _short(comp: str) -> str:
    """An 8.3 short name as the long names it may stand for (Windows makes one from the name without its leading
    dots, spaces and inner dots, the first six characters of the part before the last dot, ``_`` for a character
    8.3 cannot hold, and three of the extension: ``.bash_history`` is ``BASH_H~1``, ``.ssh`` is ``SSH~1``)."""
    m = _SHORT.fullmatch(comp)
    if not m:
        return comp
    base = "".join(_DOTS + (_ONE if ch == "_" else ch) for ch in m.group(1))
    base += _NAME_ANY if len(m.group(1)) == 6 else _DOTS  # six characters: the long base name may go on
    ext = m.group(2) or ""
    tail = "".join(_DOTS + (_ONE if ch == "_" else ch) for ch in ext) + (_EXT_ANY if len(ext) == 3 else _DOTS)
    return base + ("." + tail if ext else "")


def _windows(path: str) -> str:
    """``path`` with each component as Windows opens it (trailing dots, spaces and a stream dropped; an 8.3 short
    name read as the long names it may stand for)."""
    return "/".join(c if c in ("", ".", "..") else _short(_WIN_TAIL.sub("", c, count=1) or c)
                    for c in path.split("/"))


def _lenient(text: str) -> str:
    """``text`` percent-decoded as lenient decoders do (IIS, old Java, hand-written ones): ``%uXXXX`` as the
    character, and UTF-8 sequences whatever their length, overlong ones included (``%c0%ae`` is ``.``,
    ``%c0%af`` and ``%e0%80%af`` are ``/``, ``%c1%1c`` is ``\\``), until stable (at most 8 rounds)."""
    for _ in range(8):
        out: list[str] = []
        i = 0
        while i < len(text):
            m = _PCT_U.match(text, i)
            if m:
                out.append(chr(int(m.group(1), 16)))
                i = m.end()
                continue
            m = _PCT_RUN.match(text, i)
            if not m:
                out.append(text[i])
                i += 1
                continue
            data = bytes.fromhex(m.group(0).replace("%", ""))
            out.append(_lenient_utf8(data))
            i = m.end()
        decoded = "".join(out)
        if decoded == text:
            break
        text = decoded
    return text


_PCT_U = re.compile(r"%u([0-9a-fA-F]{4})")
_PCT_RUN = re.compile(r"(?:%[0-9a-fA-F]{2})+")


def _lenient_utf8(data: bytes) -> str:
    out: list[str] = []
    i = 0
    while i < len(data):
        b = data[i]
        n = 1 if 0xC0 <= b < 0xE0 else 2 if 0xE0 <= b < 0xF0 else 3 if 0xF0 <= b < 0xF8 else 0
        if n and len(data) - i > n:  # a lead byte and its continuation bytes, checked no further
            code = b & (0x3F >> n)
            for c in data[i + 1:i + 1 + n]:
                code = (code << 6) | (c & 0x3F)
            out.append(chr(code) if code < 0x110000 else "\ufffd")
            i += n + 1
        else:
            out.append(chr(b) if b < 0x80 else "\ufffd")
            i += 1
    return "".join(out)


def _unc(path: str) -> list[str]:
    """The paths a Windows UNC or device path (decoded: ``\\\\`` as ``//``) opens below its share or volume:
    ``//host/share/rest`` (``\\\\wsl$\\Ubuntu\\etc\\shadow`` is the distribution's ``/etc/shadow``; a share may also be
    a home) as ``/rest`` and ``~/rest``; ``//?/`` and ``//./`` device paths (``GLOBALROOT/Device/<volume>``,
    ``Volume{GUID}``, ``UNC/host/share``, a drive) from their volume's root."""
    if not path.startswith("//") or path.startswith("///"):
        return []
    comps = path[2:].split("/")
    out = ["/" + "/".join(comps[2:]), "~/" + "/".join(comps[2:])] if len(comps) > 2 else []
    if len(comps[0]) == 1 and len(comps) > 1:  # "?", "." or a placeholder: a device path
        rest = comps[1:]
        skip = 3 if rest[0].casefold() in ("globalroot", "unc") else 1
        out.append("/" + "/".join(rest[skip:]))
    return out


def _os_readings(text: str) -> list[str]:
    """The other paths one spelling may open: a ``file:`` URL's path (whatever its host, also read with the host
    as the first directory, as a naive ``removeprefix("file://")`` does, and a relative ``file:x`` as ``x``), a
    Windows drive or UNC path (``C:\\Users\\bob``, ``\\\\?\\C:\\x``, ``\\\\host\\C$\\x``,
    ``\\\\?\\UNC\\host\\share\\x``) from its root, its components as Windows opens them (trailing dots and
    spaces, a ``:$DATA`` stream dropped),
    each resolved through the magic links of ``/proc`` (:func:`_resolved`)."""
    dec = decoded_path(text)
    readings = [dec]
    if "%" in text:  # a lenient decoder's reading (overlong UTF-8, %uXXXX)
        readings.append(decoded_path(_lenient(text)))
    for url in [r for r in readings if r[:5].casefold() == "file:"]:
        for rest in dict.fromkeys([url[5:], re.split(r"[?#]", url[5:], maxsplit=1)[0]]):  # urllib drops ?q and #f
            readings.append("/" + rest.lstrip("/") if rest.startswith("/") else rest)
            if rest.startswith("//"):
                host, _, path = rest[2:].partition("/")
                readings.append("/" + path)
                if host.casefold() not in ("", "localhost") or rest.startswith("////"):  # Windows: a UNC path
                    readings.append("//" + rest.lstrip("/"))
    for r in list(readings):
        d = _DRIVE.match(r if not r.startswith("//") else r[1:])
        if d:
            readings.append("/" + (r if not r.startswith("//") else r[1:])[d.end():].lstrip("/"))
        readings += _unc(r)
    readings += [_windows(r) for r in readings]  # as Windows opens each component (the tool's OS is unknown)
    readings += [a for r in readings for a in _aliases(r)]
    return [x for r in dict.fromkeys(readings) for x in _resolved(r)]


#: directories an operating system installs as another's alias (a symbolic link, an APFS firmlink, an NTFS
#: junction), each way: macOS' ``/etc``, ``/var``, ``/tmp`` are links into ``/private`` and its data volume is
#: firmlinked at ``/System/Volumes/Data``; Linux' ``/var/run`` and ``/var/lock`` are links into ``/run`` and a merged
#: ``/usr`` makes ``/bin``, ``/sbin``, ``/lib`` links into it; Windows' ``Documents and Settings`` is a junction to
#: ``Users``
_ALIASES = (("/private/etc", "/etc"), ("/private/var", "/var"), ("/private/tmp", "/tmp"), ("/var/run", "/run"),
            ("/var/lock", "/run/lock"), ("/usr/bin", "/bin"), ("/usr/sbin", "/sbin"), ("/usr/lib", "/lib"),
            ("/usr/lib64", "/lib64"), ("/Documents and Settings", "/Users"), ("/System/Volumes/Data", ""))


def _aliases(path: str) -> list[str]:
    """``path`` through each system alias of :data:`_ALIASES` its head is (either way; case-insensitive, as macOS and
    Windows volumes are): ``/private/etc/sudoers`` is ``/etc/sudoers``, ``/System/Volumes/Data/Users/u`` is
    ``/Users/u``."""
    out = []
    low = path.casefold()
    for a, b in _ALIASES:
        for src, dst in ((a, b), (b, a)):
            if src and (low == src.casefold() or low.startswith(src.casefold() + "/")):
                out.append((dst + path[len(src):]) or "/")
    return out


def _variants(path: str) -> list[str]:
    out = [path]
    m = _TILDE.match(path)
    if m:
        for home in _homes(m.group(1) or ""):
            out.append(home + path[m.end():])
    return out


#: a variable a tool may expand in a path (``os.path.expandvars``, a shell, PowerShell): ``$NAME``, ``${...}``,
#: ``%NAME%``, ``$env:NAME``, and ``$(...)`` and a backquoted command a shell replaces with its output
_VARIABLE = re.compile(r"\$env:[A-Za-z_][A-Za-z0-9_]*|\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|%[A-Za-z_][A-Za-z0-9_()]*%"
                       r"|\$\([^)]*\)?|`[^`]*`?", re.IGNORECASE)  # and a command's output, to a tool using a shell


def path_forms(text: str, cwds: Iterable[str] = ("",), table: dict[str, Token] | None = None,
               env: bool = False) -> list[PathForm]:
    """The canonical spellings of one path (see the module docstring); placeholders decoded via ``table``. With
    ``env``, also the path a tool that expands variables opens (``$HOME/.aws/x``, ``${XDG_CONFIG_HOME}/gh``,
    ``%USERPROFILE%\\.ssh``): each variable is unknown (any text, ``/`` included; open() itself expands none), and
    a drive-relative ``C:x`` is also ``x``."""
    table = {**_OS_TABLE, **(table or {})}
    expanded = _VARIABLE.sub(_UNKNOWN, text) if env and ("$" in text or "%" in text or "`" in text) else text
    extra = path_forms(expanded, cwds, table) if expanded != text else []
    if env and re.match(r"[A-Za-z]:[^/\\]", text):  # "C:etc\\shadow": below the current directory of drive C
        extra += path_forms(text[2:], cwds, table)  # (a file tool's value only: git's REV:PATH is not a drive)
    base = canonical_path(text)
    if not base:
        return extra
    forms: list[str] = []
    raw = posixpath.normpath(text) if text.strip() else ""
    if raw and raw != base:  # the spelling the OS opens as it is (a relative "file:/x", a "%2e%2e" name)
        forms += [raw] if raw.startswith("/") else [posixpath.normpath(posixpath.join(c, raw)) if c else raw
                                                   for c in cwds]
    for v in [w for r in dict.fromkeys([base] + _os_readings(text)) for w in _variants(r)]:
        v = canonical_path(v)
        if v.startswith("/"):
            forms.append(v)
            continue
        if v.startswith("~"):  # also a relative directory named "~" (a quoted tilde is not expanded)
            forms.append(v)
        for cwd in cwds:
            forms.append(canonical_path(posixpath.join(cwd, v)) if cwd else v)
    out: list[PathForm] = []
    for f in list(dict.fromkeys(forms)):
        if f == ".." or f.startswith("../"):  # climbs out of an unknown directory: any absolute path ending so
            rest = re.sub(r"^(\.\./)*\.\.(/|$)", "", f)
            out.append(("*/" + rest if rest else "*", (("*", ANY_CHAR),) + tuple(  # "..": any path, no "/" added
                table[ch] if ch in table else ("c", (False, frozenset(ch))) for ch in ("/" + rest if rest else ""))))
    for f in dict.fromkeys(forms):
        if any(ch in table for ch in f):
            shown = "".join(_SHOWN[table[ch][0]] if ch in table else ch for ch in f)
            out.append((shown, _decode(f, table)))
        else:
            out.append((f, None))
    return out + extra


def word_paths(word: Word, cwds: Iterable[str] = ("",)) -> list[PathForm]:
    """Every path spelling one argument may name: the word, its ``=value`` part, an option's attached path."""
    if word.split:
        return [("*", (("*", ANY_CHAR),))]
    text, table = _encode(word)
    parts = [text]
    if "=" in text:
        parts.append(text.split("=", 1)[1])
    if text.startswith("-"):
        m = re.search(r"/|(?<![^-=])~", text)  # a "~" mid-value is no tilde (--source=HEAD~1 names no ~1)
        if m:
            parts.append(text[m.start():])
        if not text.startswith("--") and re.search(r"[./~]", text, re.S):
            # -o.env, -o../x: a value attached after any option letter of a cluster (one that can leave the
            # directory or name a dot file: a bare-letter suffix of "-la" names no path a rule could deny)
            parts += [text[k:] for k in range(2, min(len(text), 8)) if text[k:] not in parts
                      and re.search(r"[./~]", text[k:])]
    for p in list(parts):  # ".*" expands to ".." in dash (and in bash without globskipdots): follow it
        comps = p.split("/")
        for k, comp in enumerate(comps):
            if any(ch in table for ch in comp) and intersects(_decode(comp, table), literal_tokens("..")):
                parts.append("/".join(comps[:k] + [".."] + comps[k + 1:]))
    out: list[PathForm] = []
    for p in parts:
        out += path_forms(p, cwds, table)
    return out


_GLOB_CHARS = frozenset("*?[{~")
_STAR: Token = ("*", NOT_SLASH)
_SEPARATORS: tuple[Token, ...] = (("c", (False, frozenset("/"))), ("c", (False, frozenset("\\"))))


def pattern_paths(text: str, cwds: Iterable[str] = ("",), env: bool = False) -> list[PathForm]:
    """The spellings of a tool's path argument read as a pattern, as well as literally.

    A tool may hand its path argument to ``glob.glob``, ``pathlib.Path.glob`` or a shell, which expand
    ``*``, ``?``, ``[...]``, ``{a,b}`` and ``~``; the guard cannot see which, so the value is read both
    ways: :func:`path_forms` (the file ``open`` names) and, when it holds a pattern character, the words
    an unquoted shell word expands to (:func:`~.words.make_words`; a ``**`` component after the first also
    crosses ``/``, as a recursive glob does, see :func:`_recursive`; a glob also matches a leading ``.``, as
    ``pathlib``'s does), and in the syntax glob libraries add (:func:`_library_glob`: ``@(x)``, ``!(x)``,
    ``sh\\adow``, ``[[=a=]]``). Raises :class:`~.words.TooManyWords` past the expansion bounds (the caller refuses
    the call unread). ``env``: variables also read as a tool that expands them does (:func:`path_forms`).
    """
    out = path_forms(text, cwds, env=env)
    other = _library_glob(text)
    if other != text:  # what a glob library's own syntax expands (extglob, escapes, [[=a=]]): one more reading
        out += pattern_paths(other, cwds, env=env)
    if _GLOB_CHARS.isdisjoint(text):
        return out
    for word in make_words([("u", ch) for ch in text]):
        # pathlib's glob and glob(include_hidden=True) match a leading "." too
        tokens = [tok for tok in word.tokens if tok[0] != "^"]
        out += word_paths(Word(word.text, tuple(_recursive(tokens)), word.literal, word.unknown, word.split), cwds)
    return out


_EXTGLOB = re.compile(r"[?*+@!]\((?:[^()/]|\([^()/]*\))*\)")
_CLASS_NAME = re.compile(r"\[([.=])([^\]/])\1\]")
_ESCAPE = re.compile(r"\\([^\\/])")


def _library_glob(text: str) -> str:
    """``text`` as a superset pattern of what glob libraries with a syntax of their own match (session 19): an
    extended glob group (bash ``extglob``, minimatch and picomatch by default, wcmatch's ``EXTGLOB``:
    ``@(shadow)``, ``!(passwd)``, ``+(x|y)``, ``?(x)``) as ``*`` (any name part: ``!(passwd)`` matches ``shadow``), a
    collating symbol or equivalence class (``[[.a.]]``, ``[[=a=]]``) as its character, and a backslash escape
    (``sh\adow`` to minimatch, bash and ``fnmatch``-style matchers that escape) as the character escaped; at most
    8 rounds (nested groups)."""
    for _ in range(8):
        new = _ESCAPE.sub(r"\1", _CLASS_NAME.sub(r"\2", _EXTGLOB.sub("*", text)))
        if new == text:
            break
        text = new
    return text


def _recursive(tokens: list[Token]) -> list[Token]:
    """``**`` as a whole component after a ``/`` or ``\\`` (``/**/x``, ``a/**``) is a recursive glob's any-depth
    component (Python's ``glob(recursive=True)``, ``pathlib``, bash's globstar); inside a component (``a**b``,
    ``**bold**``) it is one ``*``; a relative path's first component stays one component (below an unknown
    directory, as every relative path is read, see rules.py)."""
    out: list[Token] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == _STAR and i + 1 < len(tokens) and tokens[i + 1] == _STAR and out and out[-1] in _SEPARATORS:
            j = i
            while j < len(tokens) and tokens[j] == _STAR:
                j += 1
            if j == len(tokens) or tokens[j] in _SEPARATORS:
                out.append(("*", ANY_CHAR))
                i = j
                continue
        out.append(tok)
        i += 1
    return out
