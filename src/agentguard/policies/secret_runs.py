"""The binary-to-text runs of a text found at once, with array operations (session 23): the search of the secret
scanner's decodings (:func:`agentguard.policies.secret_views.decodings`), its largest cost on benign text.

Every reading of a string (the text, reversed, ROT13, without its separators...) is searched for the runs a decoder
reads: base64, base32, hex, base85 and Ascii85 alphabets. Each was one regular expression, and Python's engine tries
a character class (and a look-behind) at every position: ~0.3-1 us a character for the five, on every reading, which
made the scan ~10-17 us a character. Here the text's bytes are looked up in one table per alphabet (``numpy``, a
dependency of the core already) and the runs are read off where the lookup changes.

**Guaranteed** (``tests/policies/test_secret_runs.py``, a differential property against the expressions): for an
ASCII text without ``<~``, :func:`runs` gives, per alphabet, exactly the matches ``re.findall`` gives for the
expression of :mod:`~agentguard.policies.secret_views`, in the same order:

- ``base64`` ``[A-Za-z0-9+/_-]{16,}={0,2}``, ``base85`` ``[0-9A-Za-z!#$%&()*+\\-;<=>?@^_`{|}~]{20,}``: each maximal run
  of the alphabet that is long enough (a match starts at a run's first character: the ones after it see a shorter
  run), with up to two ``=`` after it for base64;
- ``hex`` ``(?<![0-9A-Fa-f])[0-9A-Fa-f]{24,}(?![0-9A-Fa-f])`` and the bare Ascii85 run
  ``(?<![!-u])([!-u]{20,})(?![!-u])``: the maximal runs, long enough (the look-arounds say maximal);
- ``base32`` ``(?<![A-Za-z0-9])[A-Za-z2-7]{16,}={0,6}``: the maximal runs whose preceding character is no letter or
  digit (``0``, ``1``, ``8``, ``9`` end a run without opening a match), with up to six ``=``.

Other texts (non-ASCII, where the expressions' classes are tried on code points, or holding Ascii85's ``<~`` frame)
return None: the caller searches with the expressions. No library finds runs of several alphabets at once; a regular
expression engine with a DFA (RE2, not installed) would still search five times.
"""

from __future__ import annotations

import re
from typing import Callable

import numpy as np

__all__ = ["NUMBER_NEEDS", "runs"]

_ALNUM = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
#: (layer, alphabet, shortest run, most ``=`` after it, whether the character before must be no letter or digit)
_LAYERS: tuple[tuple[str, bytes, int, int, bool], ...] = (
    ("base64", _ALNUM + b"+/_-", 16, 2, False),
    ("base32", _ALNUM[:52] + b"234567", 16, 6, True),
    ("hex", b"0123456789ABCDEFabcdef", 24, 0, False),
    ("base85", _ALNUM + b"!#$%&()*+-;<=>?@^_`{|}~", 20, 0, False),
    ("ascii85", bytes(range(ord("!"), ord("u") + 1)), 20, 0, False),
)


def _table(chars: bytes) -> np.ndarray:
    t = np.zeros(256, dtype=np.int8)
    t[list(chars)] = 1
    return t


_TABLES = [(layer, _table(chars), n, pad, after) for layer, chars, n, pad, after in _LAYERS]
_IS_ALNUM = _table(_ALNUM).astype(bool)
_EQ = ord("=")


def runs(text: str) -> list[tuple[str, list[str]]] | None:
    """``[(layer, distinct runs in order of first occurrence), ...]`` for the five alphabets (see the module doc), or
    None for a text this does not read (non-ASCII, or holding ``<~``)."""
    if not text.isascii() or "<~" in text:
        return None
    raw = text.encode("ascii")
    b = np.frombuffer(raw, dtype=np.uint8)
    n = len(raw)
    out: list[tuple[str, list[str]]] = []
    for layer, table, least, pad, after in _TABLES:
        inside = np.zeros(n + 2, dtype=np.int8)
        inside[1:-1] = table[b]
        edges = np.diff(inside)
        starts = np.flatnonzero(edges == 1)
        ends = np.flatnonzero(edges == -1)
        keep = ends - starts >= least
        if after:
            keep &= (starts == 0) | ~_IS_ALNUM[b[starts - 1]]
        found: dict[str, None] = {}
        for s, e in zip(starts[keep].tolist(), ends[keep].tolist()):
            if pad:
                stop = e
                while stop < n and stop - e < pad and raw[stop] == _EQ:
                    stop += 1
                e = stop
            found.setdefault(text[s:e], None)
        out.append((layer, list(found)))
    return out


_DIGITS_SEP = re.compile(r"\d\d[^\w\n]")
#: per notation of ``secret_views._NUMBER_RUNS`` (decimal, hex numbers, octal, binary), what every run of it holds:
#: two digits before a separator (binary: seven ``0``/``1`` digits before one), the ``0x``/``U+``/``\\u{`` prefix, the
#: ``0o``/``\\`` prefix. Searched before the run's expression, which costs ~100 ns a character on any text with a
#: digit; a text without it holds no run of that notation.
NUMBER_NEEDS: tuple[Callable[[str], bool], ...] = (
    lambda t: _DIGITS_SEP.search(t) is not None,
    lambda t: "0x" in t or "0X" in t or "u+" in t or "U+" in t or "\\u{" in t,
    lambda t: "0o" in t or "\\" in t,
    lambda t: _DIGITS_SEP.search(t) is not None,
)
