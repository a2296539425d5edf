"""Destinations a URL's host does not show: names that spell an internal address, redirect targets carried inside a
URL, hosts written as a shell command's words, and (opt-in) what a name resolves to.

:mod:`.networks` reads the host a client connects to. This module reads what that host, or the rest of the URL,
hands on (session 20 red team, each confirmed against urllib, urllib3, httpx and the WHATWG parser ``ada_url``):

- **Names that spell an address** (:func:`spelled_address`). Public wildcard-DNS services answer a name with the
  address written in it: ``127.0.0.1.nip.io``, ``app.10.0.0.1.nip.io``, ``magic-127-0-0-1.nip.io``,
  ``10-0-0-1.sslip.io``, ``7f000001.nip.io`` (hex), ``--1.sslip.io`` (IPv6 ``::1``); and loopback-alias domains
  answer every name below them with 127.0.0.1 (``localtest.me``, ``lvh.me``...: :data:`LOOPBACK_DOMAINS`); names
  under ``arpa`` and known cloud metadata names answer with internal addresses (:data:`INTERNAL_NAMES`). A name
  of any domain whose labels spell an address in a form ``inet_aton`` reads (four dotted labels, decimal, octal
  or hex: ``0x7f.0.0.1.nip.io``) or four decimal parts joined by ``.`` or ``-`` anywhere in the name (after any
  prefix, across labels: DNS-rebinding services ``make-1.2.3.4-rebind-127.0.0.1-rr.1u.ms``, ``7f000001.c0a80001.rbndr.us``) is
  read as that address: a public spelled address passes (``ec2-54-1-2-3.compute-1.amazonaws.com``), an internal
  one is refused. The hex and dashed-IPv6 forms are read only under the services that define them
  (:data:`WILDCARD_DNS`): eight hex digits are a common label (a build hash) and one in seven reads as a
  non-global address. No maintained package lists these services (PyPI's SSRF libraries all check at
  connection time, after resolution); both lists are the ones known at the time of writing, not exhaustive.
  ``resolve = true`` (:func:`resolved_internal`) covers any other name.
- **Redirect targets** (:func:`carried_urls`). ``https://public.com/redirect?url=http://169.254.169.254/`` makes
  the client follow the public host's redirect to the metadata service; what a redirect endpoint does cannot be
  seen, but a URL written in a URL's path, query or fragment can: each is read as a URL, after percent-decoding
  up to three times (``http%253A%252F%252F...``), a query or fragment value ``//host`` (a scheme-relative
  redirect) and a base64 value or path segment that decodes to a URL (``?u=aHR0cDovLzE2OS4yNTQuMTY5LjI1NC8=``). A redirect
  decided by the server (a ``Location`` header) is not visible in the arguments: only a client that refuses
  internal addresses after each redirect (an egress proxy) covers it.
- **Command words** (:func:`command_hosts`). ``curl 169.254.169.254/latest/meta-data/``, ``wget 10.0.0.1``,
  ``redis-cli -h 10.0.0.1``, ``curl --resolve example.com:80:127.0.0.1 ...``, ``curl localhost/admin``: a program
  reads a host without a scheme or port. In a command, every IPv4 address written as four parts (any radix), a
  bracketed IPv6 address, ``localhost`` and a name under an internal-only suffix (``.localhost``, ``.internal``,
  ``.local``, ``.home.arpa``, ``.lan``) is a destination, except a CIDR block (``10.0.0.0/8``: a network, no
  connection). A cost: ``uvicorn --host 127.0.0.1`` (a listening address) reads as one too.
- **Resolution** (:func:`resolved_internal`, opt-in): ``getaddrinfo`` on the name with a timeout; every address
  it returns must be global, and a name that does not resolve in time, or at all, is refused (fail closed). It is
  a check at decision time, not a pin: a DNS-rebinding name (TTL 0) answers the tool differently a moment later.
"""

from __future__ import annotations

import base64
import binascii
import concurrent.futures
import ipaddress
import re
import socket
from urllib.parse import unquote

from .network_cache import read_cached
from .network_files import read_limited

__all__ = ["HOSTS_FILE", "INTERNAL_NAMES", "LOOPBACK_DOMAINS", "WILDCARD_DNS", "carried_urls", "command_hosts", "embedded",
           "hosts_file", "nonpublic", "resolved_internal", "spelled_address", "whole_host"]

#: public wildcard-DNS services that answer a name with the address spelled in it (dotted, dashed, hex, IPv6)
WILDCARD_DNS = ("nip.io", "sslip.io", "xip.io", "traefik.me", "nip.direct", "localtest.me", "rbndr.us", "1u.ms")
#: domains whose every name resolves to the loopback address (published for local development)
LOOPBACK_DOMAINS = ("localtest.me", "lvh.me", "vcap.me", "lacolhost.com", "localho.st", "fuf.me", "traefik.me",
                    "yoogle.com", "local.gd")

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
_PART = r"(?:0[xX][0-9a-fA-F]{1,8}|[0-9]{1,10})"   # one part of an inet_aton spelling
_ATON_PART = re.compile(_PART)
_TEREDO = ipaddress.ip_network("2001::/32")
#: IPv6 prefixes whose last 32 bits are an IPv4 address a translator or an old stack connects to: NAT64 (RFC 6052),
#: local-use NAT64 (RFC 8215), IPv4-translated (SIIT, RFC 2765), IPv4-compatible (deprecated, RFC 4291)
_CARRIERS = tuple(ipaddress.ip_network(n) for n in ("64:ff9b::/96", "64:ff9b:1::/48", "::ffff:0:0:0/96", "::/96"))
#: IPv6 blocks not globally reachable that :mod:`ipaddress` (this Python) counts as global: documentation
#: (``3fff::/20``, RFC 9637), SRv6 SIDs (``5f00::/16``, RFC 9602), deprecated site-local (``fec0::/10``)
_NOT_GLOBAL6 = tuple(ipaddress.ip_network(n) for n in ("3fff::/20", "5f00::/16", "fec0::/10"))
_DECIMAL4 = re.compile(r"(?=(?<![0-9A-Za-z])([0-9]{1,3}[.-][0-9]{1,3}[.-][0-9]{1,3}[.-][0-9]{1,3})(?![0-9A-Za-z]))")
_HEX8 = re.compile(r"(?:^|-)([0-9a-f]{8})$")


def embedded(ip: Address) -> list[Address]:
    """``ip`` and every IPv4 address an IPv6 one carries (mapped, 6to4, NAT64 and local-use NAT64, IPv4-translated,
    IPv4-compatible, Teredo server and client)."""
    out: list[Address] = [ip]
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            out.append(ip.ipv4_mapped)
        if ip.sixtofour is not None:
            out.append(ip.sixtofour)
        if any(ip in n for n in _CARRIERS):
            out.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
        if ip in _TEREDO and ip.teredo is not None:
            out += list(ip.teredo)
    return out


def nonpublic(ip: Address) -> Address | None:
    """The first address ``ip`` is or carries (:func:`embedded`) that is not globally routable
    (:attr:`~ipaddress.IPv4Address.is_global` false, multicast, or an IPv6 block of :data:`_NOT_GLOBAL6` that
    :mod:`ipaddress` counts as global), or None for a public address."""
    return next((x for x in embedded(ip) if not x.is_global or x.is_multicast
                 or (isinstance(x, ipaddress.IPv6Address) and any(x in n for n in _NOT_GLOBAL6))), None)


def _aton(parts: list[str]) -> ipaddress.IPv4Address | None:
    try:
        return ipaddress.IPv4Address(socket.inet_aton(".".join(parts)))
    except OSError:
        return None


#: public names whose answer is an internal address: the infrastructure zone ``arpa`` (reverse DNS, RFC 8375's
#: ``home.arpa`` answered only by a home router, ``ipv4only.arpa`` -> 192.0.0.170) and cloud metadata services
#: published in public DNS (Tencent Cloud's ``metadata.tencentyun.com`` -> 169.254.0.23)
INTERNAL_NAMES = ("arpa", "metadata.tencentyun.com")


def _under(name: str, domains: tuple[str, ...]) -> str | None:
    return next((d for d in domains if name == d or name.endswith("." + d)), None)


def spelled_address(name: str) -> list[Address] | str:
    """The addresses a name's labels spell (see the module docstring), or the reason it is a loopback alias.

    ``name`` is a host name, case-folded, without the root's dot. Every window of four consecutive labels that
    ``inet_aton`` reads, every four-part decimal run joined by dots or dashes (within and across labels: nip.io's
    ``[.-]`` grammar, 1u.ms's ``make-1.2.3.4-rebind-169.254.169.254-rr``), and under :data:`WILDCARD_DNS` a
    label (or its last ``-`` part) of eight hex digits and a dashed IPv6 label; [] for a name that spells none."""
    if (alias := _under(name, LOOPBACK_DOMAINS)) is not None:
        return f"{name} is under {alias}, a domain whose every name resolves to the loopback address"
    if (zone := _under(name, INTERNAL_NAMES)) is not None:
        return f"{name} is under {zone}, whose names answer with internal addresses"
    labels = name.split(".")
    out: list[Address] = []
    for i in range(len(labels) - 3):
        window = labels[i:i + 4]
        if all(_ATON_PART.fullmatch(p) for p in window) and (ip := _aton(window)) is not None:
            out.append(ip)
    for m in _DECIMAL4.finditer(name):   # dots and dashes mixed, across labels (make-1.2.3.4-rebind-..., a-10-0-0-1)
        try:
            out.append(ipaddress.IPv4Address(re.sub(r"[.-]", ".", m.group(1))))
        except ValueError:
            pass
    if _under(name, WILDCARD_DNS) is not None:
        for label in labels:
            if (h := _HEX8.search(label)) is not None:
                out.append(ipaddress.IPv4Address(int(h.group(1), 16)))
            if "--" in label or label.count("-") >= 2:
                for k in [0] + [j + 1 for j, c in enumerate(label) if c == "-"]:
                    try:
                        out.append(ipaddress.IPv6Address(label[k:].replace("-", ":")))
                        break
                    except ValueError:
                        continue
    return out


_SCHEME_AUTHORITY = re.compile(r"[a-z][a-z0-9+.-]*:[\\/]*[^\\/?#]*|[\\/]{2}[^\\/?#]*|[^@\s]*@[^\\/?#]*", re.I)
_B64 = re.compile(r"[A-Za-z0-9+/_-]{12,}={0,2}")
_MAX_DECODES = 3


def _decodings(text: str) -> list[str]:
    """``text`` and its percent-decodings, up to :data:`_MAX_DECODES` rounds (a value encoded twice to pass one
    decoding), without repeats."""
    out = [text]
    for _ in range(_MAX_DECODES):
        nxt = unquote(out[-1].replace("+", " ") if "%" in out[-1] else out[-1])
        if nxt == out[-1]:
            break
        out.append(nxt)
    return out


def _base64_url(value: str) -> str | None:
    """The URL a base64 (standard or URL-safe) value decodes to, or None."""
    if not _B64.fullmatch(value):
        return None
    try:
        raw = base64.b64decode(value.replace("-", "+").replace("_", "/") + "=" * (-len(value) % 4), validate=True)
        text = raw.decode("ascii")
    except (binascii.Error, ValueError):
        return None
    return text if re.match(r"(?:[a-z][a-z0-9+.-]*:)?[\\/]{2}|(?:https?|ftp|wss?):", text, re.I) else None


def carried_urls(token: str) -> list[str]:
    """The URLs written inside a URL's path, query and fragment (see the module docstring), each as a text
    :func:`.links.url_tokens` reads: the path (an inner scheme URL in it: ``/go/http://10.0.0.1/``) and each query
    and fragment value on its own (split at ``?#&;`` as written, so every value is read however many there are),
    each percent-decoded up to three times; a value that is a scheme-relative ``//host`` (as ``http://host``); a
    value or path segment that is base64 of a URL. Not recursive: the caller reads each result again as a URL (and
    so the URLs it carries), which bounds the work by the length of the token times the depth the caller allows."""
    m = _SCHEME_AUTHORITY.match(token)
    rest = token[m.end():] if m else token
    if not rest:
        return []
    cut = min((i for i in (rest.find("?"), rest.find("#")) if i >= 0), default=len(rest))
    out: list[str] = []
    for path in _decodings(rest[:cut]):
        out.append(path)
        out += [d for seg in path.split("/") if (d := _base64_url(seg)) is not None]   # /r/<base64>
    for value in re.split(r"[?#&;]", rest[cut:])[1:]:
        for v in _decodings(value.split("=", 1)[-1].strip()):
            if re.match(r"[\\/]{2}[^\\/]", v):
                out.append("http:" + v)
            elif (decoded := _base64_url(v)) is not None:
                out.append(decoded)
            elif v:
                out.append(v)
    return list(dict.fromkeys(out))


_V4 = rf"{_PART}(?:\.{_PART}){{3}}"
_INTERNAL_SUFFIX = r"(?:localhost|internal|local|home\.arpa|lan)"
_CMD_HOST = re.compile(
    rf"(?<![\w.-])(?:[\w.+-]+@)?({_V4}|\[[0-9a-fA-F:.%]+\]|localhost|[\w-]+(?:\.[\w-]+)*\.{_INTERNAL_SUFFIX})\.?"
    rf"(?!/\d{{1,3}}(?![\w.]))(?=$|[\s/'\"`;|&(),:=<>\\\]])", re.I)


# git's, scp's and rsync's remote without a user, ``host:path`` (``git fetch 127.1:repo`` runs ``ssh 127.1``), as a
# whole word: a short inet_aton form with a dot, a hex number or 0; not a time or a ratio (``12:30:00``: the rest is
# more than digits), nor a single decimal (``git show 1234567:x.py``: a commit of digits names a tree, no host)
_CMD_REMOTE = re.compile(rf"(?:^|(?<=[\s'\"=]))({_PART}(?:\.{_PART}){{1,2}}|0[xX][0-9a-fA-F]{{1,8}}|0):"
                         rf"(?![\d:.]*(?:$|[\s;|&)'\"]))", re.I)


def command_hosts(command: str) -> list[str]:
    """The hosts a shell command's words name without a scheme or port (see the module docstring), as written; also
    the host of a remote ``host:path`` whose host is an address in one to three parts (``127.1:repo``,
    ``0x7f000001:x``, ``0:repo``: git and scp run ``ssh`` to it, which reads it with inet_aton)."""
    found = [m.group(1) for m in _CMD_HOST.finditer(command)]
    found += [m.group(1) for m in _CMD_REMOTE.finditer(command)]
    return list(dict.fromkeys(found))


#: a value's part before any ``/?#\\`` that is as a whole a destination: ``[user@]host[.][:port]``, the host one
#: :data:`_CMD_HOST` reads (a four-part inet_aton address, a bracketed IPv6, localhost, an internal-only suffix)
_WHOLE = re.compile(rf"(?:[^@\s]+@)?({_V4}|\[[0-9a-fA-F:.%]+\]|localhost|[\w-]+(?:\.[\w-]+)*\.{_INTERNAL_SUFFIX})\.?"
                    rf"(?::\d{{0,5}})?", re.I)
_MAX_HEAD = 320   # longer than any user@host:port (a host name is at most 253 characters): not read, bounded work


def whole_host(value: str) -> str | None:
    """The host of a value that is, as a whole (blanks around it aside), a scheme-less destination: ``10.0.0.1``,
    ``169.254.169.254/latest/meta-data``, ``[::1]``, ``localhost/admin``, ``metadata.google.internal``,
    ``u@0x7f.0.0.1:22`` (session 22: an argument of any name holding only that is a destination by its shape, as
    ``{"target": "10.0.0.1"}``); None for anything else (prose that mentions an address is not read)."""
    head = re.split(r"[/?#\\]", value.strip(), maxsplit=1)[0]
    if len(head) > _MAX_HEAD:
        return None
    m = _WHOLE.fullmatch(head)
    return m.group(1) if m else None


#: the machine's static name table, read by ``getaddrinfo`` before DNS (``files`` in nsswitch.conf)
HOSTS_FILE = "/etc/hosts"


def _hosts_entries(text: str) -> tuple[str, ...]:
    out = []
    for line in text.split("\n"):
        words = line.split("#", 1)[0].split()
        out += [f"{name.lower().rstrip('.')} {words[0]}" for name in words[1:]] if len(words) > 1 else []
    return tuple(out)


def hosts_file(name: str, path: str | None = None) -> list[str]:
    """The addresses the machine's hosts file (session 26: read as glibc reads it, ``ADDRESS NAME [ALIAS...]`` lines,
    ``#`` comments, names case-insensitive) gives ``name`` (case-folded, without the root's dot): ``getaddrinfo``
    answers with them before any DNS, so ``curl http://build.example.com/`` with ``10.0.0.5 build.example.com``
    there reaches 10.0.0.5; ["(the hosts file cannot be read here)"] for one that exists but cannot be read.
    ``path``: :data:`HOSTS_FILE` by default."""
    path = path or HOSTS_FILE
    def parse() -> tuple[tuple[str, ...], tuple[str, ...]]:
        text = read_limited(path)
        return ("(unreadable)",) if text is None else _hosts_entries(text), ()
    try:
        found = read_cached(path, "hosts", parse)
    except OSError:
        return [f"(the hosts file {path} cannot be read here)"]
    if found is None:
        return []
    if found[0][:1] == ("(unreadable)",):
        return [f"(the hosts file {path} cannot be read here)"]
    return [e.split(" ", 1)[1] for e in found[0] if e.split(" ", 1)[0] == name]


_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="agentguard-resolve")


def _addresses(name: str) -> list[Address]:
    infos = socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)
    return [ipaddress.ip_address(str(i[4][0]).split("%")[0]) for i in infos]


def resolved_internal(name: str, timeout: float) -> str | None:
    """Why ``name`` is refused after resolution, or None when every address ``getaddrinfo`` returns for it within
    ``timeout`` seconds is global. A name that does not resolve, resolves to nothing or takes longer is refused
    (fail closed); a lookup that outlives its timeout finishes on its worker thread, unread."""
    try:
        found = _POOL.submit(_addresses, name).result(timeout=timeout)
    except concurrent.futures.TimeoutError:
        return f"{name} did not resolve within {timeout:g} s"
    except (OSError, UnicodeError, ValueError) as e:
        return f"{name} does not resolve ({type(e).__name__}: {e})"
    if not found:
        return f"{name} resolves to no address"
    bad = next((ip for ip in found if nonpublic(ip) is not None), None)
    return None if bad is None else f"{name} resolves to {bad}, not a public address"
