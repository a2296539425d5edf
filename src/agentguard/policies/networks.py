"""Network destinations: a tool call never reaches a host off the public internet (server-side request forgery).

An agent told by a web page or a mail to fetch ``http://169.254.169.254/latest/meta-data/iam/security-credentials/``
hands the page the machine's cloud credentials; ``http://localhost:2375/containers/json`` drives the Docker daemon,
``http://10.0.0.7:8500/v1/kv/`` a service mesh's secrets. :class:`NetworkGuard` refuses a call whose arguments name
such a destination, read as the client that connects reads it (:func:`destinations`):

- every URL written with a scheme or userinfo in any string of the arguments, at any depth (a shell command's
  words, a JSON text, a list; a scheme-relative ``//host/x`` or a UNC ``\\\\host\\share`` is read as a path),
  parsed as browsers and Node.js parse it (WHATWG, :mod:`ada_url`) and as Python's clients split it
  (:func:`urllib.parse.urlsplit`), as written and deobfuscated (:func:`.links.client_hosts`): ``http://2852039166/``,
  ``http://0251.0376.0251.0376/``, ``http://[::ffff:a9fe:a9fe]/``, ``https://trusted.com@169.254.169.254/`` and
  ``http:\\\\169.254.169.254`` all reach 169.254.169.254;
- an scp-style remote ``user@host:path`` (``git fetch git@10.0.0.7:repo.git``, scp, rsync);
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

Not covered (no static reading can see it): a public name that resolves to an internal address (DNS rebinding,
``169.254.169.254.nip.io``), a public URL that redirects to an internal one, a bare IP address written in prose
without a scheme, port or host-named argument. Those need the client itself to refuse internal addresses after
resolution (an egress proxy or firewall); this guard removes every spelled-out path. Why no SSRF library: the
maintained ones (``advocate``, ``ssrf-filter``) wrap a ``requests`` session at connection time, which is where the
tool runs, not where a call is decided; the parsing here is the two maintained URL parsers plus :mod:`ipaddress`.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from typing import Any, Mapping, Sequence

from ..core.errors import InputError
from ..core.guard import BaseGuard
from ..core.types import Context, Decision, Verdict
from .arguments import keyed_values, leaves
from .links import client_hosts, deobfuscate, fold, site_of, url_tokens
from .rules import as_tool_call

__all__ = ["HOST_ARGS", "NetworkGuard", "destinations", "internal"]

#: argument names (canonical) whose values are hosts a tool connects to (read as a URL's host)
HOST_ARGS = frozenset({"host", "hosts", "hostname", "server", "servers", "endpoint", "proxy", "proxies", "base_url",
                       "api_base", "api_url", "server_url", "ip", "ip_address", "address", "addr", "remote", "domain",
                       "url", "uri", "link", "href", "webhook", "webhook_url", "callback", "callback_url", "origin"})

# ``host:port`` in text: a bracketed IPv6, a dotted name or address, or localhost (``12:30`` and ``code:404`` are text)
_HOST_PORT = re.compile(r"(?<![\w@.:/-])((?:\[[0-9a-fA-F:.%]+\]|[\w-]+(?:\.[\w-]+)+\.?|localhost\.?):\d{1,5})(?![\w.])",
                        re.I)
_PROSE_NUMBER = re.compile(r"(?!(?:\d+\.){3}\d+$)[0-9.]+")  # a number, not four dotted parts: "1.5:1" is a ratio in text
_IPV4_ATON = re.compile(r"(?:0[xX][0-9a-fA-F]*|[0-9]+)(?:\.(?:0[xX][0-9a-fA-F]*|[0-9]+)){0,3}")
# git's, scp's and rsync's remote form ``user@host:path`` (git@10.0.0.7:repo.git)
_SCP = re.compile(r"(?<![\w/.@-])[\w.+-]+@(\[[0-9a-fA-F:.%]+\]|[\w.-]+):(?!\d{1,5}(?:[/\s]|$))")
_URLISH = re.compile(r"[:@/\\%&]")  # what every reading below needs (or a decoding makes: %3A, &#58;)
_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*:(?!\d)", re.I)  # a URL (read above), not host:port
_TEREDO = ipaddress.ip_network("2001::/32")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


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


def _embedded(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """``ip`` and every IPv4 address an IPv6 one carries (mapped, 6to4, NAT64, Teredo server and client)."""
    out: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = [ip]
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            out.append(ip.ipv4_mapped)
        if ip.sixtofour is not None:
            out.append(ip.sixtofour)
        if ip in _NAT64:
            out.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
        if ip in _TEREDO and ip.teredo is not None:
            out += list(ip.teredo)
    return out


def internal(host: str) -> str | None:
    """Why ``host`` (as a client parsed it) is off the public internet, or None when it is a public destination."""
    ip = _address(host)
    if ip is not None:
        for x in _embedded(ip):
            if not x.is_global:
                return f"{host} is not a public address ({x})"
        return None
    name = fold(host).rstrip(".")
    if not name or site_of(name) is None:
        return f"{host} is not a public DNS name (no public suffix)"
    return None


def destinations(arguments: Mapping[str, Any]) -> list[str] | None:
    """The hosts a tool may connect to for these arguments (see the module docstring), or None when the
    arguments cannot be read whole (nested too deep, too many values: the guard refuses them unread)."""
    texts = leaves(arguments)
    named = keyed_values(arguments, lambda k: k in HOST_ARGS)
    if texts is None or named is None:
        return None
    hosts: list[str] = []
    for text in texts:
        if text.isascii() and not _URLISH.search(text):
            continue  # no URL, host:port or remote, and nothing a decoding turns into one
        for token in dict.fromkeys(url_tokens(text) + url_tokens(deobfuscate(text))):
            if token[:1] not in "/\\":  # a scheme or userinfo; "//x" and "\\\\x" are paths too (a UNC share)
                hosts += client_hosts(token)
        hosts += [h for m in _HOST_PORT.finditer(text) if not _PROSE_NUMBER.fullmatch(m.group(1).rsplit(":", 1)[0])
                  for h in client_hosts("http://" + m.group(1))]
        hosts += [h for m in _SCP.finditer(text) for h in client_hosts("ssh://x@" + m.group(1))]
    for value in named:
        for text in leaves(value) or []:
            if text.strip() and not _SCHEME.match(text.strip()) and not re.search(r"\s", text.strip()):
                hosts += client_hosts("http://" + text.strip())
    return list(dict.fromkeys(hosts))


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
        self._nets: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        for entry in [allow] if isinstance(allow, str) else list(allow):
            if not isinstance(entry, str) or not entry.strip():
                raise InputError(f"{name}.allow: a host or a network (CIDR), not {entry!r}")
            try:
                self._nets.append(ipaddress.ip_network(entry.strip(), strict=False))
            except ValueError:
                self._hosts.add(fold(entry.strip()).rstrip("."))
        self._allowed = Verdict.allow(self.name)

    def __repr__(self) -> str:
        return f"NetworkGuard(allow={sorted(self._hosts) + [str(n) for n in self._nets]!r})"

    @classmethod
    def from_config(cls, params: Mapping[str, Any]) -> "NetworkGuard":
        """``{"allow": [...], "decision": ..., "name": ...}`` (a ``[[guards]]`` table of type ``network-rules``)."""
        unknown = sorted(set(params) - {"allow", "decision", "name"})
        if unknown:
            raise InputError(f"unknown key(s) {', '.join(unknown)} for network-rules (known: allow, decision, name)")
        return cls(allow=params.get("allow", ()), decision=params.get("decision", "REJECT"),
                   name=str(params.get("name", "network-rules")))

    def _excepted(self, host: str) -> bool:
        if fold(host).rstrip(".") in self._hosts:
            return True
        ip = _address(host)
        return ip is not None and any(x.version == n.version and x in n for x in _embedded(ip) for n in self._nets)

    def check(self, context: Context, proposal: Any) -> Verdict:
        call = as_tool_call(proposal)
        if call is None:
            return self._allowed
        hosts = destinations(call.arguments)
        if hosts is None:
            return Verdict(self.decision, f"the arguments of {call.name} are nested too deep or too many to read "
                                          "their destinations", self.name)
        found = [(h, why) for h in hosts if (why := internal(h)) is not None and not self._excepted(h)]
        if not found:
            return self._allowed
        return Verdict(self.decision, f"{call.name} would connect to {found[0][1]}", self.name,
                       details={"destinations": [h for h, _ in found]})

