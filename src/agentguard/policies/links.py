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
suffix; a host whose suffix is only a private registration (``*.github.io``) still has a public one.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

from ..core.canonical import strip_invisible
from ..core.errors import require

__all__ = ["Link", "deobfuscate", "links", "same_site"]

# spelled-out or defanged dots a person reads as "." ("dot com", "[.]", "(dot)", "{dot}")
_SPELLED_DOT = re.compile(r"\s*(?:\[\s*(?:\.|dot)\s*\]|\(\s*(?:\.|dot)\s*\)|\{\s*(?:\.|dot)\s*\}|\s+dot\s+)\s*", re.I)
_SCHEME = re.compile(r"\b(?:hxxps?|https?|ftp)\s*(?:\[:\]|:)\s*//", re.I)
# a candidate host: labels of letters/digits/hyphens joined by dots, optional port, optional path
_HOST = re.compile(r"(?<![\w@.-])((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63})(?::(\d{1,5}))?"
                   r"(/[^\s'\"<>)\]]*)?", re.I)
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


def deobfuscate(text: str) -> str:
    """``text`` case-folded, NFKC, percent-decoded, with spelled-out and defanged dots and schemes undone."""
    t = strip_invisible(unquote(text)).casefold()
    t = _SCHEME.sub("https://", t)
    return _SPELLED_DOT.sub(".", t)


def _site(host: str) -> str | None:
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


def links(text: str) -> list[Link]:
    """Every link in ``text`` (see the module docstring), in order, without repeats."""
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
        if re.fullmatch(r"[\d.]+", host):
            continue  # a number or an IPv4 (above)
        if (found := _longest_host(host)) is None:
            continue
        full = found[0] == host
        host, site = found[0].removeprefix("www."), found[1]
        form = host + (_path(m.group(3)) if full else "")
        out.setdefault(form, Link(host, site, form))
    return list(out.values())


def same_site(a: str, b: str) -> bool:
    """True when ``a`` and ``b`` name hosts of the same registrable site (``x.evil.com`` ~ ``evil.com``)."""
    la, lb = links(a), links(b)
    return bool(la and lb and la[0].site == lb[0].site)

