"""The canonicalising readings of the secret scanner (:mod:`agentguard.policies.secrets`): an allow-list of
decodings and views, each bounded in size, each failing closed when it cannot be finished in bound.

**Decodings** (:func:`decodings`: what a receiver or an exfiltration endpoint applies to recover a value):
percent-encoding, HTML entities, JSON/Python string escapes written out (``\\u0041KIA``, ``\\x41``), quoted-
printable (``=41=4B``), and binary-to-text runs: base64/base64url, base32 (DNS exfiltration), base85/Ascii85
and hex. The bytes a run decodes to are read as text (UTF-8, or UTF-16 as PowerShell's ``-EncodedCommand``
writes it), decompressed first when they open with a gzip, zlib, bzip2 or xz header (``gzip | base64``), and
otherwise read for their printable runs (a key behind padding bytes, ``strings``-style). Decompression stops at
:data:`MAX_INFLATE` bytes: a stream that inflates further cannot be read in bound and is reported as
``None`` (the scanner turns it into an ``unreadable`` finding: not read is not allowed).

**Views** (:func:`views`: what no decoder applies but a reader undoes): the homoglyph skeleton (Unicode TR39
confusables plus combining marks removed: ``АKIA`` with a Cyrillic ``А``, ``A\\u0301KIA``), the text reversed,
ROT13, upper-cased (``akiaiosf...``: AWS ids are upper case, a receiver upper-cases them back), with whitespace
removed (``AKIA IOSF ...``), with its words in reverse order or each word reversed (reversed chunks), and with separator characters removed (``A-K-I-A``, ``AKIA.IOSF``, ``A\\u2800K``: each
frequent separator alone, and all of them at once). Unicode tag characters (``U+E0041`` ..., invisible "ASCII
smuggling") are read as the ASCII they shadow (:func:`untag`) before they are stripped as invisible.

**Session 20**: for the format detectors only, separators between letters or digits read as ``_`` and ``-``
(``ghp-...``, ``xoxb_...``: a swapped prefix separator); a dropped one (``ghpXXXX``) is not (strict xfail), except
a GitHub token whose checksum holds (:mod:`agentguard.policies.secret_checksums`, session 22). Groups of
one width (``AKIA IOSF ODNN``) read as one run are a reading (``ungrouped``), viewed again.

**Session 19**: runs of numbers, one per character (decimal code points or bytes, ``0x``/``U+``/``\\u{}`` hex, octal,
binary: :func:`_code_points`), a base64 run cut at any offset (read again from its 2nd, 3rd and 4th character when
it is no text: :func:`_base64`), and for the format detectors only (:data:`GATED_VIEWS`) the text lower-cased and
every 2nd and 3rd character of each long token (a key interleaved with filler letters).

Not read (a cipher, not an encoding: the family has no end): ROT47 and other shifts, XOR, encryption, a number
spelled out in words. Pair the scanner with provenance and flow rules for those.
"""

from __future__ import annotations

import base64
import binascii
import bz2
import functools
import html
import lzma
import re
import unicodedata
import zlib
from collections import Counter
from itertools import compress
from typing import Callable, Iterator
from urllib.parse import unquote_plus

from ..core.errors import require
from .secret_runs import number_needs, runs
from .secret_urls import url_fields, url_pieces

__all__ = ["GATED_VIEWS", "MAX_INFLATE", "decodings", "is_reading", "read_bytes", "read_invisible", "skeleton", "skeleton_table",
           "untag", "url_fields", "url_pieces", "views"]

#: the most bytes one compressed run may inflate to before it is refused as unreadable
MAX_INFLATE = 1 << 20
_B64 = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")
_B32 = re.compile(r"(?<![A-Za-z0-9])[A-Za-z2-7]{16,}={0,6}")
_B85 = re.compile(r"[0-9A-Za-z!#$%&()*+\-;<=>?@^_`{|}~]{20,}")
_A85 = re.compile(r"<~([!-uz\s]{10,})~>|(?<![!-u])([!-u]{20,})(?![!-u])")
# a maximal hex run (an odd one too: ``<hex>dig``, a hex letter on either side, is read both ways: session 20)
_HEX = re.compile(r"(?<![0-9A-Fa-f])[0-9A-Fa-f]{24,}(?![0-9A-Fa-f])")
_PCT = re.compile(r"%[0-9A-Fa-f]{2}")
_QP = re.compile(r"(?:=[0-9A-F]{2}){4}")
_QP_SOFT = re.compile(rb"=\r?\n")
_QP_BYTE = re.compile(rb"=([0-9A-Fa-f]{2})")
_ESC = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})|\\x([0-9A-Fa-f]{2})")
_A85_SKIP = 8  # the longest key-value prefix (``secret=``) a base85 run is read past
_ALIGN_MAX = 4096
_PREFIX_END = frozenset("=:,;")
_MIXED = re.compile(r"[A-Z]")
_LOWER = re.compile(r"[a-z]")  # longer runs are read from their first character only (the search would cost 8 decodings)
_PRINTABLE_RUN = re.compile(r"[\x20-\x7e]{12,}")
_DIGIT = re.compile(r"\d")
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
#: Default_Ignorable_Code_Point characters that are not of category Cf (``strip_invisible`` keeps them): variation
#: selectors, the combining grapheme joiner, Hangul fillers, Khmer inherent vowels, Mongolian variation selectors
_IGNORABLE = re.compile("[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f\uffa0\U000e0100-\U000e01ef]")
_TAGS = re.compile("[\U000e0020-\U000e007e]")
_MAGIC = ((b"\x1f\x8b", "gzip"), (b"BZh", "bzip2"), (b"\xfd7zXZ\x00", "xz"))
_SKELETON: dict[int, str] | None = None


def untag(text: str) -> str | None:
    """The ASCII that Unicode tag characters (``U+E0020``-``U+E007E``) shadow, in place; None when there are none."""
    if _TAGS.search(text) is None:
        return None
    return _TAGS.sub(lambda m: chr(ord(m.group(0)) - 0xE0000), text)


def read_invisible(text: str) -> str:
    """``text`` as the scanner reads it: NFKC, format characters (Cf) and the other default-ignorable characters
    (variation selectors, Hangul fillers) removed (``core.canonical.strip_invisible``, with one regex of the
    categories instead of a test per character: session 22)."""
    return _IGNORABLE.sub("", _category_rx("Cf").sub("", unicodedata.normalize("NFKC", text)))


_CATEGORY_RX: dict[str, re.Pattern[str]] = {}


def _category_rx(*cats: str) -> re.Pattern[str]:
    """One character class of every code point of the Unicode categories ``cats`` (built once, from
    ``unicodedata``)."""
    key = ",".join(cats)
    if key not in _CATEGORY_RX:
        ranges: list[list[int]] = []
        for cp in (*range(0x40000), *range(0xE0000, 0x110000)):   # planes 4-13: unassigned
            if unicodedata.category(chr(cp)) in cats:
                if ranges and ranges[-1][1] == cp - 1:
                    ranges[-1][1] = cp
                else:
                    ranges.append([cp, cp])
        body = "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges)
        _CATEGORY_RX[key] = re.compile(f"[{body}]")
    return _CATEGORY_RX[key]


@functools.lru_cache(maxsize=1024)
def _text(raw: bytes) -> str | None:
    """``raw`` as text when it is UTF-8 and at least 90% printable (what a decoded exfiltration looks like); kept."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    text = read_invisible(untag(text) or text)  # tag characters spell ASCII: read it before they are stripped
    if len(text) < 8:
        return None
    good = sum(ch.isprintable() or ch in "\r\n\t" for ch in text)
    return text if good >= 0.9 * len(text) else None


def _inflate(raw: bytes) -> bytes | None:
    """The decompressed bytes of a gzip/zlib/bzip2/xz stream, at most MAX_INFLATE; None when it inflates further
    (refused: it cannot be read in bound); b"" when ``raw`` is no such stream or is corrupt."""
    kind = next((k for m, k in _MAGIC if raw.startswith(m)), None)
    if kind is None and not (len(raw) > 2 and raw[0] == 0x78 and (raw[0] << 8 | raw[1]) % 31 == 0):
        return b""
    try:
        if kind == "bzip2":
            d: bz2.BZ2Decompressor | lzma.LZMADecompressor | zlib._Decompress = bz2.BZ2Decompressor()
        elif kind == "xz":
            d = lzma.LZMADecompressor()
        else:
            d = zlib.decompressobj(31 if kind == "gzip" else 15)
        out = d.decompress(raw, MAX_INFLATE + 1)
    except (OSError, EOFError, ValueError, zlib.error, lzma.LZMAError):
        return b""
    return None if len(out) > MAX_INFLATE else out


def read_bytes(raw: bytes, runs: bool, depth: int = 0) -> Iterator[str | None]:
    """The texts a run of decoded bytes holds (see the module doc); None: an inflation past the bound. ``runs``:
    read the printable runs of bytes that are not text (base64, base32, hex: the encodings of binary payloads;
    not base85, whose alphabet holds every base64 run, so any base64 text decodes to base85 noise)."""
    if depth < 2:
        inflated = _inflate(raw)
        if inflated is None:
            yield None
            return
        if inflated:
            yield from read_bytes(inflated, runs, depth + 1)
            return
    text = _text(raw)
    if text is not None:
        yield text
        return
    if len(raw) >= 16 and raw.count(0) * 3 >= len(raw):  # UTF-16: every other byte is NUL for ASCII text
        for enc in ("utf-16-le", "utf-16-be"):
            try:
                t = _text(raw[: len(raw) // 2 * 2].decode(enc).encode("utf-8"))
            except UnicodeDecodeError:
                t = None
            if t is not None:
                yield t
                return
    printable = _PRINTABLE_RUN.findall(raw.decode("latin-1")) if runs else []
    if printable:
        yield "\n".join(printable)


def _escapes(text: str) -> str:
    def one(m: re.Match[str]) -> str:
        code = int(m.group(1) or m.group(2) or m.group(3), 16)
        return chr(code) if code <= 0x10FFFF else m.group(0)

    out = _ESC.sub(one, text)
    return out.encode("utf-16", "surrogatepass").decode("utf-16", "replace")  # \ud83d\ude00 pairs joined


def _matches(rx: re.Pattern[str], text: str, group: int = 0) -> Iterator[str]:
    """Each distinct match of ``rx`` in ``text`` once (a run repeated 10**4 times is decoded once)."""
    if rx.groups == 0:   # findall collects in C (session 22: the loop below was the largest cost of a scan)
        yield from dict.fromkeys(rx.findall(text))
        return
    if rx.groups == 2 and group == 1:   # _A85: the run between <~ ~> or the bare run
        yield from dict.fromkeys(a or b for a, b in rx.findall(text))
        return
    seen: set[str] = set()
    for m in rx.finditer(text):
        s = m.group(group) if m.group(group) is not None else m.group(0)
        if s not in seen:
            seen.add(s)
            yield s


def _b64(run: str) -> bytes | None:
    try:   # base64.b64decode(..., validate=True) without its Python layers (session 23): the same call
        return binascii.a2b_base64(run + "=" * (-len(run) % 4), strict_mode=True)
    except (binascii.Error, ValueError):
        return None


def _base64(s: str) -> Iterator[bytes]:
    """The bytes of a base64/base64url run; when they are no text, also the run read from its 2nd, 3rd and 4th
    character (its last partial group cut): a run cut out of a longer base64 text at any offset is out of step
    with the encoding's groups of four until one of those starts (the text found there is what it held)."""
    alt = s.replace("-", "+").replace("_", "/").rstrip("=")
    raw = first = _b64(alt[:-1] if len(alt) % 4 == 1 else alt)   # a lone last character holds no byte (a run joined on)
    if raw is not None:
        yield raw
    if raw is None or _text(raw) is None:
        shifted = []
        for off in (1, 2, 3):
            cut = alt[off:]
            raw = _b64(cut[:-1] if len(cut) % 4 == 1 else cut)   # a lone last character holds no byte
            if raw is not None and _text(raw) is not None:
                yield raw
                return
            shifted += [raw] if raw is not None else []
        # none is text, and in step nothing printable: a payload glued onto a token of the alphabet (``<uuid>-QUtJ...``,
        # the blanks of wrapped lines removed) is out of step, behind junk bytes; its printable runs are read at every
        # offset (session 22)
        if first is None or _PRINTABLE_RUN.search(first.decode("latin-1")) is None:
            yield from shifted


_RUN_RXS = (("base64", _B64, 0), ("base32", _B32, 0), ("hex", _HEX, 0), ("base85", _B85, 0), ("ascii85", _A85, 1))
#: the longest run whose texts are kept for the next reading that holds it (the windows' overlap, the readings of
#: one text: the same runs recur); a compressed run's texts are never kept (they may be large)
_KEPT_RUN = 1024


def _runs(text: str) -> Iterator[tuple[str, str | None]]:
    """``(layer, text)`` for each text a distinct binary-to-text run of ``text`` decodes to (:func:`read_bytes`)."""
    found = runs(text)   # the five alphabets' runs in one pass over the bytes (secret_runs: exact, session 23)
    for i, (layer, rx, group) in enumerate(_RUN_RXS):
        for s in found[i][1] if found is not None else _matches(rx, text, group):
            texts = _kept_run(layer, s) if len(s) <= _KEPT_RUN else None
            for t in texts if texts is not None else _run_texts(layer, s):
                yield layer, t


def _run_texts(layer: str, s: str) -> Iterator[str | None]:
    for raw in _run_bytes(layer, s):
        yield from read_bytes(raw, "85" not in layer)


@functools.lru_cache(maxsize=4096)
def _kept_run(layer: str, s: str) -> tuple[str | None, ...] | None:
    """:func:`_run_texts` of a short run, kept (pure); None (not kept) when it holds a compressed stream."""
    raws = list(_run_bytes(layer, s))
    if any(_inflate(raw) != b"" for raw in raws):
        return None
    return tuple(t for raw in raws for t in read_bytes(raw, "85" not in layer, 2))   # none inflates: past that step


def _run_bytes(layer: str, s: str) -> Iterator[bytes]:
    """The bytes one run of ``layer``'s alphabet decodes to (none when it does not decode)."""
    if layer == "base64":
        yield from _base64(s)
    elif layer == "base32":
        s = s.rstrip("=").upper()
        try:
            yield base64.b32decode(s + "=" * (-len(s) % 8))
        except (binascii.Error, ValueError):
            return
    elif layer == "hex":
        for even in [s] if len(s) % 2 == 0 else [s[:-1], s[1:]]:
            yield bytes.fromhex(even)
    elif _MIXED.search(s) and _LOWER.search(s):  # base85 of a key mixes cases: not a word_like_this
        raw = _aligned(s, base64.b85decode if layer == "base85" else base64.a85decode)
        if raw is not None:
            yield raw


def _aligned(run: str, decode: Callable[[str], bytes]) -> bytes | None:
    """The bytes of a base85/Ascii85 run that decode to text, trying the run from each of its first
    :data:`_A85_SKIP` characters: both alphabets hold ``=`` and ``:``, so ``id=<run>`` is one run whose groups
    of five are out of step with the encoding's until the prefix is skipped; a suffix (``<run>=di``: a reversed
    ``id=``) only adds up to four bytes at the end, which are cut."""
    prefix = run[:_A85_SKIP] if len(run) <= _ALIGN_MAX else ""
    for skip in (0, *(i + 1 for i, c in enumerate(prefix) if c in _PREFIX_END)):  # after a `key=` or `id:`
        try:
            raw = decode(run[skip:])
        except ValueError:
            continue
        for cut in range(5):
            if _text(raw[: len(raw) - cut]) is not None:
                return raw[: len(raw) - cut]
    return None


def decodings(text: str, runs: bool = True) -> Iterator[tuple[str, str | None]]:
    """``(layer, decoded text)`` for each one-step decoding of ``text`` that changes it (see the module doc);
    ``(layer, None)`` for a decoding that cannot be finished in bound (an unreadable value). ``runs=False``: not the
    binary-to-text runs (for a text whose case was changed: hex and base32 runs decode as in the text it was made
    from, base64 and base85 runs with their case changed decode to what no receiver can restore)."""
    if "%" in text and _PCT.search(text):
        d = unquote_plus(text)
        if d != text:
            yield "url", d
    if "&" in text and ";" in text:
        d = html.unescape(text)
        if d != text:
            yield "html", d
    if "\\" in text and _ESC.search(text):
        yield "escapes", _escapes(text)
    if "=" in text and _QP.search(text):
        raw = _QP_SOFT.sub(b"", text.encode("utf-8"))  # soft line breaks, then every =XX (a stray = stays)
        d = _QP_BYTE.sub(lambda m: bytes([int(m.group(1), 16)]), raw).decode("utf-8", "replace")
        if d != text:
            yield "quoted-printable", d
    if runs:
        yield from _runs(text)
    yield from _code_points(text)


#: one number per character, each notation a run of at least 8 (``103 104 112``, ``0x67,0x68``, ``\\147\\150``,
#: ``U+0067``, ``\\u{67}``, ``01100111 01101000``): (layer, token regex, base, separators required)
_NUMBERS = (("decimal", r"\d{2,7}", 10, True), ("hex numbers", r"(?:0[xX]|[uU]\+|\\u\{)([0-9A-Fa-f]{1,6})\}?", 16, False),
            ("octal", r"(?:0o|\\)([0-7]{3})", 8, False), ("binary", r"(?:0b)?([01]{7,8})", 2, True))
_NUMBER_RUNS = tuple((layer, re.compile(rf"(?<![\w\\+]){tok}(?:[^\w\n]{{{int(sep)},3}}{tok}){{7,}}(?!\w)"),
                      re.compile(tok), base) for layer, tok, base, sep in _NUMBERS)


def _code_points(text: str) -> Iterator[tuple[str, str | None]]:
    """Runs of numbers, one per character (decimal code points or bytes, ``0x``/``U+``/``\\u{}`` hex, octal,
    binary), read as the text they spell: bytes (every number below 256) as :func:`read_bytes` reads them, else
    code points."""
    if _DIGIT.search(text) is None and (text.isascii() or not any(map(str.isdigit, text))):
        return
    for layer, run_rx, tok_rx, base in compress(_NUMBER_RUNS, number_needs(text)):   # where one may be (s23)
        for run in _matches(run_rx, text):
            vals = [int(m.group(m.lastindex or 0), base) for m in tok_rx.finditer(run)]
            if max(vals) < 256:
                for t in read_bytes(bytes(vals), True):
                    yield layer, t
            elif max(vals) <= 0x10FFFF:
                t = _text("".join(chr(v) for v in vals if not 0xD800 <= v < 0xE000).encode("utf-8"))
                if t is not None:
                    yield layer, t


_SPACE = re.compile(r"\s+")
_RUN = re.compile(r"\S{12,}")
_ROT13 = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
                       "NOPQRSTUVWXYZABCDEFGHIJKLMnopqrstuvwxyzabcdefghijklm")
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9\s]")
_KEY_RUN = re.compile(r"[A-Za-z0-9]{12,}")
_INTERLEAVED = re.compile(r"(?:\S[^A-Za-z0-9\s]){12,}\S?")
#: separators read away one at a time: the most frequent ones, each seen at least this often
_SEP_MIN, _SEP_KINDS, _SEP_TOKEN = 3, 3, 12


def skeleton_table() -> dict[int, str]:
    """Non-ASCII characters that look like one ASCII letter, digit or token character (Cyrillic ``А``, Greek
    ``Ο``, ...) -> that character, from the Unicode confusables data (TR39) that ``confusable-homoglyphs``
    ships: the maintained table made for homograph attacks. An upper-case letter that TR39 maps to ``l``
    (``І``, ``Ι``, whose prototype is ``l``) is read as ``I``."""
    global _SKELETON
    if _SKELETON is None:
        data = require("confusable_homoglyphs.confusables", "secrets").confusables_data
        table: dict[int, str] = {}
        for ch, glyphs in data.items():
            if len(ch) != 1 or ch.isascii():
                continue
            for g in glyphs:
                t = g.get("c", "")
                if len(t) == 1 and t.isascii() and (t.isalnum() or t in "-_+/=."):
                    table[ord(ch)] = "I" if t == "l" and ch.isupper() else t
                    break
        _SKELETON = table
    return _SKELETON


def skeleton(text: str) -> str:
    """The homoglyph skeleton: combining marks removed (``A\\u0301`` -> ``A``), then the TR39 table."""
    if not text.isascii():
        marks = _category_rx("Mn", "Me")   # a class past the BMP is a list of ranges: tried on non-ASCII runs only
        text = _NON_ASCII.sub(lambda m: marks.sub("", m.group()), unicodedata.normalize("NFD", text))
    return text.translate(skeleton_table())


def views(text: str, unseparate: bool = True) -> Iterator[tuple[str, str]]:
    """``(name, view)`` for each way an exfiltration writes a value so that no decoder applies but a reader
    (or the attacker's endpoint) recovers it (see the module doc). Each view that differs from ``text`` is
    scanned like a decoding (one layer), so a base64 run that was reversed is still decoded. ``unseparate``:
    also the separator and chunk readings, which read key-like tokens only (see :func:`_tokens`), so prose
    costs a few regex scans."""
    if not text.isascii():
        sk = skeleton(text)
        if sk != text:
            yield "homoglyph", sk
    if _RUN.search(text):  # a key is one run without spaces: prose of short words has nothing to reverse/rotate
        yield "reversed", text[::-1]
        r13 = text.translate(_ROT13)
        if r13 != text:
            yield "rot13", r13
        if (up := text.upper()) != text:   # a key of one case written in the other: AKIA... written lower
            yield "uppercased", up
        if (low := text.lower()) != text:  # ghp_... written upper (read for a format only: see GATED_VIEWS)
            yield "lowercased", low
        if _WORD_SEP.search(text):  # ghp-..., glpat_..., xoxb_...: a prefix's separator swapped (session 20)
            for sep in "_-":
                if (swapped := _WORD_SEP.sub(sep, text)) != text:
                    yield f"separators as {sep}", swapped
        yield from _decimated(text)
    if _SPACE.search(text):  # runs of groups of one width ("AKIA IOSF ODNN") alone are a reading, viewed again
        spans = "\n".join(_SPACE.sub("", m.group()) for m in _GROUPS.finditer(text) if _one_width(m.group()))
        yield from [("ungrouped", spans)] if spans else []   # (the whole of a long text exceeded the readings' bound)
        yield from [("despaced", d)] if (d := _SPACE.sub("", text)) != spans else []
    if unseparate:
        yield from _chunk_views(text)
        yield from (v for v in _unseparated(text) if _KEY_RUN.search(v[1]))  # only where a key-long run appears


_CHUNK = re.compile(r"[A-Za-z0-9+/=_-]{2,16}")
#: views read only where a format detector's pattern opens on them (they exist for formats: a known secret's
#: windows are compared case-folded and interleaved already, :mod:`agentguard.policies.secret_fragments`)
#: a separator between two letters or digits (a key's prefix and body: ``ghp_x``, ``xoxb-1``), read as ``_`` and ``-``
_WORD_SEP = re.compile(r"(?<=[A-Za-z0-9])[-_.](?=[A-Za-z0-9])")
GATED_VIEWS = frozenset({"lowercased", "separators as _", "separators as -", "every 2nd from 0", "every 2nd from 1", "every 3rd from 0",
                         "every 3rd from 1", "every 3rd from 2"})


def _decimated(text: str) -> Iterator[tuple[str, str]]:
    """Every 2nd and every 3rd character (each offset) of each blank-free token long enough to hold a key that
    way (``gxhxpx_x...``: a key interleaved with one or two filler characters per character)."""
    for s, nth in ((2, "2nd"), (3, "3rd")):
        tokens = [t for t in text.split() if len(t) >= s * _SEP_TOKEN]
        for o in range(s) if tokens else ():
            yield f"every {nth} from {o}", " ".join(t[o::s] for t in tokens)


def _chunk_views(text: str) -> Iterator[tuple[str, str]]:
    """Runs of at least three short chunks (``MPLE 7EXA ODNN IOSF AKIA``) read in reverse order and each reversed
    (reversed chunks); only runs that mix digits and letters (a key's chunks; not a sentence's words). Split, not
    one regex over the text: linear whatever the text."""
    runs: list[list[str]] = [[]]
    for w in text.split():
        if _CHUNK.fullmatch(w):
            runs[-1].append(w)
        elif runs[-1]:
            runs.append([])
    runs = [r for r in runs if len(r) >= 3 and any(c.isdigit() for w in r for c in w)
            and any(c.isalpha() for w in r for c in w)]
    if runs:
        yield "words-reversed", " ".join("".join(reversed(r)) for r in runs)
        yield "each-word-reversed", " ".join("".join(w[::-1] for w in r) for r in runs)


def _unseparated(text: str) -> Iterator[tuple[str, str]]:
    """The separator readings, of the tokens that have separators in them (prose is not read whole)."""
    tokens = [t for t in text.split() if len(t) >= _SEP_TOKEN and len(_NOT_ALNUM.findall(t)) >= _SEP_MIN]
    if not tokens:
        return
    joined = " ".join(tokens)
    seps = Counter(_NOT_ALNUM.findall(joined))
    frequent = [c for c, n in seps.most_common(_SEP_KINDS) if n >= _SEP_MIN]
    for c in frequent:
        yield f"without {c!r}", joined.replace(c, "")
    if len(seps) > 1 and frequent:
        yield "alphanumeric", _NOT_ALNUM.sub("", joined)
    # one separator after every character, whatever it is (g-h.p__x: the token's own _ kept), in every stretch
    stretches = [m.group(0)[::2] for m in _INTERLEAVED.finditer(joined)]
    if stretches:
        yield "interleaved", " ".join(stretches)


_GROUPS = re.compile(r"[A-Za-z0-9+/=_-]+(?: [A-Za-z0-9+/=_-]+){3,}")


def _grouped(text: str) -> bool:
    """Whether ``text`` holds 4+ blank-separated groups of one width (3 to 8; the first or last may be shorter), as a
    key written in groups (``AKIA IOSF ODNN 7EXA``): prose words are of many widths."""
    return any(_one_width(m.group()) for m in _GROUPS.finditer(text))


def _one_width(group: str) -> bool:
    """:func:`_grouped` of one match of ``_GROUPS`` (its only match is itself: not searched again, session 23)."""
    return len(inner := set((ws := [len(w) for w in group.split(" ")])[1:-1])) == 1 and max(ws[0], ws[-1]) <= min(inner) <= 8 and min(inner) >= 3


def is_reading(name: str) -> bool:
    """Whether view ``name`` is a reading of the same text (its homoglyph skeleton, its characters without the
    separators or blanks between them), which keeps the views of the text it reads (``A-K-I-A`` reversed is
    read back to front once the dashes are gone), rather than a transform (reversed, ROT13), which does not."""
    return name in ("homoglyph", "alphanumeric", "interleaved", "ungrouped") or name.startswith("without ")
