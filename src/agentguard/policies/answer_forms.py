"""How a value is compared between the answer to the user and the run's sources (:mod:`.answers`): one folded
form of each text, whatever way it is spelled, so that no spelling carries a planted value past the check.

- :class:`Folded`: a text read as a reader reads it: HTML entities and percent-escapes decoded, NFKD with combining marks and format characters (zero-width,
  bidi, soft hyphen) removed, the homoglyph skeleton (Unicode TR39 confusables, the table
  :func:`.secret_views.skeleton_table` reads from ``confusable-homoglyphs``: Cyrillic ``е`` is ``e``, fullwidth
  ``Ｒ`` is ``R``), case-folded; only its letters and digits kept, each with its offset in the original text, and
  where words start and end. A value's :func:`key` (its letters and digits, folded) is *stated* by a text when the
  key runs there from the start of a word to the end of a word, whatever separates the words: spaces, line
  breaks, markup (``**Riverside** View``, ``<b>Riverside</b>``), hyphens (``Riverside-View-Hotel``), nothing
  (``RiversideViewHotel``), dots between letters (``R.i.v.e.r.s.i.d.e``); a name also with digits read as letters
  (``R1vers1de V1ew H0te1``, :meth:`Folded.find` ``leet``). A source text is read with hard breaks
  (a line, an entry) that a key never spans, so that two neighbouring entries do not vouch for their join.
- :func:`tail`: the end of a streamed answer a next piece is read with, counted in letters, whatever separates
  them (padding between two streamed parts of a name never pushes the first out).
- :func:`respell`: e-mail addresses and links written the way people dodge filters (``bob [at] evil [dot] com``,
  ``bob at evil dot com``, ``www . evil . com``) written back as addresses (dots: :func:`.links.deobfuscate`).
- :func:`phone_numbers`: digit groups a person dials as one number (``+49 (0)30 1234-5678``, ``030 123 4567``):
  seven or more digits joined by spaces, dashes, dots, slashes or brackets, a date excepted; their digits.

Why hand-written here: the one maintained table a reader's confusion needs (TR39) is used; what is folded
beyond it (which characters separate words) is the reading this module guarantees, stated above.
"""

from __future__ import annotations

import bisect
import html
import re
import unicodedata
from functools import lru_cache
from urllib.parse import unquote

from .links import deobfuscate
from .provenance import entities

__all__ = ["Folded", "key", "phone_numbers", "respell", "tail"]

_DROP = frozenset({"Mn", "Me", "Cf"})
_LEET = str.maketrans("01345789l", "oieastbgi")   # the letters digits stand for in a name (l and 1 read as i)   # combining marks and format characters: no letter, no separator


@lru_cache(maxsize=1)
def _table() -> dict[int, str]:
    from .secret_views import skeleton_table

    return skeleton_table()


@lru_cache(maxsize=4096)
def _fold_char(ch: str) -> str:
    """The folded characters one character reads as (letters and digits; any other character is a separator,
    written as a space; a dropped one is the empty string)."""
    out: list[str] = []
    for c in unicodedata.normalize("NFKD", ch):
        if unicodedata.category(c) in _DROP:
            continue
        out.extend(d if d.isalnum() else " " for d in c.translate(_table()).casefold())
    return "".join(out)


# what a renderer does not show as text: an HTML tag or comment, a Markdown link's target; an HTML entity; escapes
_UNIT = re.compile(r"<!--.*?-->|</?[A-Za-z][^<>]{0,200}>|(?<=\])\([^()\s]{0,2000}\)|&#?[0-9A-Za-z]{1,8};"
                   r"|(?:%[0-9A-Fa-f]{2})+|.", re.S)


# fullwidth forms of ASCII (U+FF01-FF5E) and the ideographic space, one character for one: markup written in them
# (``＜ｂ＞``) is markup to a reader too, and positions in the text stay where they were
_FULLWIDTH = {c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)} | {0x3000: 0x20}


def _decoded(unit: str) -> str:
    """What a reader sees of a unit: nothing but a separation for markup (``Zeph<b></b>yrine``, ``[Zeph](x)yrine``
    read ``Zeph yrine``, whose key is ``zephyrine``), the character of an HTML entity (``&#82;`` is ``R``) or of a
    run of percent-escapes (``%20``)."""
    if unit[0] in "<(":
        return " "
    return html.unescape(unit) if unit[0] == "&" else unquote(unit)


def tail(text: str, letters: int) -> str:
    """The end of ``text`` that holds its last ``letters`` letters and digits as :class:`Folded` reads them, each
    run of what separates them kept as one separator (a line break, a sentence end, a comma or a space): however
    long the markup or spacing an answer streams between two parts of a name, they stay within the tail."""
    out: list[str] = []
    seps: list[str] = []
    count = 0
    for m in reversed(list(_UNIT.finditer(text.translate(_FULLWIDTH)))):
        unit = m.group(0)
        folded = "".join(_fold_char(c) for c in (unit if len(unit) == 1 else _decoded(unit)))
        if folded and not folded.isspace():
            if seps:
                out.append("\n" if any("\n" in u for u in seps) else ". " if any(u in ".!?" for u in seps)
                           else ", " if any(not u.isspace() for u in seps) else " ")
                seps = []
            out.append(unit)
            count += len(folded.replace(" ", ""))
            if count >= letters:
                break
        elif folded:
            seps.append(unit)
    if seps and count < letters:
        out.append("\n" if any("\n" in u for u in seps) else " ")
    return "".join(reversed(out))


class Folded:
    """A text folded for comparison (see the module docstring); ``hard``: characters a key never spans."""

    __slots__ = ("text", "pos", "starts", "ends", "hard")

    def __init__(self, text: str, hard: str = "") -> None:
        chars: list[str] = []
        pos: list[int] = []
        starts: set[int] = set()
        ends: set[int] = set()
        hard_at: list[int] = []
        gap = True
        for m in _UNIT.finditer(text.translate(_FULLWIDTH)):
            i, unit = m.start(), m.group(0)
            if unit in hard:
                hard_at.append(len(chars))
            for d in (_fold_char(unit) if len(unit) == 1 else "".join(_fold_char(c) for c in _decoded(unit))):
                if d == " ":
                    if not gap:
                        ends.add(len(chars))
                    gap = True
                    continue
                if gap:
                    starts.add(len(chars))
                chars.append(d)
                pos.append(i)
                gap = False
        ends.add(len(chars))
        self.text, self.pos, self.starts, self.ends, self.hard = "".join(chars), pos, starts, ends, hard_at

    def find(self, k: str, leet: bool = False) -> list[tuple[int, int]]:
        """The spans ``[start, end)`` of the original text where key ``k`` runs from a word's start to a word's
        end, spanning no hard break; with ``leet``, digits read as the letters they stand for on both sides
        (``R1vers1de V1ew H0te1``: ``0`` is ``o``, ``1``, ``l`` and ``i`` one letter, ``3`` ``e``...)."""
        text = self.text.translate(_LEET) if leet else self.text
        k = k.translate(_LEET) if leet else k
        out: list[tuple[int, int]] = []
        i = text.find(k) if k else -1
        while i >= 0:
            j = i + len(k)
            if i in self.starts and j in self.ends and bisect.bisect_right(self.hard, i) == bisect.bisect_left(
                    self.hard, j):
                out.append((self.pos[i], self.pos[j - 1] + 1))
            i = text.find(k, i + 1)
        return out

    def states(self, k: str) -> bool:
        return bool(self.find(k))


def key(value: str) -> str:
    """A value's letters and digits, folded (see :class:`Folded`)."""
    return "".join(c for c in (_fold_char(ch) for ch in value) for c in c if c != " ")


_AT = re.compile(r"\s*(?:\[\s*at\s*\]|\(\s*at\s*\)|\{\s*at\s*\}|<\s*at\s*>)\s*", re.I)
_SPOKEN_AT = re.compile(r"(?<=[\w.+-])\s+at\s+(?=[\w-]+(?:\.[\w-]+)*\.[a-z]{2,}\b)", re.I)
_SPACED_DOT = re.compile(r"(?<=\w)\s+\.\s+(?=\w)")


def respell(text: str) -> str:
    """``text`` with dodged spellings of addresses written back (case-folded, see the module docstring). A
    spoken ``at`` may misread prose (``log in at evil.com`` reads ``in@evil.com``): callers read both the text
    and its respelling, never the respelling alone."""
    t = _AT.sub("@", text)
    t = deobfuscate(_SPACED_DOT.sub(".", t))
    return _SPOKEN_AT.sub("@", t)


_PHONE = re.compile(r"(?<![\w.,])\+?(?:\(\s*\d+\s*\)\s*)?\d(?:[\d ().\-/\u00a0]*\d)?(?![\w])")
_PHONE_DIGITS = 7
_DATE = re.compile(r"(\d{1,4})([-/.])(\d{1,2})\2(\d{2}|\d{4})")   # 15/05/2024, 2024.05.15: a date, not to dial


def _is_date(span: str) -> bool:
    m = _DATE.fullmatch(span.strip())
    if m is None:
        return False
    a, b, c = int(m.group(1)), int(m.group(3)), m.group(4)
    if len(m.group(1)) == 4:   # year, month, day
        return 1 <= b <= 12 and 1 <= int(c) <= 31 and len(c) == 2
    return 1 <= b <= 31 and 1 <= a <= 31 and (a <= 12 or b <= 12) and len(m.group(1)) <= 2


def phone_numbers(text: str) -> set[str]:
    """The digits of each number of seven or more digits written in groups (see the module docstring)."""
    out = set()
    for m in _PHONE.finditer(text):
        digits = re.sub(r"\D", "", m.group(0))
        if len(digits) >= _PHONE_DIGITS and not _is_date(m.group(0)) and not any(
                k == "date" for k, _ in entities(m.group(0))):
            out.add(digits)
    return out
