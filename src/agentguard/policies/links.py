"""Every link written in a text, found the way a reader (or a browser) would find it.

An outgoing message may carry a link in any form a person or a model follows: ``https://evil.xyz/a``,
``evil.xyz``, ``bit.ly/x``, ``http://203.0.113.7:8080/p``, ``[2001:db8::1]``, ``evil dot com``,
``evil[.]com``, ``evil(dot)co(dot)uk``. Hosts are recognised by the public suffix list, not by a list of
endings: :mod:`tldextract` with its bundled snapshot of the list (``suffix_list_urls=()``, so it never
fetches anything at run time), the maintained parser made for exactly this job. IP literals (v4, v6 in
brackets) are links too.

:func:`links` returns :class:`Link` records (``host``: the whole host, case-folded; ``site``: the
registrable domain, ``example.co.uk`` for ``a.b.example.co.uk``, or the IP; ``form``: host + path, the
canonical form a comparison uses). A file name (``notes.docx``) is not a link: ``docx`` is no public
suffix; a host whose suffix is only a private registration (``*.github.io``) still has a public one, but
its site is the one below the private registration (``evil.github.io`` is not the site of the user's
``myproject.github.io``: shared-hosting names belong to different owners).

**Read the way the client reads it.** A text scan alone misses what a client resolves (issue 27, red team):
``https://trusted.com@evil.xyz/`` goes to ``evil.xyz`` (userinfo), ``http://3405803783/`` and
``http://0xCB.0.0x71.7/`` to ``203.0.113.7``, ``https:\\\\evil.xyz`` and ``https:evil.xyz`` to ``evil.xyz``,
``https://пример.рф`` and the homoglyph ``https://еvil.com`` to IDNA hosts, ``evil。xyz`` (an ideographic full
stop, a UTS 46 label separator) to ``evil.xyz``. Every URL written with a scheme, a ``//`` prefix or userinfo
is therefore also parsed by :mod:`ada_url`, the WHATWG URL parser browsers and Node.js use (the maintained
implementation of the standard: IDNA/UTS 46 hosts, IPv4 in decimal, octal and hex, backslashes, userinfo,
tabs and newlines removed), and by :func:`urllib.parse.urlsplit`, the RFC 3986 split Python's clients use (a
backslash is no separator there: ``https://good.com\\@evil.xyz`` reaches ``evil.xyz``), and each host is a link
too. Both parse the text **as written** as well as deobfuscated: a client does not percent-decode before it
splits, so ``https://good.com%2f@evil.xyz/`` goes to ``evil.xyz`` (userinfo ``good.com%2f``), while the decoded
text reads ``good.com``. A URL carried in a URL (``https://trusted.com/go?to=https%253A%252F%252Fevil.xyz``,
``?next=//evil.xyz``, base64: a redirect endpoint's target, where a click lands) is a link too (session 20).
Hosts are case-folded as IDNA folds them (:func:`fold`: ``paßport.com`` is not
``passport.com``). A host that names no registrable site
(``http://evil/``, ``localhost``, ``evil.internal``) is still a link, its own site (fail closed: only the same
host written by the user matches it).
"""

from __future__ import annotations

import html
import ipaddress
import re
from dataclasses import dataclass
from functools import lru_cache
from html.parser import HTMLParser
from typing import Any
from urllib.parse import unquote, urlsplit

from ..core.canonical import strip_invisible
from ..core.errors import require

__all__ = ["Link", "client_hosts", "deobfuscate", "fold", "links", "local_path", "rendered", "same_site", "site_of",
           "url_tokens"]

# the letters UTS 46 (nontransitional, what browsers, ``requests``/``idna`` and SMTPUTF8 mail use) keeps apart from
# what ``str.casefold`` turns them into: ``paßport.com`` is ``xn--paport-cta.com``, not ``passport.com``
_DEVIATIONS = {"\u00df": "\u00df", "\u1e9e": "\u00df", "\u03c2": "\u03c2"}

# the label separators of UTS 46 (IDNA mapping) that NFKC leaves alone: ideographic and halfwidth full stops
_UTS46_DOTS = str.maketrans({"\u3002": ".", "\uff61": ".", "\uff0e": "."})
# a URL a client parses: a special scheme with any slashes (``https:evil.xyz``, ``https:\\\\evil.xyz``), any
# scheme with ``//``, a scheme-relative ``//host``, or ``user@host`` followed by a port, path, query or fragment
# (userinfo and host bounded: each start scans at most a few hundred characters, never the rest of the text)
_URL_TOKEN = re.compile(
    r"(?<![\w+.-])(?:(?:https?|ftp|wss?|file):[\\/]*|[a-z][a-z0-9+.-]*:[\\/]{2}|[\\/]{2}(?=[^\\/\s])"
    r"|[\w.+%!$&*=~-]{0,64}(?::[^\s@/:]{0,64})?@(?=[^\s@/]{1,253}(?::\d|[/?#])))[^\s<>\"'`]*", re.I)
# a host written with letters outside ASCII (an IDN or a homoglyph), without a scheme
_UHOST = re.compile(r"(?<![\w@.-])((?:[^\W_](?:[\w-]{0,61}[^\W_])?\.)+[^\W_][\w-]{1,62})(/[^\s'\"<>)\]]*)?")

# spelled-out or defanged dots a person reads as "." ("dot com", "[.]", "(dot)", "{dot}")
# (linear: a match starts only where a run of blanks starts, and no blank run is matched twice; the earlier form
# \s*(...|\s+dot\s+)\s* backtracked over every split of a blank run: 2,000 spaces took 19 s, session 19)
_SPELLED_DOT = re.compile(r"(?<!\s)\s*+(?:\[\s*+(?:\.|dot)\s*+\]|\(\s*+(?:\.|dot)\s*+\)|\{\s*+(?:\.|dot)\s*+\}"
                          r"|(?<=\s)dot(?=\s))\s*+", re.I)
_SCHEME = re.compile(r"\b(?:hxxps?|https?|ftp)\s*(?:\[:\]|:)\s*//", re.I)
# a candidate host: labels of letters/digits/hyphens joined by dots, the root's trailing dot, optional port and path
_HOST = re.compile(r"(?<![\w@.-])((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63})(?:\.(?=[:/]))?"
                   r"(?::(\d{1,5}))?"
                   r"(/[^\s'\"<>)\]]*)?", re.I)
# what follows the local part of an e-mail address up to its "@": no host of a link (a mail client sends to it)
_LOCAL_PART = re.compile(r"[\w.+%!$&*=~-]*@")
_IPV4 = re.compile(r"(?<![\w.])((?:\d{1,3}\.){3}\d{1,3})(?::(\d{1,5}))?(/[^\s'\"<>)\]]*)?(?![\w.]*\w)")
_IPV6 = re.compile(r"\[([0-9a-f:.]+)\](?::(\d{1,5}))?(/[^\s'\"<>)\]]*)?", re.I)


@dataclass(frozen=True)
class Link:
    """One link: its host, registrable site, and canonical form (host + path without trailing ``/``)."""

    host: str
    site: str
    form: str


@lru_cache(maxsize=1)
def _extractor() -> Any:
    tld = require("tldextract", "policies")
    return tld.TLDExtract(suffix_list_urls=(), cache_dir=None, include_psl_private_domains=False)


def fold(text: str) -> str:
    """``text`` case-folded the way an IDNA (UTS 46, nontransitional) host is: :meth:`str.casefold`, except that
    ``ß`` and ``ς`` stay themselves and ``ẞ`` becomes ``ß`` (casefold writes ``ss`` and ``σ``, which merges two
    registrable domains, and two mailboxes, a receiving system keeps apart). Equal folds of two hosts therefore
    name one IDNA host (property-tested against :mod:`idna`)."""
    if text.isascii() or not any(c in _DEVIATIONS for c in text):
        return text.casefold()
    return "".join(_DEVIATIONS.get(c) or c.casefold() for c in text)


def deobfuscate(text: str) -> str:
    """``text`` case-folded (:func:`fold`), NFKC, percent-decoded, HTML entities decoded (a mail client renders
    ``evil&#46;xyz`` as ``evil.xyz``), with spelled-out and defanged dots and schemes undone."""
    t = fold(strip_invisible(html.unescape(unquote(text))).translate(_UTS46_DOTS))
    t = _SCHEME.sub("https://", t)
    return _SPELLED_DOT.sub(".", t)


@lru_cache(maxsize=8192)
def _site(host: str) -> str | None:
    """The registrable site of ``host``: below a private registration of the list when there is one
    (``evil.github.io`` and ``myproject.github.io`` are two owners' sites, not one ``github.io``)."""
    r = _extractor()(host, include_psl_private_domains=True)
    if not r.domain:   # the private suffix itself (``github.io``): its public registration
        r = _extractor()(host)
    if not r.suffix or not r.domain:
        return None
    return f"{r.domain}.{r.suffix}"


def _longest_host(host: str) -> tuple[str, str] | None:
    """The longest leading run of ``host``'s labels that ends in a public suffix, with its site
    (``our-company.com.they`` -> ``our-company.com``: a sentence run on after a link without a space)."""
    labels = host.split(".")
    for k in range(len(labels), 1, -1):
        cand = ".".join(labels[:k])
        if (site := _site(cand)) is not None:
            return cand, site
    return None


def _path(p: str | None) -> str:
    p = (p or "").split("#", 1)[0].rstrip(".,;:!?")
    return p.rstrip("/")


@lru_cache(maxsize=1)
def _ada() -> Any:
    return require("ada_url", "policies")


def _parsed(url: str) -> Link | None:
    """The link a client opening ``url`` reaches (WHATWG parse); ``None`` for an invalid URL or one without a
    host (``javascript:``, ``data:``, ``mailto:``: their text is scanned as text)."""
    try:
        u = _ada().URL(url)
    except ValueError:
        return None
    host = str(u.hostname or "").rstrip(".")
    if not host:
        return None
    path = _path(str(u.pathname) + str(u.search))
    if host.startswith("[") or re.fullmatch(r"[\d.]+", host):
        return Link(host, host, host + path)
    host = host.removeprefix("www.")
    site = _site(host) or host   # no registrable site: the host is its own (fail closed)
    return Link(host, site, host + path)


def _python_parsed(url: str) -> Link | None:
    """The link Python's clients reach for ``url`` (``urllib``/``requests`` split it by RFC 3986, where a
    backslash is no separator: ``https://good.com\\@evil.xyz`` goes to ``evil.xyz``, WHATWG's to ``good.com``), its
    host mapped as :mod:`idna` (UTS 46) maps it; ``None`` without a host or for a URL it cannot split."""
    try:
        host = (urlsplit(url).hostname or "").rstrip(".")
    except ValueError:
        return None
    if not host or not re.match(r"[a-z][a-z0-9+.-]*://", url, re.I):
        return None
    if not host.isascii():
        try:
            host = require("idna", "policies").encode(host, uts46=True).decode()
        except Exception:  # noqa: BLE001 - no client resolves it; the host as written is still no site of the user's
            pass
    if ":" in host and not host.startswith("["):   # IPv6 as urlsplit gives it (``http://x[::1]/`` too): bracketed
        host = f"[{host}]"
    return _parsed(f"https://{host}{_path(urlsplit(url).path)}") if re.fullmatch(r"[\w.:\[\]-]+", host) else \
        Link(host, host, host)


def _client_links(t: str, out: dict[str, Link]) -> None:
    """The links of the URLs and non-ASCII hosts in ``t`` that a client resolves (see the module docstring),
    added to ``out`` unless the text scan already found their host (with its path, when the URL has one:
    ``https:\\\\evil.xyz\\?k=<secret>`` keeps its query)."""
    hosts = {lk.host for lk in out.values()}
    bare = {lk.host for lk in out.values() if lk.form == lk.host}
    for m in _URL_TOKEN.finditer(t):
        tok = m.group(0)
        url = tok if re.match(r"[a-z][a-z0-9+.-]*:", tok, re.I) else "https:" + tok if tok[:1] in "\\/" else "https://" + tok
        for lk in (_parsed(url), _python_parsed(url)):   # WHATWG (browsers) and RFC 3986 (Python) clients
            if lk is not None and (lk.host not in hosts or (lk.host in bare and lk.form != lk.host)):
                out.setdefault(lk.form, lk)
                hosts.add(lk.host)
    if not t.isascii():
        for m in _UHOST.finditer(t):
            if m.group(1).isascii() or _LOCAL_PART.match(t, m.end(1)) or (lk := _parsed("https://" + m.group(0))) is None:
                continue
            found = _longest_host(lk.host) if lk.site == lk.host else (lk.host, lk.site)
            if found is not None and found[0] not in hosts:
                out.setdefault(found[0] + (_path(m.group(2)) if found[0] == lk.host else ""),
                               Link(found[0], found[1], found[0] + (_path(m.group(2)) if found[0] == lk.host else "")))
                hosts.add(found[0])


_SCHEMED = re.compile(r"[a-z][a-z0-9+.-]*:", re.I)


def _carried_links(t: str, out: dict[str, Link], depth: int = 0) -> None:
    """The links of the URLs each URL of ``t`` carries in its path, query or fragment (a redirect endpoint's target:
    ``https://trusted.com/go?to=https%253A%252F%252Fevil.xyz``, ``?next=//evil.xyz``, base64:
    :func:`.network_hosts.carried_urls`), added to ``out``; only URLs with a scheme (a path ``/a//b`` or
    ``/@user/`` is no link), three URLs deep at most."""
    from .network_hosts import carried_urls   # (no cycle at import: network_hosts imports nothing of this module)

    if not any(c in t for c in "?#%/"):
        return
    for m in _URL_TOKEN.finditer(t):
        for inner in carried_urls(m.group(0)):
            for tok in (x.group(0) for x in _URL_TOKEN.finditer(inner)):
                if _SCHEMED.match(tok):
                    _client_links(tok, out)
                    if depth < 2:
                        _carried_links(tok, out, depth + 1)


def url_tokens(text: str) -> list[str]:
    """The URLs written in ``text`` that a client parses (a scheme, ``//`` or userinfo: the grammar of
    :func:`links`'s client reading), as written: case, percent-encoding and query kept; a closing bracket the URL
    does not open and final punctuation are the text's, not the URL's (``![x](https://a.b/?k=v)``: ``...?k=v``)."""
    out = []
    shown = rendered(text)   # a Markdown renderer's link destinations: backslash escapes removed
    for m in _URL_TOKEN.finditer(html.unescape(text if shown is None else f"{text}\n{shown}")):
        tok = m.group(0)
        while tok and (tok[-1] in ".,;:!?" or any(tok[-1] == c and tok.count(o) < tok.count(c) for o, c in _PAIRS)):
            tok = tok[:-1]
        out.append(tok)
    return out


_PAIRS = (("(", ")"), ("[", "]"), ("{", "}"))


def links(text: str) -> list[Link]:
    """Every link in ``text`` (see the module docstring), in order, without repeats."""
    return list(_links(text) if len(text) <= 2048 else _links.__wrapped__(text))


@lru_cache(maxsize=1)
def _markdown() -> Any:
    from markdown_it import MarkdownIt   # rich's dependency: always installed with the core

    return MarkdownIt("commonmark")


def rendered(text: str) -> str | None:
    """``text`` as a Markdown renderer shows it (HTML, by markdown-it-py's CommonMark renderer), when it holds a
    backslash: a backslash before ASCII punctuation is an escape the renderer removes, in text and in a link's
    destination (``[x](https://evil\\.xyz/?k=ghp\\_...)`` opens ``https://evil.xyz/?k=ghp_...``), the one
    rewriting of CommonMark the other readings (entities, percent-escapes) do not undo. None without a backslash."""
    if "\\" not in text:
        return None
    try:
        return str(_markdown().render(text))
    except Exception:  # noqa: BLE001 - the parser accepts any text; a failure leaves the text as written
        return None


@lru_cache(maxsize=16384)   # a run reads the same values again and again (each check, each canonical form)
def _links(text: str, render: bool = True) -> tuple[Link, ...]:
    if render and (shown := rendered(text)) is not None:   # as written, then as a Markdown renderer shows it
        return tuple({lk.form: lk for lk in (*_links(text, False), *_links(shown, False))}.values())
    t = deobfuscate(text)
    out: dict[str, Link] = {}
    for m in _IPV6.finditer(t):
        try:
            ip = ipaddress.IPv6Address(m.group(1))
        except ValueError:
            continue
        out.setdefault(f"[{ip}]" + _path(m.group(3)), Link(f"[{ip}]", f"[{ip}]", f"[{ip}]" + _path(m.group(3))))
    for m in _IPV4.finditer(t):
        try:
            ip4 = str(ipaddress.IPv4Address(m.group(1)))
        except ValueError:
            continue
        form = ip4 + _path(m.group(3))
        out.setdefault(form, Link(ip4, ip4, form))
    for m in _HOST.finditer(t):
        host = m.group(1).strip(".")
        if re.fullmatch(r"[\d.]+", host) or _LOCAL_PART.match(t, m.end(1)):
            continue  # a number or an IPv4 (above); an e-mail address's local part (``devconf.berlin.26@x.com``)
        if (found := _longest_host(host)) is None:
            continue
        full = found[0] == host
        host, site = found[0].removeprefix("www."), found[1]
        form = host + (_path(m.group(3)) if full else "")
        out.setdefault(form, Link(host, site, form))
    if any(c in t for c in ":/\\@") or not t.isascii():
        _client_links(t, out)
    raw = html.unescape(text)   # what the client parses: entities rendered, nothing percent-decoded or folded
    if any(c in raw for c in ":/\\@") or not raw.isascii():
        _client_links(raw, out)
        _carried_links(raw, out)
    for value in _attribute_values(text) if "<" in text and "=" in text else ():   # a renderer's URL attributes
        _client_links(re.sub(r"[\t\n\r]", "", value.strip()), out)   # WHATWG drops tabs and newlines in a URL
    return tuple(out.values())


class _Attributes(HTMLParser):
    """The attribute values of an HTML text's tags, read by the standard library's HTML tokenizer."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.values: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.values += [v for _, v in attrs if v]


def _attribute_values(text: str) -> list[str]:
    """Each attribute value of the HTML tags in ``text`` (``href``, ``src``, ``action``... as a renderer reads them:
    entities decoded, a tab or newline inside kept), so ``<a href="https://good.com&#9;@evil.xyz">`` is the URL
    ``https://good.com@evil.xyz`` a browser opens."""
    p = _Attributes()
    try:
        p.feed(text)
        p.close()
    except Exception:  # noqa: BLE001 - the tokenizer is lenient; a text it cannot read has no attribute it read
        return []
    return p.values


_PATH_CHARS = re.compile(r"[\w .,()+~'!$&=\[\]{}/-]+")


def local_path(value: str) -> bool:
    """Whether ``value`` is a local file name or path by an allow-list grammar: an optional drive (``C:\\``),
    then names of word characters, spaces and ``.,()+~'!$&=[]{}-`` joined by single ``/``; a relative path's
    first directory is no host and no part is an IP literal. A scheme, ``//``, UNC, ``:``, ``?``, ``#``,
    ``@``, ``%``, a leading ``www.``, a backslash elsewhere or anything unreadable is not local (``bank.com/pay/x``,
    ``https://...``, ``\\\\?\\UNC\\host\\s``, ``user@host:/p``): the caller reads it as a link (fail closed)."""
    t = strip_invisible(value).translate(_UTS46_DOTS).strip()
    if re.match(r"[a-z]:\\(?!\\)", t, re.I):
        t = "/" + t[3:].replace("\\", "/")
    if not t or "//" in t or t.casefold().startswith("www.") or not _PATH_CHARS.fullmatch(t) or _IPV4.search(t) or re.search(r"\d+(?:\.\d+){3}", t):
        return False
    first, sep, _ = t.removeprefix("~").partition("/")
    return not (sep and first not in ("", ".", "..") and links(first))


def same_site(a: str, b: str) -> bool:
    """True when ``a`` and ``b`` name hosts of the same registrable site (``x.evil.com`` ~ ``evil.com``)."""
    la, lb = links(a), links(b)
    return bool(la and lb and la[0].site == lb[0].site)



def client_hosts(text: str) -> list[str]:
    """The host of every URL written in ``text`` (a scheme, ``//`` or userinfo: :func:`url_tokens`'s grammar), as
    the clients that connect read it: the WHATWG parse (browsers, Node.js: IPv4 in decimal, octal and hex, IDNA,
    backslashes) and the RFC 3986 split Python's clients use, each on the text as written and deobfuscated
    (``https://trusted.com@169.254.169.254/``, ``http://2852039166/`` and ``http:\\\\0x7f.1`` name 169.254.169.254
    and 127.0.0.1). Hosts as the parsers give them (IPv6 in brackets), ``www.`` dropped, without repeats."""
    return list(_client_hosts(text) if len(text) <= 2048 else _client_hosts.__wrapped__(text))


@lru_cache(maxsize=16384)   # a run sends the same URLs again and again
def _client_hosts(text: str) -> tuple[str, ...]:
    out: dict[str, Link] = {}
    for t in (deobfuscate(text), html.unescape(text)):
        if any(c in t for c in ":/\\@"):
            _client_links(t, out)
    return tuple(dict.fromkeys(lk.host for lk in out.values()))


def site_of(host: str) -> str | None:
    """The registrable site of a host name (``a.b.example.co.uk`` -> ``example.co.uk``), or None when the name has
    no public suffix (``localhost``, ``metadata.google.internal``, ``intranet``: no public DNS name)."""
    return _site(fold(host).rstrip("."))
