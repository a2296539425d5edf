"""The hosts a command's remote-shell programs connect to, read with each program's own grammar (session 22).

``git fetch 2130706433:repo`` runs ``ssh 2130706433 git-upload-pack 'repo'``, and ssh hands the name to
``getaddrinfo``, which reads a one-part number (like ``inet_aton``) as an IPv4 address: 127.0.0.1. A text reading
cannot tell that word from ``git show 1234567:x.py`` (a commit of digits and a path), ``main:main`` (a refspec) or
``12:30``; the program's grammar can. :func:`remote_hosts` takes one command as bash expanded its words (the shell
reader's argv, so quotes, ``$'\\x30'`` and ``{0,1}`` are already resolved) and returns the host of every remote the
program reaches, as written (``networks.internal`` reads it with ``getaddrinfo``'s numeric reading):

- **git** (``connect.c``: ``url_is_local_not_ssh``, ``parse_connect_url``, ``host_end``): the repository operand of
  ``fetch``, ``pull``, ``push``, ``ls-remote``, ``clone``, ``archive --remote``, ``request-pull``, ``remote add`` /
  ``set-url`` and ``submodule add`` (every operand after ``fetch --multiple``), and the value of ``-c
  remote.NAME.url=`` / ``pushurl`` and the base of ``-c url.BASE.insteadOf=``. A word is an ssh remote when it is
  ``ssh://``, ``git+ssh://`` or ``ssh+git://`` or holds a ``:`` before any ``/`` (``host:path``, ``user@host:path``,
  ``[::1]:path``, ``user@[::1]:path``, ``[user@host:port]:path``); the host is what remains without the user (up to
  the last ``@``), the brackets and the port. The operand is found by the options: one this module knows takes no
  value or takes the next word; after an option it does not know (an abbreviation, a new option) the next word may
  be its value, so both it and the following operand are read as the repository (fail closed: a refspec after an
  unknown option may be read as a host, which refuses, never allows);
- **ssh**, **slogin** (OpenSSH's ``getopt`` string): the destination (``[user@]host`` or ``ssh://[user@]host[:port]``),
  the hosts of ``-J`` and ``-o ProxyJump=``/``-o HostName=`` (a ``Host`` alias's real address);
- **scp**, **sftp** (OpenSSH's ``colon()``) and **rsync**: every operand that names a remote (``host:path``,
  ``host::module``, ``scp://``, ``sftp://``, ``rsync://`` URLs), and ``-J`` jump hosts.

Guaranteed: every host these programs connect to for the words given, and (session 23) those the ssh configuration
maps them to (:mod:`.network_sshconfig`: ``HostName``, ``ProxyJump``, ``ProxyCommand`` of ``~/.ssh/config``, its
``Include`` files or ``-F``); a remote helper's address (``git fetch xyz::addr`` runs ``git-remote-xyz``) is its
URL's host for git's URL helpers and unreadable (refused) for any other (session 25). A destination or repository with a part the shell computes
(``ssh $H``, ``git fetch $R``: the shell reader's ``*``) is returned as written, which no host reader takes for a
public name (refused, fail closed); an scp/rsync operand is a remote only when it shows its ``:``.

Written by hand: no Python package parses git's or OpenSSH's remote syntax; the readings follow the C sources named
above, and a differential test (``tests/policies/test_network_remotes.py``) runs real git with ``GIT_SSH_COMMAND`` set
to a stub that prints what ssh was given.
"""

from __future__ import annotations

import re
import shlex
from typing import Sequence
from urllib.parse import urlsplit

from .network_sockets import socket_destination
from .network_sshconfig import config_hosts
from .shell.gitargs import GLOBAL_VALUES as GIT_GLOBAL_VALUES

__all__ = ["REMOTE_PROGRAMS", "assigned_commands", "assigned_config", "git_remote_host", "nested_commands",
           "remote_forwards", "remote_hosts", "scp_remote_host"]

REMOTE_PROGRAMS = frozenset({"git", "ssh", "slogin", "scp", "sftp", "rsync"})
_SSH_SCHEMES = ("ssh://", "git+ssh://", "ssh+git://")
#: OpenSSH's getopt strings: a letter followed by ":" takes a value
_GETOPT = {"ssh": "1246ab:c:e:fgi:kl:m:no:p:qstvxAB:CD:E:F:GI:J:KL:MNO:P:Q:R:S:TVw:W:XYy",
           "scp": "12346ABCTdfOpqRrstvD:F:J:P:S:X:c:i:l:o:",
           "sftp": "1246AafhNpqrvCc:D:i:l:o:s:S:b:B:F:J:P:R:X:"}
_GETOPT["slogin"] = _GETOPT["ssh"]
#: per subcommand: (short options taking the next word, long options taking it, options taking none)
_LONG_VALUES = frozenset({"--depth", "--deepen", "--shallow-since", "--shallow-exclude", "--upload-pack",
                          "--receive-pack", "--exec", "--server-option", "--negotiation-tip",
                          "--recurse-submodules-default", "--jobs", "--refmap", "--filter", "--origin", "--branch",
                          "--reference", "--reference-if-able", "--separate-git-dir", "--config", "--template",
                          "--push-option", "--repo", "--strategy", "--strategy-option", "--sort", "--name", "--track",
                          "--master", "--bundle-uri", "--remote", "--format", "--prefix", "--output"})
_LONG_FLAGS = frozenset({
    "--all", "--prune", "--prune-tags", "--tags", "--no-tags", "--force", "--verbose", "--quiet", "--dry-run",
    "--progress", "--no-progress", "--multiple", "--atomic", "--follow-tags", "--set-upstream", "--mirror", "--bare",
    "--recursive", "--recurse-submodules", "--no-recurse-submodules", "--rebase", "--no-rebase", "--ff-only", "--ff",
    "--no-ff", "--autostash", "--no-autostash", "--unshallow", "--update-shallow", "--append", "--keep",
    "--update-head-ok", "--ipv4", "--ipv6", "--no-write-fetch-head", "--write-fetch-head", "--porcelain", "--delete",
    "--no-verify", "--verify", "--thin", "--no-thin", "--heads", "--refs", "--get-url", "--symref", "--exit-code",
    "--single-branch", "--no-single-branch", "--shallow-submodules", "--no-checkout", "--local", "--no-local",
    "--shared", "--no-hardlinks", "--sparse", "--force-with-lease", "--commit", "--no-commit", "--squash",
    "--no-squash", "--stat", "--no-stat", "--signoff", "--edit", "--no-edit", "--show-forced-updates", "--push",
    "--add", "--no-fetch", "--fetch", "--also-filter-submodules", "--remote-submodules", "--no-remote-submodules",
    "--no-reject-shallow", "--reject-shallow", "--write-commit-graph", "--no-write-commit-graph", "--auto-gc",
    "--no-auto-gc", "--set-upstream", "--prefetch"})
_SHORT = {  # subcommand: (short options that take the next word, short options that take none)
    "fetch": ("oj", "aAfkmnpPqtuv46"), "pull": ("ojsX", "aAfkmnpPqtuvre46"), "push": ("o", "ufnqvd46"),
    "clone": ("objuc", "lsqvn46"), "ls-remote": ("o", "htq"), "remote": ("tm", "fv"), "submodule": ("b", "fq"),
    "archive": ("o", "lv0123456789"), "request-pull": ("", "p")}
#: the repository's place among a subcommand's operands (``remote add NAME URL``: 1, after the action word)
_REPO_AT = {"fetch": 0, "pull": 0, "push": 0, "ls-remote": 0, "clone": 0, "archive": -1, "request-pull": 1}


def _split_user(host: str) -> str:
    return host.rsplit("@", 1)[-1]


def _url_host(word: str) -> str | None:
    try:
        parts = urlsplit(word)
        host = parts.hostname
    except ValueError:
        return word   # no reading: handed on whole, which no host reader takes as a public name
    if host is None:
        netloc = parts.netloc.rsplit("@", 1)[-1]
        return netloc or None
    return host


def git_remote_host(word: str) -> str | None:
    """The host git's ssh transport connects to for the repository ``word``, or None when git reads it as a local
    path or an http(s)/git/file URL (read elsewhere as URLs). A remote helper's address (``NAME::address``: git runs
    ``git-remote-NAME``) is the host of its URL for git's own URL helpers (``https::https://h/r``), and otherwise
    the word as written (``ext::ssh h %S`` runs any command, ``fd::3`` uses open descriptors: where they connect
    cannot be read, so no host reader takes the word for a public name: refused)."""
    low = word.lower()
    if low.startswith(_SSH_SCHEMES):
        return _url_host(word)
    helper = re.match(r"([A-Za-z][A-Za-z0-9+.-]*)::(.*)", word, re.S)
    if helper:
        name, address = helper.groups()
        if name in ("http", "https", "ftp", "ftps"):
            return _url_host(address) if "://" in address else None  # without a scheme git refuses the URL
        return f"{word} (git-remote-{name})"  # a blank: never an address or a name (``fd::3`` parses as IPv6)
    if re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", word):
        return None
    start = word.find("@[") + 1
    end = start
    if word[start:start + 1] == "[":
        close = word.find("]", start + 1)
        end = close if close >= 0 else 0
    colon = word.find(":", end)
    slash = word.find("/")
    if colon < 0 or (0 <= slash < colon):
        return None
    host = word[:colon].replace("[", "").replace("]", "")
    host = _split_user(host)
    if word[start:start + 1] == "[" and ":" in host and not re.fullmatch(r"[0-9A-Fa-f:.%]+[^:]*", host):
        host = host.rsplit(":", 1)[0]   # [user@host:port]:path
    return host


def scp_remote_host(word: str) -> str | None:
    """The host scp, sftp or rsync reach for the operand ``word`` (OpenSSH's ``colon()``, rsync's ``host:path`` and
    ``host::module``, and ``scp://``/``sftp://``/``rsync://`` URLs), or None for a local file."""
    if re.match(r"(?:scp|sftp|rsync|ssh)://", word, re.I):
        return _url_host(word)
    if word.startswith(":"):
        return None
    bracket = word.startswith("[")
    for i, ch in enumerate(word):
        if ch == "@" and word[i + 1:i + 2] == "[":
            bracket = True
        if ch == "]" and word[i + 1:i + 2] == ":" and bracket:
            return _split_user(word[:i + 1]).strip("[]")
        if ch == ":" and not bracket:
            return _split_user(word[:i]).strip("[]")
        if ch == "/":
            return None
    return None


def _getopt(prog: str, args: Sequence[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """OpenSSH-style getopt: the (letter, value) pairs and the operands (options stop at the first operand; ssh
    reads options again after its destination, ``ssh x.com -o ProxyCommand=...``: ``ssh.c``'s ``goto again``, which
    ``ssh -G x.com -o HostName=10.0.0.1`` shows, session 23)."""
    spec = _GETOPT[prog]
    opts: list[tuple[str, str]] = []
    k = 0
    rounds = 2 if prog in ("ssh", "slogin") else 1
    operands: list[str] = []
    for round_ in range(rounds):
        terminated = False
        while k < len(args) and args[k].startswith("-") and args[k] != "-":
            if args[k] == "--":
                k += 1
                terminated = True
                break
            word, j = args[k], 1
            while j < len(word):
                letter = word[j]
                if spec.find(letter + ":") >= 0:
                    if j + 1 < len(word):
                        opts.append((letter, word[j + 1:]))
                    elif k + 1 < len(args):
                        k += 1
                        opts.append((letter, args[k]))
                    break
                opts.append((letter, ""))
                j += 1
            k += 1
        if round_ + 1 < rounds and k < len(args) and not terminated:
            operands.append(args[k])   # the destination; options may follow it
            k += 1
        else:
            break
    return opts, operands + list(args[k:])


def _jump_hosts(opts: list[tuple[str, str]]) -> list[str]:
    """The hosts of ``-J`` and of ``-o ProxyJump=``/``-o HostName=`` (also ``-o "HostName x"``)."""
    out: list[str] = []
    for letter, value in opts:
        jumps = value if letter == "J" else ""
        if letter == "o" and (m := re.match(r"\s*(proxyjump|hostname)\s*[=\s]\s*(.*)", value, re.I | re.S)):
            if m.group(1).lower() == "hostname":
                out.append(m.group(2).strip())
            else:
                jumps = m.group(2)
        for jump in jumps.split(","):
            jump = jump.strip()
            if jump and jump.lower() != "none":
                host = _url_host(jump) if "://" in jump else _split_user(jump)
                if host and "://" not in jump and host.startswith("["):
                    host = host[1:host.find("]")] if "]" in host else host[1:]
                elif host and "://" not in jump and host.count(":") == 1:
                    host = host.split(":")[0]
                if host:
                    out.append(host)
    return out


def _canonical(opts: list[tuple[str, str]], hosts: list[str]) -> list[str]:
    """Each host under each ``-o CanonicalDomains=`` domain (ssh tries those names first when it canonicalizes)."""
    domains = [d.strip(".") for letter, value in opts if letter == "o"
               and (m := re.match(r"\s*canonicaldomains\s*[=\s]\s*(.*)", value, re.I | re.S))
               for d in m.group(1).replace(",", " ").split() if d.strip(".")]
    return [f"{h.rstrip('.')}.{d}" for h in hosts for d in domains]


def _ssh(prog: str, args: Sequence[str]) -> list[str]:
    opts, operands = _getopt(prog, args)
    out = _jump_hosts(opts)
    written = len(out)
    if prog in ("ssh", "slogin", "sftp") and operands:   # the destination: [user@]host, ssh:// (sftp: [:path])
        dest = operands[0]
        if re.match(r"(?:ssh|sftp)://", dest, re.I):
            out.append(_url_host(dest) or dest)
        else:
            out.append(scp_remote_host(dest) or _split_user(dest).strip("[]") if prog == "sftp" else _split_user(dest))
    else:
        out += [h for w in operands if (h := scp_remote_host(w)) is not None]
    return out + _canonical(opts, out[written:])


def _git_config_hosts(pair: str) -> list[str]:
    key, _, value = pair.partition("=")
    key = key.lower()
    if key.startswith("remote.") and key.endswith((".url", ".pushurl")):
        return [h for h in [git_remote_host(value)] if h]
    if key.startswith("url.") and key.endswith((".insteadof", ".pushinsteadof")):
        return [h for h in [git_remote_host(pair[4:pair.lower().rfind(".")])] if h]
    return []


def _git(args: Sequence[str]) -> list[str]:
    out: list[str] = []
    k = 0
    while k < len(args) and args[k].startswith("-"):
        if args[k] in GIT_GLOBAL_VALUES and k + 1 < len(args):
            if args[k] == "-c":
                out += _git_config_hosts(args[k + 1])
            k += 1
        elif args[k].startswith("-c") and len(args[k]) > 2:
            out += _git_config_hosts(args[k][2:])
        k += 1
    if k >= len(args):
        return out
    sub, rest = args[k], list(args[k + 1:])
    action = ""
    if sub in ("remote", "submodule"):
        action = next((w for w in rest if not w.startswith("-")), "")
        if action not in ("add", "set-url"):
            return out
        rest = rest[rest.index(action) + 1:]
    if sub not in _SHORT:
        return out
    values, flags = _SHORT[sub]
    positions = {1, 2} if action == "set-url" else {1} if sub == "remote" else {_REPO_AT.get(sub, 0)}
    candidates: list[str] = []
    definite = ambiguous = 0   # operands so far, and those of them that may be an unknown option's value
    maybe_value, options = False, True
    k = 0
    while k < len(rest):
        w = rest[k]
        k += 1
        if options and w == "--":
            options = False
            continue
        if options and w.startswith("-") and w != "-":
            name, eq, value = w.partition("=")
            if name in ("--repo", "--remote"):
                candidates.append(value if eq else rest[k] if k < len(rest) else "")
            if w.startswith("--"):
                if not eq and name in _LONG_VALUES:
                    k += 1
                maybe_value = not eq and name not in _LONG_VALUES and name not in _LONG_FLAGS
            elif len(w) == 2 and w[1] in values:
                k += 1
                maybe_value = False
            else:   # a cluster of flags, or an option this reader does not know (it may take the next word)
                maybe_value = not all(c in flags for c in w[1:])
            continue
        # this operand is operand number definite .. definite + ambiguous (an unknown option may have taken some)
        reach = range(definite, definite + ambiguous + 1)
        if any(p in positions for p in reach) or (sub == "fetch" and "--multiple" in rest):
            candidates.append(w)
        if maybe_value:
            ambiguous += 1
        else:
            definite += 1
        maybe_value = False
    # a repository the shell computes ("*": the shell reader's unknown part) may be any remote: read as no host name
    return out + [h for w in candidates if (h := git_remote_host(w) or (w if "*" in w else None)) is not None]


_COMMAND_OPTION = re.compile(r"\s*(proxycommand|localcommand|remotecommand)\s*[=\s]\s*(.*)", re.I | re.S)
_ASSIGNED_COMMAND = re.compile(r"(?<![\w.])(git_ssh_command|rsync_rsh|git_proxy_command|git_ssh)="
                               r"(?:'([^']*)'|\"((?:[^\"\\]|\\.)*)\"|(\S+))", re.I)
_COMMAND_VARIABLE = re.compile(r"(?:git_ssh_command|core\.sshcommand|rsync_rsh|git_proxy_command|core\.gitproxy)=(.+)",
                               re.I | re.S)


def nested_commands(argv: Sequence[str], with_config: bool = True) -> list[str]:
    """The commands a remote-shell program runs from its options, as text to be read again: ssh's, scp's and sftp's
    ``-o ProxyCommand=`` (``nc 10.0.0.7 22`` connects from here), ``-S``/``-D`` of sftp and scp (the ssh program),
    rsync's ``-e``/``--rsh``, and any word assigning ``GIT_SSH_COMMAND``, ``core.sshCommand``, ``RSYNC_RSH``,
    ``GIT_PROXY_COMMAND`` or ``core.gitProxy`` (``git -c core.sshCommand='ssh -J 0' fetch x.com:r``)."""
    if not argv:
        return []
    prog = re.sub(r"\.exe$", "", argv[0].rsplit("/", 1)[-1], flags=re.I).lower()
    out = [m.group(1) for w in argv[1:] if (m := _COMMAND_VARIABLE.fullmatch(w))]
    if with_config:   # the ssh configuration's ProxyCommand for the destination
        out += _configured(prog, argv[1:])[2]
    if prog in _GETOPT:
        opts, _ = _getopt(prog, argv[1:])
        out += [m.group(2) for letter, value in opts if letter == "o" and (m := _COMMAND_OPTION.match(value))]
        out += [value for letter, value in opts if letter == "S" and prog in ("scp", "sftp")]
    if prog == "rsync":
        for k, w in enumerate(argv[1:], start=1):
            if w in ("-e", "--rsh") and k + 1 < len(argv):
                out.append(argv[k + 1])
            elif w.startswith("--rsh="):
                out.append(w[6:])
            elif w.startswith("-e") and len(w) > 2 and not w.startswith("--"):
                out.append(w[2:])
    # ssh's tokens (the destination, read on its own, and its port): a public stand-in, so the rest is read as written
    return [re.sub(r"%[hnr]", "example.com", re.sub(r"%[pC%]", "22", c)) for c in out if c.strip()]


def assigned_commands(text: str) -> list[str]:
    """The commands a shell text hands a remote-shell program through its environment (``GIT_SSH_COMMAND='ssh -J 0'
    git fetch ...``, ``RSYNC_RSH=...``, ``GIT_PROXY_COMMAND=...``), quotes removed."""
    return [re.sub(r"\\(.)", r"\1", m.group(2) or m.group(3) or m.group(4) or "")
            for m in _ASSIGNED_COMMAND.finditer(text)]


def _written_hosts(prog: str, args: Sequence[str]) -> list[str]:
    if prog == "git":
        return _git(args)
    if prog in _GETOPT:
        return _ssh(prog, args)
    if prog == "rsync":
        return [h for w in args if not w.startswith("-") and (h := scp_remote_host(w)) is not None]
    return []


def _config_file(prog: str, args: Sequence[str]) -> str | None:
    """The ``-F`` file ssh reads for this command: its own (the last), or that of the ssh command rsync's ``-e`` or
    git's ``core.sshCommand`` runs (``rsync -e 'ssh -F cfg' x alias:``)."""
    if prog in _GETOPT:
        return next((v for letter, v in reversed(_getopt(prog, args)[0]) if letter == "F"), None)
    runs = nested_commands([prog, *args], with_config=False) if prog in ("rsync", "git") else []
    for text in reversed(runs):
        try:
            words = shlex.split(text)
        except ValueError:
            return "(an ssh command that cannot be read)"   # no such file: refused
        if words and re.sub(r"\.exe$", "", words[0].rsplit("/", 1)[-1], flags=re.I).lower() in _GETOPT:
            found = _config_file(words[0].rsplit("/", 1)[-1].lower(), words[1:])
            if found is not None:
                return found
    return None


def _configured(prog: str, args: Sequence[str],
                assigned: str | None = None) -> tuple[list[str], list[str], list[str]]:
    """``(written hosts, hosts the ssh configuration adds, its ProxyCommands)`` (:mod:`.network_sshconfig`: ``ssh
    alias`` with ``HostName 10.0.0.7``); a configuration that cannot be read adds a host that no reader takes for
    a public name (refused)."""
    written = _written_hosts(prog, args)
    config = _config_file(prog, args) or (assigned if prog in ("git", "rsync") else None)
    added: list[str] = []
    commands: list[str] = []
    # kept as written: a part the shell computes, rsync's (its daemon's "host::module" reads no ssh configuration)
    # and "-o HostName=X" (ssh connects to X without looking it up again)
    pinned = {m.group(1).strip() for letter, v in (_getopt(prog, args)[0] if prog in _GETOPT else [])
              if letter == "o" and (m := re.match(r"\s*hostname\s*[=\s]\s*(.*)", v, re.I | re.S))}
    kept: list[str] = []
    for host in dict.fromkeys(written):
        if "*" in host or prog == "rsync" or host in pinned:
            kept.append(host)
        if "*" in host:
            continue
        reading = config_hosts(host, config)
        if reading is None:
            added.append(f"(the ssh configuration for {host} cannot be read)")
            continue
        added += reading[0]   # (the host itself unless a HostName certainly replaces it: "ssh myalias")
        commands += [re.sub(r"%h", host, c) for c in reading[1]]
    return kept, added, commands


def assigned_config(text: str) -> str | None:
    """The ``-F`` file of an ssh command a shell text hands git or rsync through its environment
    (``GIT_SSH_COMMAND='ssh -F cfg' git fetch alias:r``, ``RSYNC_RSH=...``)."""
    for command in reversed(assigned_commands(text)):
        found = _config_file("rsync", ["-e", command])
        if found is not None:
            return found
    return None


def remote_hosts(argv: Sequence[str], assigned: str | None = None) -> list[str]:
    """The hosts the command ``argv`` (its words as bash expanded them, program first) reaches through ssh: git's
    repositories, ssh's destination and jump hosts, scp/sftp/rsync remotes (see the module docstring), as written,
    and those the ssh configuration maps them to (:mod:`.network_sshconfig`; ``assigned``: the ``-F`` file of an
    ssh command the environment hands git or rsync, :func:`assigned_config`); [] for another program or none."""
    if not argv:
        return []
    prog = re.sub(r"\.exe$", "", argv[0].rsplit("/", 1)[-1], flags=re.I).lower()
    written, added, _ = _configured(prog, argv[1:], assigned)
    return written + added


def remote_forwards(argv: Sequence[str]) -> list[str]:
    """The local sockets ``ssh -R`` (``-o RemoteForward``) hands the remote host: ``-R /r.sock:/var/run/docker.sock``
    or ``-R 2375:/var/run/docker.sock`` lets whoever runs the remote end drive the local socket (OpenSSH's
    ``parse_forward``: a part after the first that starts with ``/`` is a local socket); ``-R [BIND:]PORT`` (a
    SOCKS proxy whose remote end reaches any local address) as a marker no host reader takes for a public name."""
    if not argv or argv[0].rsplit("/", 1)[-1].lower() not in ("ssh", "slogin"):
        return []
    opts, _ = _getopt("ssh", list(argv[1:]))
    specs = [v for letter, v in opts if letter == "R"]
    specs += [m.group(1).replace(" ", ":") for letter, v in opts if letter == "o"
              and (m := re.match(r"\s*remoteforward\s*[=\s]\s*(.*)", v, re.I | re.S))]
    out: list[str] = []
    for spec in specs:
        parts = re.split(r"[:\s]+", re.sub(r"\[[^\]]*\]", "B", spec.strip()))
        out += [socket_destination(p) for p in parts[1:] if p.startswith("/")]
        if len(parts) == 1 or (len(parts) == 2 and parts[1].isdigit()):   # [bind:]port: a SOCKS proxy, remote end
            out.append(f"(ssh -R {spec}: the remote host reaches any address of this machine's network through it)")
    return out
