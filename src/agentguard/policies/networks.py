"""Network destinations: a tool call never reaches a host off the public internet (server-side request forgery).

An agent told by a web page or a mail to fetch ``http://169.254.169.254/latest/meta-data/iam/security-credentials/``
hands the page the machine's cloud credentials; ``http://localhost:2375/containers/json`` drives the Docker daemon,
``http://10.0.0.7:8500/v1/kv/`` a service mesh's secrets. :class:`NetworkGuard` refuses a call whose arguments name
such a destination, read as the client that connects reads it (:func:`destinations`):

- every URL written with a scheme or userinfo in any string of the arguments, at any depth (a shell command's
  words, a JSON text, a list; a scheme-relative ``//host/x`` or a UNC ``\\\\host\\share`` is read as a path in
  text, as a URL in a host-named argument),
  parsed as browsers and Node.js parse it (WHATWG, :mod:`ada_url`) and as Python's clients split it
  (:func:`urllib.parse.urlsplit`), as written and deobfuscated (:func:`.links.client_hosts`): ``http://2852039166/``,
  ``http://0251.0376.0251.0376/``, ``http://[::ffff:a9fe:a9fe]/``, ``https://trusted.com@169.254.169.254/`` and
  ``http:\\\\169.254.169.254`` all reach 169.254.169.254;
- an scp-style remote ``user@host:path`` (``git fetch git@10.0.0.7:repo.git``, scp, rsync);
- a value that is, as a whole, a scheme-less destination (``10.0.0.1``, ``localhost/admin``, ``[::1]``,
  ``metadata.google.internal``: :func:`.network_hosts.whole_host`) under any argument name (session 22);
- a ``host:port`` written anywhere (``localhost:2375``, ``10.0.0.7:8500``, ``db.internal:5432``: a dotted name or
  address, a bracketed IPv6 or localhost), and every value of an argument named as a host (``host``,
  ``hostname``, ``server``, ``endpoint``, ``proxy``, ``base_url``..., :data:`HOST_ARGS`, canonical names, at any
  depth), read as the host of a URL.

A destination is *internal* (:func:`internal`) when it is an IP address that is not globally routable
(:attr:`ipaddress.IPv4Address.is_global` false: private, loopback, link-local (the cloud metadata address),
carrier-grade NAT, reserved, and the unspecified ``0.0.0.0``, which Linux connects to the local host), an IPv6
address embedding one (IPv4-mapped, 6to4, NAT64 ``64:ff9b::/96``, Teredo), an IPv4 spelling the C library's
``inet_aton`` reads (what ``getaddrinfo`` and so every client accepts: ``127.1``, ``0x7f000001``), or a name outside
the public DNS: one without a public suffix (:func:`.links.site_of`, the bundled public suffix list): ``localhost``,
``*.localhost``, ``metadata.google.internal``, ``printer.local``, a single label (``intranet``, resolved through the
machine's search domains). ``allow`` names the exceptions a deployment needs (hosts, or networks in CIDR form:
``"10.0.0.0/8"``, ``"registry.corp"``).

Read further (:mod:`.network_hosts`, session 20): a name whose labels spell an internal address (public
wildcard DNS: ``127.0.0.1.nip.io``, ``10-0-0-1.sslip.io``, ``7f000001.nip.io``) or under a loopback-alias domain
(``localtest.me``, ``lvh.me``); every URL a URL carries in its path, query or fragment (a redirect endpoint's
target, percent-encoded up to three times, scheme-relative or base64); a URL value with tabs or newlines inside
(``http://example.com\t@169.254.169.254``: WHATWG and urllib remove them before parsing, so the host is the
metadata address); a shell command's bare hosts (``curl 169.254.169.254/latest``, ``redis-cli -h 10.0.0.1``,
``curl --resolve x.com:80:127.0.0.1``) in command-named arguments and every argument of a shell tool; and
(session 22, :mod:`.network_remotes`) the remotes of git, ssh, scp, sftp and rsync in such a command, read with the
shell reader and each program's grammar (``git fetch 2130706433:repo`` runs ``ssh 2130706433``: 127.0.0.1), and the
destinations of network clients read with their option grammar (:mod:`.network_programs`: ``curl 0:8080``, ``nc 0
80``, ``redis-cli -h 0``, ``curl -x 0:3128``, ``http_proxy=0:8080``, ``--server 127.1``). Session 23: the hosts an
ssh configuration maps a destination to (:mod:`.network_sshconfig`: ``ssh alias`` with ``HostName 10.0.0.7`` in
``~/.ssh/config``, an ``Include``, ``-F FILE``; an unreadable one refuses), a proxy named by a bare label
(``--proxy corp-proxy``), DNS and file-share clients' servers (``dig @127.1``, ``smbclient //10.1/s``), a URL inside a
longer word (``Acquire::http::Proxy=http://10.1/``), the destinations of a file a client reads them from
(:mod:`.network_files`: ``curl -K cfg``, ``wget -i urls.txt``; unreadable: refused), and a program name in upper case read as the program a
case-insensitive file system runs (``CURL 0:8080``; libwww-perl's ``HEAD``/``GET``). Session 25: the clients' default
configuration files (:mod:`.network_configs`: ``~/.curlrc``, ``~/.wgetrc``, ``~/.gitconfig``'s ``insteadOf``,
``~/.npmrc``, ``pip.conf``) read as each client reads them, and a command that writes one refused; not read as
destinations: a ``no_proxy`` list, a server's listening address (``uvicorn --host 127.0.0.1``,
:data:`.network_programs.LISTENERS`), and ``echo URL | xargs curl`` reads echo's plain words as curl's. Session 26: a local socket a command or argument
names (:mod:`.network_sockets`: ``curl --unix-socket /var/run/docker.sock``, ``DOCKER_HOST=unix://...``, ``nc -U``)
is a destination ``unix:PATH``, refused unless ``allow`` names it; a public name the machine's hosts file maps to an
internal address (:func:`.network_hosts.hosts_file`) is internal, and a write of a resolver's file is refused;
a ``cwd``-like argument (:data:`.rules.CWD_ARGS`) is where the command's clients read their project files.
:class:`ResolvingNetworkGuard` (``resolve = true``) also resolves each name and refuses one that resolves to an
internal address or does not resolve within ``timeout`` (fail closed).

Not covered (no reading of the arguments can see it): a public name that resolves to an internal address without
``resolve = true``, DNS rebinding (a name that answers differently at the tool's own lookup, even with it), a
public URL whose server redirects to an internal one (the target is in the response, not the arguments), a bare
IP address written in prose (not a command) without a scheme, port or host-named argument. Those need the client
itself to refuse internal addresses after resolution and after each redirect (an egress proxy or firewall). Why no
SSRF library: the maintained ones (``advocate``, ``ssrf-filter``) wrap a ``requests`` session at connection time,
which is where the tool runs, not where a call is decided; the parsing here is the two maintained URL parsers plus
:mod:`ipaddress`.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from functools import lru_cache
from typing import Any, Mapping, Sequence

from ..core.errors import InputError
from ..core.guard import BaseGuard
from ..core.types import Context, Decision, Verdict
from .arguments import leaves
from .links import client_hosts, deobfuscate, fold, site_of, url_tokens
from .network_configs import config_writes, default_destinations, unfixed_writes
from .network_configs_env import command_env, names_client, unseen_clients
from .network_configs_writes import config_set, own_writes_less, read_after_write, tree_writes, written_over
from .network_files import file_destinations
from .network_hosts import (carried_urls, command_hosts, embedded, hosts_file, nonpublic, resolved_internal,
                            spelled_address, whole_host)
from .network_programs import (CASED_CLIENTS, assigned_destinations, bare_host, program_destinations, quiet_text,
                               without_listening, xargs_literal)
from .network_remotes import assigned_commands, assigned_config, nested_commands, remote_forwards, remote_hosts
from .network_args import HOST_ARGS, HOST_WORDS, _named, host_named
from .network_args import socket_named as _socket_named  # noqa: F401 (tests/policies/test_networks_s24.py)
from .network_sockets import is_socket, socket_assignment, socket_urls
from .network_repos import call_directories
from .rules import _SHELL_TOOLS, COMMAND_ARGS, _call_context, as_tool_call

__all__ = ["HOST_ARGS", "HOST_WORDS", "NetworkGuard", "ResolvingNetworkGuard", "destinations", "host_named", "internal"]

# ``host:port`` in text: a bracketed IPv6, a dotted name or address, or localhost (``12:30`` and ``code:404`` are text)
_HOST_PORT = re.compile(r"(?<![\w@.:/-])((?:\[[0-9a-fA-F:.%]+\]|[\w-]+(?:\.[\w-]+)+\.?|localhost\.?):\d{1,5})(?![\w.])",
                        re.I)
_PROSE_NUMBER = re.compile(r"(?!(?:\d+\.){3}\d+$)[0-9.]+")  # a number, not four dotted parts: "1.5:1" is a ratio in text
_IPV4_ATON = re.compile(r"(?:0[xX][0-9a-fA-F]*|[0-9]+)(?:\.(?:0[xX][0-9a-fA-F]*|[0-9]+)){0,3}")
# git's, scp's and rsync's remote form ``user@host:path`` (git@10.0.0.7:repo.git)
_SCP = re.compile(r"(?<![\w/.@-])[\w.+-]+@(\[[0-9a-fA-F:.%]+\]|[\w.-]+):(?!\d{1,5}(?:[/\s]|$))")
_URLISH = re.compile(r"[:@/\\%&]")  # what every reading below needs (or a decoding makes: %3A, &#58;)
_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*:(?!\d)", re.I)  # a URL (read above), not host:port
_NOT_DNS = re.compile(r"[\x00-\x20\x7f%/\\?#@:\[\]<>^|]")  # no host name holds one (after the parsers' decoding)
_CONTROLS = re.compile(r"[\t\r\n]")  # what WHATWG and urllib remove from a URL before parsing it
_SCHEME_URL = re.compile(r"[a-z][a-z0-9+.-]*://", re.I)  # a destination written as a URL (not host[:port][/path])
_INNER_URL = re.compile(r"(?<![\w+.-])[a-z][a-z0-9+.-]*://", re.I)  # a URL starting inside a longer token


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """``host`` as the address a client connects to, or None for a name: an IP literal (IPv6 with or without
    brackets and zone), or an IPv4 in any spelling ``inet_aton`` reads (decimal, octal, hex, 1 to 4 parts)."""
    h = host.strip("[]")
    try:
        return ipaddress.ip_address(h)
    except ValueError:
        pass
    if _IPV4_ATON.fullmatch(h):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(h))
        except OSError:
            return None
    return None


def internal(host: str) -> str | None:
    """Why ``host`` (as a client parsed it) is off the public internet, or None when it is a public destination:
    a non-global address (:func:`.network_hosts.nonpublic`), a name without a public suffix, a name under a
    loopback-alias domain or one whose labels spell a non-global address (:func:`.network_hosts.spelled_address`:
    ``127.0.0.1.nip.io``, ``10-0-0-1.sslip.io``); a local socket (:func:`.network_sockets.socket_destination`)."""
    if is_socket(host):
        return f"the local socket {host} (a request through it reaches whatever listens there)"
    ip = _address(host)
    if ip is not None:
        bad = nonpublic(ip)
        return None if bad is None else f"{host} is not a public address ({bad})"
    name = fold(host).rstrip(".")
    if _NOT_DNS.search(name):   # a decoded NUL, a blank, "%", "/": no resolver reads it; a C one may cut it short
        return f"{host!r} is no host name a resolver reads"
    if not name or site_of(name) is None:
        return f"{host} is not a public DNS name (no public suffix)"
    for mapped in hosts_file(name):   # (the machine's /etc/hosts answers before DNS; session 26)
        addr = _address(mapped.split("%")[0])
        inward = nonpublic(addr) if addr is not None else mapped
        if inward is not None:
            return f"{host} is mapped to {inward} by the hosts file, which is not a public address"
    spelled = spelled_address(name)
    if isinstance(spelled, str):
        return spelled
    bad = next((x for ip in spelled if (x := nonpublic(ip)) is not None), None)
    return None if bad is None else f"{host} spells the address {bad}, which a wildcard DNS service resolves it to"


def _inner_urls(token: str) -> list[str]:
    """The URLs starting inside ``token`` (after its first character), each up to where the next one starts."""
    starts = [m.start() for m in _INNER_URL.finditer(token, 1)]
    return [token[a:b] for a, b in zip(starts, starts[1:] + [len(token)])]


def _url_hosts(text: str) -> list[str]:
    """The hosts of the URLs written in ``text`` (a scheme or userinfo; not a path ``//x``), and of the URLs each
    carries in its path, query or fragment (:func:`.network_hosts.carried_urls`: a redirect's target), to a
    depth of three URLs."""
    hosts: list[str] = []
    todo, seen = [(text, 0)], {text}
    while todo:
        t, depth = todo.pop()
        tokens = url_tokens(t) + url_tokens(deobfuscate(t))
        # a URL inside a token the text reading took whole: "Acquire::http::Proxy=http://10.1/" (apt -o) was read
        # as one URL of the scheme "http" (session 23); each inner "scheme://" starts a URL of its own too, which
        # ends where the next one starts (pieces, not suffixes: "http://" * 5000 made 5000 suffixes of ~35 KB each,
        # read again at every depth, and took minutes; the pieces' total length is the token's)
        tokens += [piece for tok in tokens for piece in _inner_urls(tok)]
        for token in dict.fromkeys(tokens):
            if token[:1] in "/\\":   # "//x" and "\\\\x" are paths too (a UNC share)
                continue
            hosts += client_hosts(token)
            for inner in carried_urls(token) if depth < 3 else ():
                if inner not in seen:
                    seen.add(inner)
                    todo.append((inner, depth + 1))
    return hosts


def destinations(arguments: Mapping[str, Any], tool: str = "") -> list[str] | None:
    """The hosts a tool may connect to for these arguments (see the module docstring), or None when the
    arguments cannot be read whole (nested too deep, too many values: the guard refuses them unread). ``tool``:
    the tool's name (a shell tool's every argument is a command, :func:`.network_hosts.command_hosts`)."""
    texts = leaves(arguments)
    named, commands, sockets = _named(arguments, tool in _SHELL_TOOLS)
    if texts is None or named is None or commands is None:
        return None
    hosts: list[str] = []
    shell = {t for value in commands for t in leaves(value) or []}
    for text in texts:
        one = text.strip()
        if "unix" in text.lower() or "npipe" in text.lower():   # unix:///var/run/docker.sock (session 26)
            hosts += socket_urls(text)
        if (whole := whole_host(one)) is not None:   # a value that is only a destination, whatever its name
            hosts += [whole, *client_hosts("http://" + one)]
        if text in shell and (argvs := _argvs(text)):   # a command: no no_proxy list, no server's listening address
            text = quiet_text(text, argvs)
        if _CONTROLS.search(one) and _SCHEME.match(one) and one.count("://") <= 1 and " " not in one:
            text = f"{text} {_CONTROLS.sub('', one)}"   # one URL: its clients remove tabs and newlines first
        if text.isascii() and not _URLISH.search(text):
            continue  # no URL, host:port or remote, and nothing a decoding turns into one
        hosts += _url_hosts(text)
        hosts += [h for m in _HOST_PORT.finditer(text) if not _PROSE_NUMBER.fullmatch(m.group(1).rsplit(":", 1)[0])
                  for h in client_hosts("http://" + m.group(1))]
        hosts += [h for m in _SCP.finditer(text) for h in client_hosts("ssh://x@" + m.group(1))]
    hosts += [d for value in sockets for text in leaves(value) or [] for d in socket_assignment("socket=" + text)]
    for value in named:
        for text in leaves(value) or []:
            one = _CONTROLS.sub("", text.strip())   # a client building a URL from it removes them too
            if _SCHEME.match(one) and " " in one:   # one URL with blanks: WHATWG reads it whole ("http: &@0x7f.1")
                hosts += client_hosts(one.replace(" ", "%20"))
            if _address(one) is not None and ":" in one.strip("[]"):
                # a bare IPv6 literal, with a zone ("::1", "fe80::1%eth0"): a socket connects to it as written, and
                # "http://::1" is no URL a parser reads (getaddrinfo is the oracle: tests/policies/test_networks_s21.py)
                hosts.append(one)
                continue
            if _SCHEME.match(one) and "." in one.split(":", 1)[0]:
                # a scheme with a dot is WHATWG's, not urllib3's (no "." in its schemes): PoolManager connects to
                # "metadata.google.internal.:/x" and "localhost.:" as a host with an empty port
                hosts += client_hosts("http://" + one)
            if one.startswith("://"):   # httpx reads the host of a URL without its scheme
                one = one[3:]
            if one and not _SCHEME.match(one) and re.search(r"\s", one):
                # a list of hosts written with blanks ("example.com 10.0.0.1"): its addresses and internal names
                hosts += [h for w in command_hosts(one) for h in client_hosts("http://" + w)]
                # urllib3 (requests' parser) and curl read a scheme-less "host?..." or "host/..." before any blank
                one = m.group(1) if (m := re.match(r"([^\s?#/\\]+)[?#/\\]", one)) else ""
            if one and not _SCHEME.match(one):
                url = "http:" + one if one[:2] in ("//", "\\\\", "/\\", "\\/") else "http://" + one   # //host: scheme-relative
                hosts += client_hosts(url) + _url_hosts(url)
    with call_directories(_call_context(arguments)[0]):   # (a cwd argument: where its clients run; session 26)
        for text in [t for value in commands for t in leaves(value) or []]:
            found = _command_destinations(text, 0)
            if found is None:
                return None
            hosts += found
    return list(dict.fromkeys(hosts))


_MAX_NESTED = 3   # a command an ssh option names, inside one such, inside one such


def _command_destinations(text: str, depth: int) -> list[str] | None:
    """The hosts a shell command connects to (see :func:`destinations`), and those of the commands an ssh option or
    variable runs (``ssh -o ProxyCommand='nc 0 22' x``, ``rsync -e 'ssh -J 0'``, ``GIT_SSH_COMMAND=...``: read
    again, :data:`_MAX_NESTED` deep, deeper is refused unread); None for a text too long to read."""
    read = _read_command(text)
    if read is None or depth > _MAX_NESTED:
        return None
    argvs, writes, _, trees = read
    config = assigned_config(text)   # GIT_SSH_COMMAND='ssh -F cfg' git fetch alias:r
    hosts = [h for argv in argvs for h in remote_hosts(argv, config)]
    # a client's configuration written here holds what no reading of the text shows (network_configs, session 25)
    hosts += [f"(a write of {w!r}, a file network clients read destinations from)" for w in writes]
    # (a server's listening address is no destination: uvicorn --host 127.0.0.1, python -m http.server -b 0)
    found = [d for argv in argvs for d in program_destinations(without_listening(argv)) + file_destinations(argv)
             + remote_forwards(argv)]   # (ssh -R /r.sock:/var/run/docker.sock, -R 9000: s26)
    readings = [text, *_shell_words(text)]
    env = command_env(readings)   # HOME=/tmp/h curl ...: the files it reads
    configured = [default_destinations(argv, env) for argv in argvs]   # ~/.curlrc, ~/.gitconfig's insteadOf...
    configured += unseen_clients(readings, argvs, env)   # su bob -c 'curl ...': a client the reader does not see
    configured += [s for argv in argvs if (s := config_set(argv)) is not None]   # git config --global url...
    named = env if names_client(readings, argvs) else {}   # (make PREFIX=/usr/local install: no client reads it)
    hosts += read_after_write(argvs, named, _written(text))   # "> c; curl -K c": c is read before it is written
    hosts += written_over(argvs, env, trees)   # "cp -r d ~ && curl ...": ~/.curlrc is written, unseen, then read
    found += [d for dests, _ in configured for d in dests]
    quiet = [quiet_text(t, argvs) for t in readings]   # no no_proxy list, no server's listening address
    found += [d for t in quiet for w in t.split() for d in assigned_destinations(w) + socket_assignment(w)]
    for dest in dict.fromkeys(found):   # a URL, or a scheme-less [user@]host[:port][/path]
        hosts += client_hosts(dest) if _SCHEME_URL.match(dest) else [dest] if dest.startswith("(") or is_socket(
            dest) else [
            h for h in [bare_host(dest)] if h]   # (a marker, "(... cannot be read)", whole: no host reads it)
    for word, still in zip(readings, quiet):
        hosts += [h for w in command_hosts(still) for h in client_hosts("http://" + w)]
        hosts += _url_hosts(word) if word is not text else []
    runs = [n for argv in argvs for n in nested_commands(argv)] + [c for _, cs in configured for c in cs]
    for nested in dict.fromkeys(runs + assigned_commands(text)):
        inner = _command_destinations(nested, depth + 1)
        if inner is None:
            return None
        hosts += inner
    return hosts


_UNQUOTED = re.compile(r"\\(.)|['\"]", re.S)   # bash's quote removal: "169.254"".169.254", 169\.254, 'loc'alhost
_CONCAT = re.compile(r"(?<=['\"])\s*(?:\+|\.|\.\.|\|\|)\s*(?=['\"])")   # 'http://10.0.' + '0.1' (Python, JS, PHP, Lua, SQL)
_REWRITES = re.compile(r"\$'|\{[^{}\s]*(?:,|\.\.)[^{}\s]*\}")   # $'\x31..' and brace expansion {254,1}: the reader


#: the longest command text read with the shell reader for its remotes (a longer one is refused unread)
MAX_COMMAND = 65536


def _argvs(command: str) -> tuple[tuple[str, ...], ...] | None:
    read = _read_command(command)
    return None if read is None else read[0]


def _written(command: str) -> tuple[str, ...]:
    read = _read_command(command)
    return () if read is None else read[2]


@lru_cache(maxsize=4096)
def _read_command(command: str) -> tuple[tuple[tuple[str, ...], ...], tuple[str, ...], tuple[str, ...],
                                         tuple[str, ...]] | None:
    """Every command ``command`` runs, as the shell reader expands it (:func:`.shell.analysis.analyse`: through
    wrappers, ``-c`` payloads, substitutions; the program by its canonical name), and the files of
    :data:`.network_configs.NETWORK_CONFIGS` it writes; None for a text longer than :data:`MAX_COMMAND`. A
    remote-shell program's hosts are read from these (:mod:`.network_remotes`)."""
    if len(command) > MAX_COMMAND:
        return None
    from .shell.analysis import analyse   # (the shell reader: tree-sitter-bash; imported when a command needs it)

    analysis = analyse(command)
    out = []
    for c in analysis.commands:
        if c.argv:
            # xargs appends words from standard input: its words hold them as "*" (unknown: no public name)
            args = c.argv[1:] if len(c.words) <= len(c.argv) else tuple(w.text for w in c.words[1:])
            out.append((c.program, *args))
            exact = c.argv[0].rsplit("/", 1)[-1]
            if exact in CASED_CLIENTS:   # "HEAD url" is libwww-perl's client (the reader's folded name: "head")
                out.append((exact, *args))
    # a client's own configuration command with literal words is read as the entry it sets (config_set), so the
    # file it writes is no unknown write; a client's own words (curl -K c) are no write before its read
    configs = own_writes_less(analysis.writes, [c.argv for c in analysis.commands if c.argv and all(
        w.literal for w in c.words) and config_set(c.argv) is not None])
    readers = own_writes_less(analysis.writes, [a for a in out if read_after_write([a], {}, [], True)])
    tree = tree_writes(analysis.writes, out)   # "cp -r d ~ && curl ...": the spellings written_over reads
    piped = xargs_literal(command)   # "echo URL | xargs curl": the words xargs hands curl are echo's, plain
    out = [a for a in out if "*" not in a] + [piped] if piped is not None else out
    literal = tuple(dict.fromkeys(t for forms in readers for t, tokens in forms if tokens is None))
    return tuple(out), tuple(config_writes(configs) + unfixed_writes(command, analysis.paths)), literal, tree


def _expanded(command: str) -> tuple[str, ...]:
    return tuple(w for argv in _argvs(command) or () for w in argv)


def _shell_words(command: str) -> tuple[str, ...]:
    """The command as bash expands its words, where it holds something bash rewrites: quotes and escapes removed
    (a cheap reading of the text: quotes joined, ``169\\.254``; a code's string literals joined by ``+``, ``.``,
    ``..`` or ``||`` first: ``'http://10.0.' + '0.1'``), and where it holds ANSI-C quoting ``$'\\x31'`` or
    a brace expansion ``{254,1}`` the words of the shell reader (:func:`.shell.analysis.analyse`, a few
    milliseconds; a text over 8,192 characters is not expanded). () for a text bash leaves as written."""
    if not any(c in command for c in "'\"\\{$"):
        return ()
    joined = _CONCAT.sub("", command)   # ('.' is a string of one dot too: both readings)
    out = tuple(dict.fromkeys(_UNQUOTED.sub(lambda m: m.group(1) or "", t) for t in (command, joined)))
    return out + (_expanded(command) if _REWRITES.search(command) and len(command) <= 8192 else ())


class NetworkGuard(BaseGuard):
    """Refuse a tool call that would connect to a host off the public internet (see the module docstring).

    ``allow``: exceptions, hosts (exact, case-folded) or networks (CIDR); ``decision``: what a refusal is
    (REJECT by default; ESCALATE to ask a human). Proposals that are not tool calls are allowed (nothing connects)."""

    inline_safe = True  # fast and pure: an adapter may evaluate it on its event loop

    def __init__(self, *, allow: Sequence[str] | str = (), decision: Decision | str = Decision.REJECT,
                 name: str = "network-rules") -> None:
        self.name = name
        self.decision = Decision.parse(decision)
        if not self.decision.refuses:
            raise InputError(f"{name}: decision must block (REJECT, ESCALATE or HALT), not {self.decision.name}")
        self._hosts: set[str] = set()
        self._sockets: set[str] = set()   # local sockets, exact ("unix:/var/run/docker.sock"; session 26)
        self._nets: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        for entry in [allow] if isinstance(allow, str) else list(allow):
            if not isinstance(entry, str) or not entry.strip():
                raise InputError(f"{name}.allow: a host or a network (CIDR), not {entry!r}")
            if is_socket(entry.strip()):
                spelled = socket_urls(entry.strip())
                if len(spelled) != 1:
                    raise InputError(f"{name}.allow: a socket is unix:/PATH or unix:@NAME, not {entry!r}")
                self._sockets.add(spelled[0])
                continue
            try:
                self._nets.append(ipaddress.ip_network(entry.strip(), strict=False))
            except ValueError:
                self._hosts.add(fold(entry.strip()).rstrip("."))
        self._allowed = Verdict.allow(self.name)

    def __repr__(self) -> str:
        return f"NetworkGuard(allow={sorted(self._hosts) + sorted(self._sockets) + [str(n) for n in self._nets]!r})"

    @classmethod
    def from_config(cls, params: Mapping[str, Any]) -> "NetworkGuard":
        """``{"allow": [...], "decision": ..., "name": ..., "resolve": false, "timeout": 2.0}`` (a ``[[guards]]``
        table of type ``network-rules``); ``resolve = true`` gives a :class:`ResolvingNetworkGuard`."""
        unknown = sorted(set(params) - {"allow", "decision", "name", "resolve", "timeout"})
        if unknown:
            raise InputError(f"unknown key(s) {', '.join(unknown)} for network-rules (known: allow, decision, name, "
                             "resolve, timeout)")
        resolve = params.get("resolve", False)
        if not isinstance(resolve, bool):
            raise InputError(f"network-rules.resolve: true or false, not {resolve!r}")
        common = dict(allow=params.get("allow", ()), decision=params.get("decision", "REJECT"),
                      name=str(params.get("name", "network-rules")))
        if resolve:
            return ResolvingNetworkGuard(**common, timeout=params.get("timeout", 2.0))
        if "timeout" in params:
            raise InputError("network-rules.timeout: only with resolve = true")
        return cls(**common)

    def _excepted(self, host: str) -> bool:
        """Whether ``host`` is an exception: a name ``allow`` lists, an address in an allowed network, or an IPv6
        address whose every non-public IPv4 address it carries is in one (a Teredo address carries two: its server
        in an allowed 10.0.0.0/8 does not excuse its client 127.0.0.1); a local socket only as ``allow`` spells it
        (``unix:/var/run/docker.sock``: a path is case-sensitive, never folded)."""
        if is_socket(host):
            return host in self._sockets
        if fold(host).rstrip(".") in self._hosts:
            return True
        ip = _address(host)
        if ip is None:
            return False
        def allowed(x: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
            return any(x.version == n.version and x in n for n in self._nets)
        carried = [x for x in embedded(ip)[1:] if nonpublic(x) is not None]
        return allowed(ip) or (bool(carried) and all(allowed(x) for x in carried))

    def strictest(self) -> Decision:
        """The strictest decision :meth:`check` may give (``decision``): a :class:`~agentguard.core.GuardStack`
        holding a verdict at least as strict need not ask this guard."""
        return self.decision

    def check(self, context: Context, proposal: Any) -> Verdict:
        call = as_tool_call(proposal)
        if call is None:
            return self._allowed
        hosts = destinations(call.arguments, call.name)
        if hosts is None:
            return Verdict(self.decision, f"the arguments of {call.name} are nested too deep or too many to read "
                                          "their destinations", self.name)
        found = [(h, why) for h in hosts if (why := internal(h)) is not None and not self._excepted(h)]
        if not found:
            return self._allowed
        return Verdict(self.decision, f"{call.name} would connect to {found[0][1]}", self.name,
                       details={"destinations": [h for h, _ in found]})



class ResolvingNetworkGuard(NetworkGuard):
    """:class:`NetworkGuard` that also resolves each name the static reading passes (``resolve = true``): every
    address ``getaddrinfo`` returns within ``timeout`` seconds must be public, and a name that does not resolve in
    time or at all is refused (fail closed: :func:`.network_hosts.resolved_internal`). This closes public names of
    internal addresses no static reading knows (an attacker's own ``a.evil.com`` -> 10.0.0.7), not DNS rebinding
    (a name that answers the tool otherwise later) nor server-side redirects: an egress proxy does. Not inline-safe:
    it waits on DNS."""

    inline_safe = False  # it waits on the resolver: never on an event loop

    def __init__(self, *, allow: Sequence[str] | str = (), decision: Decision | str = Decision.REJECT,
                 name: str = "network-rules", timeout: float = 2.0) -> None:
        super().__init__(allow=allow, decision=decision, name=name)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= 30:
            raise InputError(f"{name}.timeout: seconds, more than 0 and at most 30, not {timeout!r}")
        self.timeout = float(timeout)

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + f", resolve=True, timeout={self.timeout:g})"

    def check(self, context: Context, proposal: Any) -> Verdict:
        verdict = super().check(context, proposal)
        call = as_tool_call(proposal)
        if verdict.decision.refuses or call is None:
            return verdict
        for host in destinations(call.arguments, call.name) or []:
            if _address(host) is None and not self._excepted(host):
                why = resolved_internal(fold(host).rstrip("."), self.timeout)
                if why is not None:
                    return Verdict(self.decision, f"{call.name} would connect to {why}", self.name,
                                   details={"destinations": [host]})
        return verdict
