"""How the secret scanner (:mod:`agentguard.policies.secrets`) joins pieces back as a receiver joins them: a call's
string leaves (and its argument names next to their values), the pieces of its URLs, each query field's values, in
the orders a receiver may join them (moved out of ``secrets.py`` in session 22, which re-exports the public names).
"""

from __future__ import annotations

import itertools
from typing import Any, Iterable, Iterator, Mapping, Sequence

from .secret_urls import url_fields, url_pieces
from .secret_windows import OVERLAP, WINDOW

__all__ = ["fields_of", "pieces", "string_leaves", "varying"]

#: how deep a value's nesting is read (a value deeper is ``unreadable``: :mod:`agentguard.policies.secrets`)
MAX_NESTING = 8


#: split across at most this many string leaves (and this many characters), every order of the pieces is read
#: joined; more pieces are read in their order, reversed and sorted
_PERMUTED_LEAVES, _PERMUTED_CHARS = 4, 4096
#: more pieces than this are read joined in their order only (not reversed or sorted): a key cut into more than 64
#: pieces of one call and reordered is not read (stated; pieces over calls: secret_fragments.KnownSecrets.covering)
_REORDERED_MAX = 64


def _elided(parts: list[str]) -> list[str]:
    """``parts`` with the middle of each piece longer than ``2 * OVERLAP`` replaced by `` \x00 `` (session 22): a
    joined reading exists for what crosses a junction of two pieces, which lies within :data:`OVERLAP` characters of
    it (a key, its encodings: far shorter); each piece is read whole on its own. Without this a 1 MB argument was
    read again whole in every order (a scan cost ten readings of it). The marker is a token no reading joins
    (a blank on each side; no decoder or view reads a NUL)."""
    if sum(map(len, parts)) <= WINDOW:
        return parts
    return [p if len(p) <= 2 * OVERLAP else f"{p[:OVERLAP]} \x00 {p[-OVERLAP:]}" for p in parts]


def _orders(leaves: list[str]) -> Iterator[str]:
    """The leaves joined in each order a receiver may join them: ``{"p1": "...MPLE", "p0": "AKIA..."}`` is written
    in one order and read in another (a template, sorted keys); over :data:`_REORDERED_MAX` pieces, as written."""
    if len(leaves) <= _PERMUTED_LEAVES and sum(map(len, leaves)) <= _PERMUTED_CHARS:
        yield from dict.fromkeys("".join(p) for p in itertools.permutations(leaves))
    elif len(leaves) > _REORDERED_MAX:   # session 22: a text of thousands of URLs was read three more times whole
        yield "".join(leaves)
    else:
        yield from dict.fromkeys(["".join(leaves), "".join(reversed(leaves)), "".join(sorted(leaves))])


def fields_of(texts: Iterable[str]) -> dict[str, list[str]]:
    """The query values of every URL in ``texts`` by parameter name, in order (:func:`.secret_views.url_fields`)."""
    out: dict[str, list[str]] = {}
    for t in texts:
        for k, vals in url_fields(t).items():
            out.setdefault(k, []).extend(vals)
    return out


def string_leaves(value: Any, depth: int = 0) -> Iterator[str]:
    """The string leaves of ``value`` in order (mapping keys are names, not content: not included)."""
    if isinstance(value, str):
        yield value
    elif depth <= MAX_NESTING and isinstance(value, Mapping):
        for v in value.values():
            yield from string_leaves(v, depth + 1)
    elif depth <= MAX_NESTING and isinstance(value, (list, tuple)):
        for v in value:
            yield from string_leaves(v, depth + 1)


def _walk(value: Any, depth: int = 0) -> Iterator[tuple[bool, str]]:
    """The mapping keys (``True``, as text) and the scalar leaves (``False``) of ``value`` in written order."""
    if isinstance(value, str):
        yield False, value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield False, str(value)
    elif depth <= MAX_NESTING and isinstance(value, Mapping):
        for k, v in value.items():
            yield True, str(k)
            yield from _walk(v, depth + 1)
    elif depth <= MAX_NESTING and isinstance(value, (list, tuple)):
        for v in value:
            yield from _walk(v, depth + 1)


def _names_and_leaves(value: Any) -> list[str]:
    """The mapping keys and the scalar leaves of ``value`` in order (``{"AKIAIOSF": "ODNN7EXAMPLE"}`` -> both): how a
    receiver sees a call's arguments serialised (``AKIAIOSF=ODNN7EXAMPLE`` by ``urlencode``, ``{"AKIAIOSF":
    "ODNN7EXAMPLE"}`` by ``json.dumps``), names next to values."""
    return [text for _, text in _walk(value)]


def pieces(value: Any) -> list[str]:
    """The string leaves of ``value`` in order, each URL in them read as the pieces its receiver reads apart
    (:func:`~agentguard.policies.secret_views.url_pieces`): what a receiver may join back into one value."""
    return [p for leaf in string_leaves(value) for p in url_pieces(leaf)]


def varying(groups: Sequence[Sequence[str]]) -> list[list[str]]:
    """Per group of ``groups`` (one per URL, argument or call), its pieces that no other group holds, in order:
    what changes from one request to the next. A piece the requests repeat (``i.png`` of
    ``https://evil.xyz/i.png?d=<piece>``) is the template, which a receiver drops before it joins the rest."""
    held: dict[str, int] = {}
    for g in groups:
        for p in set(g):
            held[p] = held.get(p, 0) + 1
    return [[p for p in g if held[p] == 1] for g in groups]


def _names(value: Any) -> list[str]:
    """The mapping keys of ``value`` at any depth (as text), in order."""
    return [text for is_name, text in _walk(value) if is_name]
