"""The binary-to-text runs of a text found at once, with array operations (session 23): the search of the secret
scanner's decodings (:func:`agentguard.policies.secret_views.decodings`), its largest cost on benign text.

Every reading of a string (the text, reversed, ROT13, without its separators...) is searched for the runs a decoder
reads: base64, base32, hex, base85 and Ascii85 alphabets. Each was one regular expression, and Python's engine tries
a character class (and a look-behind) at every position, five times on every reading: the largest cost of a scan
(``benchmarks/results/secret_scan_scaling.json``: ~10-17 us a character in all). Here the text's bytes are looked up in one table per alphabet (``numpy``, a
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

import numpy as np

__all__ = ["number_needs", "runs"]

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
    t = np.zeros(256, dtype=np.uint8)
    t[list(chars)] = 1
    return t


#: one byte of bits per character: bit ``i`` set where the character is of layer ``i``'s alphabet
_BITS = sum((_table(chars) << i for i, (_, chars, _, _, _) in enumerate(_LAYERS)), np.zeros(256, dtype=np.uint8))
_IS_ALNUM = _table(_ALNUM).astype(bool)
_EQ = ord("=")


def _spans(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(starts, ends)`` of the maximal runs of True in ``mask``."""
    inside = np.zeros(len(mask) + 2, dtype=np.int8)
    inside[1:-1] = mask
    edges = np.diff(inside)
    return np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)


def runs(text: str) -> list[tuple[str, list[str]]] | None:
    """``[(layer, distinct runs in order of first occurrence), ...]`` for the five alphabets (see the module doc), or
    None for a text this does not read (non-ASCII, or holding ``<~``)."""
    if not text.isascii() or "<~" in text:
        return None
    raw = text.encode("ascii")
    b = np.frombuffer(raw, dtype=np.uint8)
    bits = _BITS[b]
    n = len(raw)
    out: list[tuple[str, list[str]]] = []
    for i, (layer, _, least, pad, after) in enumerate(_LAYERS):
        starts, ends = _spans((bits >> i) & 1)
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


_DIGIT_T = _table(b"0123456789").astype(bool)
_NOT01_T = _table(b"23456789")
_WORD_OR_NL = _table(_ALNUM + b"_\n")   # \w or a newline: what a separator of a number run is not (ASCII)


def _decimal_and_binary(text: str) -> tuple[bool, bool]:
    """Whether ``text`` may hold a decimal run (eight digit runs of 2-7 digits in a row, 1-3 characters neither a word
    character nor a newline between each two) and a binary run (eight digit runs of seven or eight ``0``/``1``): what
    every match of the two expressions holds (a token's digits are a maximal digit run: the expressions' look-arounds
    and separators say no digit touches it). Non-ASCII text: (True, True), the expressions decide."""
    if not text.isascii():
        return True, True
    b = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    starts, ends = _spans(_DIGIT_T[b])
    if len(starts) < 8:
        return False, False
    lens = ends - starts
    not01 = np.concatenate(([0], np.cumsum(_NOT01_T[b], dtype=np.int64)))
    only01 = not01[ends] == not01[starts]
    binary = int(np.count_nonzero(only01 & (lens >= 7) & (lens <= 8))) >= 8
    word = np.concatenate(([0], np.cumsum(_WORD_OR_NL[b], dtype=np.int64)))
    gaps = starts[1:] - ends[:-1]
    joined = (gaps <= 3) & (word[starts[1:]] == word[ends[:-1]])
    oklen = (lens >= 2) & (lens <= 7)
    pair = np.concatenate(([0], np.cumsum(oklen[:-1] & oklen[1:] & joined, dtype=np.int64)))
    decimal = bool(len(pair) > 7 and np.any(pair[7:] - pair[:-7] == 7))
    return decimal, binary


def number_needs(text: str) -> tuple[bool, bool, bool, bool]:
    """Per notation of ``secret_views._NUMBER_RUNS`` (decimal, hex numbers, octal, binary), whether ``text`` holds what
    every run of it holds: for decimal and binary the digit runs of :func:`_decimal_and_binary`, for hex numbers the
    ``0x``/``U+``/``\\u{`` prefix, for octal the ``0o``/``\\`` prefix. The run's expression (tried at every character
    of any text with a digit) is searched only where this is True; where it is False the text holds no such run."""
    decimal, binary = _decimal_and_binary(text)
    return (decimal, "0x" in text or "0X" in text or "u+" in text or "U+" in text or "\\u{" in text,
            "0o" in text or "\\" in text, binary)
