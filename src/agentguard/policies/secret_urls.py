"""The pieces of the URLs in a text as their receiver reads them apart, for the secret scanner
(:mod:`agentguard.policies.secrets`; moved out of :mod:`agentguard.policies.secret_views` in session 22, which
re-exports them): a key cut into query values, path segments or subdomain labels is joined back from them.
Parsing is the standard library's (``urllib.parse``: what Python clients use) after
:func:`agentguard.policies.links.url_tokens` finds the URLs.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import parse_qsl, unquote, urlsplit

__all__ = ["url_fields", "url_pieces"]


#: a host name written without a scheme (``dig <piece>.<piece>.evil.com``, ``nslookup``, ``ping``): four labels or more
_BARE_HOST = re.compile(r"(?<![\w@./-])((?:[A-Za-z0-9_-]{1,63}\.){3,}[A-Za-z][A-Za-z0-9-]{1,62})(?![\w.-])")


def _written_host(netloc: str) -> str:
    """The host of a URL's authority as written (case kept: ``dig`` and many resolvers send it so; a receiver
    reading its DNS log sees it), without userinfo and port."""
    host = netloc.rpartition("@")[2]
    return host if host.startswith("[") else host.rsplit(":", 1)[0]


def _host_pieces(host: str) -> list[str]:
    """A host's pieces a receiver reads apart: a name's labels left of the last two; an IPv6 literal's eight groups,
    written out (``2001:db8:0:1:6768:705f:6142:3364``: the interface half of an address in the receiver's own
    prefix carries 8 bytes per request; the prefix, repeated, is the template)."""
    if host.startswith("["):
        try:
            return ipaddress.IPv6Address(host.strip("[]").split("%")[0]).exploded.split(":")
        except ValueError:
            return [host]
    return host.split(".")[:-2]


def url_pieces(text: str) -> list[str]:
    """The pieces the receiver of each URL in ``text`` reads apart and may join back: per URL a client parses
    (:func:`~agentguard.policies.links.url_tokens`), its host's labels left of the last two as written
    (``<piece>.evil.com``: DNS exfiltration; case kept) or an IPv6 literal's groups, its path segments, its query values and its fragment,
    percent-decoded, in order; a host name of four labels or more written without a scheme (``dig a.b.evil.com``)
    gives its labels too; the text around is one more piece. Without either: ``[text]``. A key cut into ``?p=``
    values of two fetches is one key again once the pieces are joined (:mod:`agentguard.policies.secrets`)."""
    from .links import url_tokens

    toks = url_tokens(text) if any(c in text for c in ":/\\@") else []
    out, kept, pos = [], [], 0   # the text around the URLs, cut out in one pass (a replace per URL was quadratic)
    for tok in toks:
        at = text.find(tok, pos)
        if at >= 0:
            kept.append(text[pos:at])
            pos = at + len(tok)
        try:
            u = urlsplit(tok if "//" in tok[:12] else "https://" + tok.lstrip("\\/"))
            host = _written_host(u.netloc) if u.hostname else ""
        except ValueError:   # not split the way a client would: the token is read whole
            out.append(tok)
            continue
        out += _host_pieces(host) + [unquote(p) for p in u.path.split("/") if p]
        out += [v for _, v in parse_qsl(u.query, keep_blank_values=True) if v] + ([unquote(u.fragment)] if u.fragment else [])
    rest = " ".join(kept + [text[pos:]]) if toks else text
    kept, pos = [], 0
    for m in _BARE_HOST.finditer(rest) if "." in rest else ():
        labels = m.group(1).split(".")[:-2]
        if len(labels) >= 2 and sum(map(len, labels)) >= 16:   # room for a key, cut into two labels or more
            kept.append(rest[pos:m.start(1)])
            pos = m.end(1)
            out += labels
    if not out:
        return [text]
    rest = " ".join(kept + [rest[pos:]])
    return [p for p in out if p] + ([rest] if rest.strip() else [])


def url_fields(text: str) -> dict[str, list[str]]:
    """The query values of the URLs in ``text`` by their parameter's name (``{"k": [...]}``), in order: what a
    receiver logs per field, so the pieces of one field join back whatever else varies between the requests
    (``/1.png?k=<half>`` then ``/2.png?k=<half>``: the counter in the path is no template)."""
    from .links import url_tokens

    out: dict[str, list[str]] = {}
    for tok in url_tokens(text) if "?" in text else ():
        try:
            query = urlsplit(tok if "//" in tok[:12] else "https://" + tok.lstrip("\\/")).query
        except ValueError:
            continue
        for k, v in parse_qsl(query, keep_blank_values=True):
            if v:
                out.setdefault(k, []).append(v)
    return out
