"""The hosts an ssh configuration makes a destination reach: ``Host`` aliases, ``HostName``, ``ProxyJump`` (session 23).

``ssh db.example.com`` with ``~/.ssh/config`` holding ``Host db.example.com`` / ``HostName 10.0.0.7`` connects to
10.0.0.7 (``ssh -G db.example.com`` prints ``hostname 10.0.0.7``); so do ``scp x db.example.com:``, ``git fetch
db.example.com:repo`` and ``rsync x db.example.com:`` (each runs ssh), and ``ssh -F cfg db.example.com`` with a file
the agent wrote. The command's words do not show it: :func:`config_hosts` reads the configuration ssh reads for that
destination and returns the hosts it can make ssh connect to, to be judged like the destination itself.

Read as OpenSSH's ``readconf.c`` reads it, widened where a static reading cannot decide (widening only refuses
more): keywords case-insensitive, ``keyword value`` or ``keyword=value``; a ``Host`` block applies when one of its
patterns (``*``, ``?``, negation ``!``) matches the destination and no negated one does; a ``Match`` block applies
unless a ``host``/``originalhost`` criterion rules it out (the others, ``exec`` included, are read as holding: running
them is what a guard must not do); ``Include``
reads its files (globs, relative to ``~/.ssh`` for the user's file, ``/etc/ssh`` for the system's) where it stands.
Every ``HostName`` of an applying block counts (ssh takes the first; all are returned), with ``%h`` as the
destination, and every ``ProxyJump`` host, itself read through the configuration again (bounded), and the destination
under each ``CanonicalDomains`` domain (``github.com.corp.internal``: ssh tries it first when canonicalizing; ``ssh
-G`` does not resolve, so it is no oracle for this one). ``ProxyCommand`` texts are returned for the shell reader.

The files: ``-F FILE`` (``none``: no file) or else ``~/.ssh/config`` and ``/etc/ssh/ssh_config``, as the guard's
process sees them (a guard that runs elsewhere than the tool reads its own: a deployment whose agent runs ssh on
another machine should allow no ssh, or deny aliases with ``allow``). A missing default file is none (ssh skips it);
a file that exists but cannot be read whole (permissions, over 1 MiB, not UTF-8, Include deeper than 16), or a ``-F``
file not found from the guard's directory (a relative one names the tool's), makes the reading fail (None): the guard
refuses, fail closed.

Why no library: ``paramiko.SSHConfig`` is the maintained Python parser, but it is not a dependency here and it does not
read ``Include``; OpenSSH's own ``ssh -G`` is the oracle the tests use, not something a guard may run (``Match exec``
runs commands).
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re
from pathlib import Path

from .network_files import config_lines, read_regular

__all__ = ["config_hosts"]

_MAX_BYTES = 1 << 20
_MAX_INCLUDE = 16
_MAX_JUMPS = 4
_WORD = re.compile(r'"([^"]*)"|(\S+)')


class _Unreadable(Exception):
    pass


def _words(line: str) -> tuple[str, list[str]] | None:
    line = line.strip()
    if not line or line.startswith("#"):
        return None
    m = re.match(r"([^\s=]+)\s*(?:=\s*|\s+|$)(.*)", line)
    if m is None:
        return None
    return m.group(1).lower(), [a or b for a, b in _WORD.findall(m.group(2))]


def _host_applies(patterns: list[str], host: str) -> bool:
    host = host.lower()
    hit = False
    for p in patterns:
        for one in p.split(","):
            neg = one.startswith("!")
            if fnmatch.fnmatchcase(host, one.lstrip("!").lower()):
                if neg:
                    return False
                hit = True
    return hit


def _match_may_apply(args: list[str], host: str) -> bool:
    """Whether a ``Match`` block may apply: its criteria all hold, and only ``host``/``originalhost`` (patterns, ``!``
    negating) are decided here; ``exec``, ``user``, ``localnetwork``... are read as holding."""
    k = 0
    while k < len(args):
        word = args[k].lower()
        k += 1
        if word.lstrip("!") in ("all", "canonical", "final"):
            continue
        value = args[k] if k < len(args) else ""
        k += 1
        if word.lstrip("!") in ("host", "originalhost"):
            hit = _host_applies([value], host)
            if hit == word.startswith("!"):
                return False
    return True


def _read(path: str, required: bool) -> str:
    try:
        data = read_regular(path, _MAX_BYTES)   # (a FIFO or a device is refused, never waited on)
    except FileNotFoundError:
        if required:   # "-F cfg": ssh refuses to start without it; here it may be a file of the tool's own directory
            raise _Unreadable(f"{path}: no such file here") from None
        return ""
    except OSError as e:
        raise _Unreadable(f"{path}: {e.strerror}") from e
    if len(data) > _MAX_BYTES:
        raise _Unreadable(f"{path}: over {_MAX_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _Unreadable(f"{path}: not UTF-8") from e


def _walk(path: str, base: str, host: str, applies: bool, depth: int, found: dict[str, list[str]],
          required: bool = False, certain: bool = True) -> None:
    """Read one file for ``host``: the values of the blocks that may apply go into ``found`` (``found["certain"]``
    when a ``HostName`` stands where it certainly applies: the top, a matching ``Host``, ``Match all``)."""
    if depth > _MAX_INCLUDE:
        raise _Unreadable(f"{path}: Include nested deeper than {_MAX_INCLUDE}")
    active, sure = applies, certain
    for line in config_lines(_read(path, required)):
        parsed = _words(line)
        if parsed is None:
            continue
        key, args = parsed
        if key == "host":
            active = sure = applies and _host_applies(args, host)
            sure = sure and certain
        elif key == "match":
            active = applies and _match_may_apply(args, host)
            sure = active and certain and [a.lower() for a in args] == ["all"]
        elif key == "include" and active:
            for arg in args:
                pattern = os.path.expanduser(arg)
                pattern = pattern if os.path.isabs(pattern) else os.path.join(base, pattern)
                for inc in sorted(glob.glob(pattern)) or []:
                    _walk(inc, base, host, True, depth + 1, found, certain=sure)
        elif active and key == "canonicaldomains":
            found.setdefault(key, []).extend(args)
        elif active and key in ("hostname", "proxyjump", "proxycommand"):
            value = " ".join(args) if key == "proxycommand" else (args[0] if args else "")
            found.setdefault(key, []).append(value)
            if key == "hostname" and sure and value:
                found["certain"] = [value]


def _jump_host(jump: str) -> str:
    jump = re.sub(r"^ssh://", "", jump.strip(), flags=re.I).rsplit("@", 1)[-1]
    if jump.startswith("["):
        return jump[1:jump.find("]")] if "]" in jump else jump[1:]
    return jump.split(":")[0] if jump.count(":") == 1 else jump


def config_hosts(host: str, config: str | None = None, cwd: str = "") -> tuple[list[str], list[str]] | None:
    """``(hosts, proxy_commands)`` the ssh configuration makes a connection to ``host`` reach (see the module
    docstring): the ``HostName`` values (``%h`` as ``host``) and ``ProxyJump`` hosts (read again, to a depth of
    :data:`_MAX_JUMPS`) of every block that may apply, and the ``ProxyCommand`` texts; ``config``: the ``-F`` file
    (``none``: none). ``host`` itself is among the hosts unless a ``HostName`` certainly replaces it (``ssh
    myalias`` with ``Host myalias`` / ``HostName github.com`` never connects to ``myalias``). None when a file that
    applies exists but cannot be read whole."""
    ssh_dir = str(Path(os.path.expanduser("~")) / ".ssh")
    if config is not None:
        files = [] if config.lower() == "none" else [os.path.join(cwd, os.path.expanduser(config))]
        bases = [ssh_dir]
    else:
        files, bases = [os.path.join(ssh_dir, "config"), "/etc/ssh/ssh_config"], [ssh_dir, "/etc/ssh"]
    hosts: list[str] = []
    commands: list[str] = []
    todo, seen = [(host, 0)], {host.lower()}
    replaced = False
    try:
        while todo:
            name, depth = todo.pop()
            found: dict[str, list[str]] = {}
            for path, base in zip(files, bases):
                _walk(path, base, name, True, 0, found, required=config is not None)
            replaced = replaced or (depth == 0 and "certain" in found)
            for value in found.get("hostname", []):
                real = value.replace("%h", name).replace("%%", "%")
                hosts.append(real)
                if depth < _MAX_JUMPS and real.lower() not in seen:   # CanonicalizeHostname reads the file again
                    seen.add(real.lower())
                    todo.append((real, depth + 1))
            for value in found.get("proxyjump", []):
                for jump in value.split(","):
                    j = _jump_host(jump)
                    if j and j.lower() != "none":
                        hosts.append(j)
                        if depth < _MAX_JUMPS and j.lower() not in seen:
                            seen.add(j.lower())
                            todo.append((j, depth + 1))
            commands += [c for c in found.get("proxycommand", []) if c.lower() != "none"]
            # CanonicalizeHostname tries the name under each CanonicalDomains domain first (it resolves them: read
            # whatever CanonicalizeHostname and CanonicalizeMaxDots say)
            hosts += [f"{name.rstrip('.')}.{d.strip('.')}" for d in found.get("canonicaldomains", []) if d.strip(".")]
    except _Unreadable:
        return None
    return list(dict.fromkeys(hosts if replaced else [host, *hosts])), list(dict.fromkeys(commands))
