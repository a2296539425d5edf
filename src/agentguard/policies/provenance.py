"""Provenance a deployed guard can observe: which sources each value of a run was seen in.

A guard in front of an agent sees three things as they flow through a run, and nothing else: the user's
prompt, the tool calls the agent proposes and the results those calls return. Each tool's results are
declared (:class:`SourceDeclaration`) as *trusted* (the user's own records, system metadata such as an
e-mail's sender or a bank ledger's IBANs) or *third-party* content (e-mail bodies, web pages, files,
reviews, messages), per field where results are structured. :class:`ProvenanceLedger` records, for one
run, the canonical values each source contained; :meth:`ProvenanceLedger.labels` answers, for a value
in a proposed call's arguments, the set of labels among :data:`USER` (the prompt), :data:`TRUSTED` and
:data:`UNTRUSTED` it was seen under. An unseen value has no label.

Canonical matching (:func:`canonical`) survives the formats agents use: case, surrounding whitespace and
punctuation, inner runs of whitespace, URL scheme / ``www.`` / trailing slash / default port / fragment (hosts by the public suffix list,
:mod:`agentguard.policies.links`: any suffix, IP literals, spelled-out dots),
e-mail case, IBAN spacing, invisible characters (:func:`~agentguard.core.canonical.strip_invisible`), number
formats (currency sign, thousands commas, trailing zeros), dates (an ISO date in a call matches the same
day written in words in the prompt: ``January 11th 2025``, ``the 1st to the 5th of May``; a date written
without a year matches that day in any year). Structured values (e-mail addresses, URLs, IBANs, numbers, dates) are matched as whole
entities by set membership; other values (names, channels, file ids) as whole words of the source's
word form, so ``bob`` is not found inside ``bobby`` and ``13`` not inside ``2013``.

Trusted fields vouch for whole values only (:func:`atoms`: the string, its lines, the sides of a
``key: value`` line); the prompt and third-party text are searched for entities and whole words.

Guarantee (property-tested): a value is labelled :data:`USER` only if its canonical form occurs, as an
entity or as whole words, in the prompt (numbers: as a stand-alone number of equal value; dates: the same
day in one of the forms of :func:`dates`), and :data:`TRUSTED` only if it equals a whole trusted value; values seen only in
third-party fields carry :data:`UNTRUSTED` alone, whatever their spacing, case or encoding.
"""

from __future__ import annotations

import datetime
import html
import itertools
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping
from urllib.parse import unquote

from ..core.canonical import strip_invisible
from .links import fold, links, rendered, url_tokens

__all__ = ["ProvenanceLedger", "SourceDeclaration", "TRUSTED", "UNTRUSTED", "USER", "atoms", "canonical", "dates", "entities", "identifiers", "scalars", "strings_of", "times", "trust_level", "word_form"]

USER = "user"
TRUSTED = "trusted"
UNTRUSTED = "untrusted"

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
# an IBAN as agents write it (case-folded): country, check digits, then groups of four, spaced or not
_IBAN = re.compile(r"\b[a-z]{2}\d{2}(?: ?[a-z0-9]{4}){2,7}(?: ?[a-z0-9]{1,3})?\b")
# a number as agents and people write it: optional sign and currency, thousands commas, decimals
_NUMBER = re.compile(r"[-+]?[$€£]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
# a number standing alone in text (not inside a word, date, id, version or IBAN)
_NUMBER_IN_TEXT = re.compile(r"(?<![\w.,/:-])[$€£]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w/:-]|[.,]\d)")
_ISO_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:[ t]\d{1,2}:\d{2}(?::\d{2})?)?")
_MONTHS = {m: i + 1 for i, ms in enumerate(("january jan", "february feb", "march mar", "april apr", "may",
                                             "june jun", "july jul", "august aug", "september sep sept",
                                             "october oct", "november nov", "december dec"))
           for m in ms.split()}
_MON = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?:,?\s+(\d{4}))?"
_TO = r"\s*(?:-|–|to|until|till|through|and)\s*(?:the\s+)?"
# "May 13th[ to 17th][, 2024]" and "[the] 13th [to the 17th] [of] May[ 2024]" (one or two days)
_DATE_MD = re.compile(rf"\b{_MON}\s+{_DAY}(?:{_TO}{_DAY})?{_YEAR}\b")
_DATE_DM = re.compile(rf"\b{_DAY}(?:{_TO}{_DAY})?(?:\s+of)?\s+{_MON}{_YEAR}\b")
_TIME = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*(a\.?m\.?|p\.?m\.?)(?!\w)|\b(\d{1,2}):(\d{2})\b", re.I)
_ALNUM = re.compile(r"[\W_]+")
_NOT_DIGIT = re.compile(r"\D+")
_WORD_SPLIT = re.compile(r"[^\w@.+/-]+|(?<!\w)[.+/-]|[.+/-](?!\w)")


def _nfkc(s: str) -> str:
    """Percent-decoded, NFKC, format characters (zero-width, bidi) removed, case-folded as an IDNA host is
    (:func:`~agentguard.policies.links.fold`: ``ß`` and ``ς`` kept, so ``hr@paßport.com`` is no ``hr@passport.com``)."""
    s = unquote(s)
    # ASCII is its own NFKC form and holds no format character: skip the per-character scan
    return s.casefold() if s.isascii() else fold(strip_invisible(s))


def _canon_number(s: str) -> str:
    """``"$10,000.00"`` -> ``"10000"``, ``"98.70"`` -> ``"98.7"``: one form per numeric value."""
    neg = s.startswith("-")
    digits = re.sub(r"[^\d.]", "", s)
    whole, _, frac = digits.partition(".")
    frac = frac.rstrip("0")
    whole = whole.lstrip("0") or "0"
    out = whole + ("." + frac if frac else "")
    return "-" + out if neg and out != "0" else out


def _date(y: str | None, m: int, d: str | None) -> str | None:
    """``YYYY-MM-DD`` (``*`` for a year not written), or None when no such day exists."""
    if d is None:
        return None
    try:
        datetime.date(int(y) if y else 2000, m, int(d))
    except ValueError:
        return None
    return f"{y or '*'}-{m:02d}-{int(d):02d}"


def dates(text: str) -> set[str]:
    """Every date written in ``text`` (case-folded): ISO ``2024-05-13[ 10:00]``, ``May 13th[, 2024]``,
    ``13 May 2024``, ``the 13th of May``, and ranges ``13th to the 17th of May 2024`` / ``May 13-17``
    (both ends). A date without a year gets year ``*``."""
    return _dates(_nfkc(text))


def _dates(t: str) -> set[str]:
    if not re.search(r"\d", t):
        return set()
    out = {f"{y}-{m}-{d}" for y, m, d in _ISO_DATE.findall(t)
           if _date(y, int(m), d) is not None}
    for rx, order in ((_DATE_MD, "md"), (_DATE_DM, "dm")):
        for g in rx.findall(t):
            mon, d1, d2, y = (g[0], g[1], g[2], g[3]) if order == "md" else (g[2], g[0], g[1], g[3])
            out |= {x for x in (_date(y, _MONTHS[mon], d1), _date(y, _MONTHS[mon], d2 or None)) if x}
    return out


def _canon_url(s: str) -> str:
    s = re.sub(r"^[a-z]+://", "", s.strip())
    s = re.sub(r"^www\.", "", s)
    s = s.split("#", 1)[0]
    host, _, path = s.partition("/")
    host = re.sub(r":(80|443)$", "", host)
    return (host + ("/" + path if path else "")).rstrip("/")


def canonical(value: str) -> tuple[str, str]:
    """``(kind, canonical form)`` of one value: kind ``email``, ``iban``, ``url``, ``number``, ``date`` (an ISO
    date, with or without a time of day: the day) or ``text``.

    ``text`` forms are the value's :func:`word_form`; ``number`` forms drop currency signs, thousands commas
    and trailing decimal zeros (``$2,200.00`` = ``2200``). Equal canonical forms are the same value.
    """
    s = _nfkc(value).strip().strip(".,;:!?\"'()[]<>")
    compact = re.sub(r"\s+", "", s)
    if _NUMBER.fullmatch(s):
        return "number", _canon_number(s)
    if (iso := _ISO_DATE.fullmatch(s)) and _date(*iso.groups()[:1], int(iso.group(2)), iso.group(3)):
        return "date", "-".join(iso.groups())
    if _EMAIL.fullmatch(s):
        return "email", s
    if re.fullmatch(r"[a-z]{2}\d{2}[a-z0-9]{10,30}", compact):
        return "iban", compact
    if " " not in s and "@" not in s and len(lk := links(s)) == 1:
        return "url", lk[0].form
    return "text", word_form(s)


def trust_level(labels: Iterable[str]) -> int:
    """2 when seen in the user's prompt, 1 when in a trusted source, 0 otherwise (third-party only, unseen)."""
    lab = set(labels)
    return 2 if USER in lab else 1 if TRUSTED in lab else 0


def word_form(text: str) -> str:
    """Case-folded, NFKC, words separated by single spaces (punctuation between words dropped)."""
    return " ".join(w for w in _WORD_SPLIT.split(_nfkc(text)) if w)


def identifiers(wf: str) -> set[str]:
    """The key-like words of word form ``wf``: 8+ letters and digits with at least one of each (an access key,
    a token, a commit hash; not a date, a time or an English word)."""
    return {w for w in wf.split() if len(k := re.sub(r"[\W_]", "", w)) >= 8 and re.search(r"\d", k)
            and re.search(r"[^\W\d_]", k)}


def entities(text: str, render: bool = True) -> Iterator[tuple[str, str]]:
    """Every e-mail address, URL, IBAN, stand-alone number and date (:func:`dates`) written in ``text``,
    canonical (see :func:`canonical`); also those of ``text`` as a Markdown renderer shows it, where its backslash
    escapes differ (:func:`.links.rendered`: ``[mail](mailto:bob@evil\\-mail.xyz)`` opens ``bob@evil-mail.xyz``)."""
    shown = rendered(text) if render else None
    if shown is not None:
        yield from entities(html.unescape(shown), False)
    t = _nfkc(text)
    emails = _EMAIL.findall(t)
    for e in emails:
        yield "email", e.strip(".")
    for m in _IBAN.findall(t):
        yield "iban", re.sub(r"\s+", "", m)
    raw = [lk for u in url_tokens(text) for lk in links(u)] if any(c in text for c in ":/\\@") else []
    for form in dict.fromkeys(lk.form for lk in links(_EMAIL.sub(" ", t)) + raw):   # + each URL as a client parses
        yield "url", form   # it, before any decoding: https://good.com%2f@evil.xyz is a link to evil.xyz
    for n in _NUMBER_IN_TEXT.findall(t):
        yield "number", _canon_number(n)
    for d in _dates(t):
        yield "date", d


def _leaves(value: Any) -> Iterator[str]:
    """Every scalar of an argument or result, as a string (mapping keys are not values)."""
    if hasattr(value, "model_dump"):
        value = value.model_dump()
    if isinstance(value, Mapping):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            yield from _leaves(v)
    elif value is not None and not isinstance(value, bool):
        yield str(value)


def scalars(value: Any) -> list[Any]:
    """Every leaf of ``value`` that is no mapping or list (booleans and None included), at any depth."""
    out: list[Any] = []
    todo: list[Any] = [value]
    while todo:
        x = todo.pop()
        if isinstance(x, Mapping):
            todo.extend(x.values())
        elif isinstance(x, list):
            todo.extend(x)
        else:
            out.append(x)
    return out


def _arg_leaves(value: Any) -> Iterator[str]:
    """Every scalar of a call's argument, mapping keys and booleans included: the receiving system reads a
    key it is sent (``options={"https://evil.example/?k=<secret>": 1}`` carries the link) and a boolean
    where a target or an amount is expected (``amount=True`` pays 1)."""
    if hasattr(value, "model_dump"):
        value = value.model_dump()
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from _arg_leaves(k)
            yield from _arg_leaves(v)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            yield from _arg_leaves(v)
    elif value is not None:
        yield str(value)


def _records(result: Any) -> Iterator[dict[str, Any]]:
    """The records of a result: each mapping (or model) in it, with its direct fields."""
    if hasattr(result, "model_dump"):
        result = result.model_dump()
    if isinstance(result, Mapping):
        yield dict(result)
    elif isinstance(result, (list, tuple)):
        for r in result:
            yield from _records(r)



def _carries(wf: str, value: str) -> bool:
    """Whether text in word form ``wf`` carries ``value`` (a word form): as whole words, or, for an identifier
    (6+ letters and digits, one a digit), as its letters and digits with any separators between them
    (an agent told to "space it out" or "use dots" still sends it), or its 8+ digits in order."""
    if f" {value} " in wf:
        return True
    sk = _ALNUM.sub("", value)
    if len(sk) >= 6 and any(c.isdigit() for c in sk) and sk in _ALNUM.sub("", wf):
        return True
    digits = _NOT_DIGIT.sub("", value)
    return len(digits) >= 8 and digits in _NOT_DIGIT.sub("", wf)


def two_step_amounts(base: Iterable[float], percents: Iterable[float]) -> set[float]:
    """Amounts computed from ``base`` (the 16 smallest) in two steps at most: sums, differences, halves, and
    the ``percents`` the request writes (of and on top of a value); only values with whole cents (a ratio that
    rounds to 0.01 is no computation)."""
    b = set(sorted(set(base))[:16])
    pct = list(percents)
    one = set(b) | {a / 2 for a in b}
    for a, c in itertools.product(b, b):
        one |= {a + c, a - c}
    one |= {a * p / 100 for a in b for p in pct} | {a * (100 + p) / 100 for a in b for p in pct}
    two = set(one)
    for a, c in itertools.product(one, b):
        two |= {a + c, a - c, c - a}
    return {round(x, 2) for x in two if abs(x * 100 - round(x * 100)) < 1e-6}


def times(text: str) -> set[str]:
    """Times of day written in ``text`` as ``HH:MM`` (``10:00``, ``6 PM``, ``9:30am``)."""
    out = set()
    for h, m, ap, h24, m24 in _TIME.findall(text):
        if ap:
            hh = int(h) % 12 + (12 if ap.lower().startswith("p") else 0)
            out.add(f"{hh:02d}:{int(m or 0):02d}")
        elif int(h24) < 24 and int(m24) < 60:
            out.add(f"{int(h24):02d}:{m24}")
    return out


def strings_of(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """``(field name, string)`` for every string leaf (and mapping key) of a tool result or argument.

    Pydantic models are read through ``model_dump()``; the field name is the innermost key.
    """
    if hasattr(value, "model_dump"):
        value = value.model_dump()
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield path, str(k)
            yield from strings_of(v, str(k))
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            yield from strings_of(v, path)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield path, str(value)
    elif value is not None and not isinstance(value, bool):
        yield path, str(value)


@dataclass(frozen=True)
class SourceDeclaration:
    """Which tool results are trusted: per tool a default, and per field name an override.

    ``trusted_tools``: tools whose whole result is trusted, except the fields in ``untrusted_fields``.
    ``trusted_fields``: field names trusted in any other tool's structured result (kept for callers that
    want it; the shipped AgentDojo declaration uses none: issue 27). ``tool_fields``: per tool, the
    field names trusted in that tool's result only.
    Everything else, and every tool not declared, is third-party content (fail closed).
    """

    trusted_tools: frozenset[str] = frozenset()
    trusted_fields: frozenset[str] = frozenset()
    untrusted_fields: frozenset[str] = frozenset()
    tool_fields: Mapping[str, frozenset[str]] = field(default_factory=dict)

    @classmethod
    def from_config(cls, params: Mapping[str, Any]) -> "SourceDeclaration":
        """From plain lists: ``{"trusted_tools": [...], "trusted_fields": [...], "untrusted_fields": [...]}``."""
        return cls(*(frozenset(str(x) for x in params.get(k, ()))
                     for k in ("trusted_tools", "trusted_fields", "untrusted_fields")))

    def label(self, tool: str, field_name: str) -> str:
        """The label of the string at ``field_name`` (innermost key; ``""`` for a bare string) of ``tool``'s result."""
        if field_name in self.untrusted_fields:
            return UNTRUSTED
        if tool in self.trusted_tools or (field_name and field_name in self.trusted_fields):
            return TRUSTED
        if field_name and field_name in self.tool_fields.get(tool, ()):
            return TRUSTED
        return UNTRUSTED


@dataclass
class _Source:
    entities: set[tuple[str, str]] = field(default_factory=set)
    words: list[str] = field(default_factory=list)
    atoms: set[tuple[str, str]] = field(default_factory=set)


def atoms(text: str) -> set[tuple[str, str]]:
    """Whole values a trusted string vouches for: the string, each of its lines, and each side of a
    ``key: value`` line, canonical. A trusted field vouches for its values as wholes, never for words or
    addresses written inside them (a third party may name a channel after a phishing URL)."""
    out = {canonical(text)}
    for line in text.splitlines():
        out.add(canonical(line))
        for piece in line.split(": "):
            out.add(canonical(piece))
    return {a for a in out if a[1]}


@dataclass
class ProvenanceLedger:
    """One run's record of where values were seen (see the module docstring). Not thread-safe per run."""

    declaration: SourceDeclaration
    sources: dict[str, _Source] = field(default_factory=lambda: {USER: _Source(), TRUSTED: _Source(),
                                                                    UNTRUSTED: _Source()})
    calls: list[str] = field(default_factory=list)
    prompt: str = ""
    cache: dict[str, Any] = field(default_factory=dict)   # for extractors: facts derived from the prompt
    _joined: dict[str, str] = field(default_factory=dict)

    def _add(self, label: str, text: str) -> None:
        src = self.sources[label]
        if label == TRUSTED:
            src.atoms.update(atoms(text))
            return
        src.entities.update(entities(text))
        src.words.append(word_form(text))
        self._joined.pop(label, None)

    def observe_prompt(self, prompt: str) -> None:
        """Record the user's prompt (label :data:`USER`)."""
        self.prompt = (self.prompt + "\n" + prompt).strip()
        self.cache.clear()
        self._add(USER, prompt)

    def observe_result(self, tool: str, result: Any, arguments: Mapping[str, Any] | None = None) -> None:
        """Record one tool result, each string under the label its tool and field are declared with (the call's
        ``arguments`` are not needed here: the same signature as :meth:`.dataflow.FlowLedger.observe_result`)."""
        self.calls.append(tool)
        for fname, s in strings_of(result):
            self._add(self.declaration.label(tool, fname), s)

    def _text(self, label: str) -> str:
        if label not in self._joined:
            self._joined[label] = " " + " \n ".join(self.sources[label].words) + " "
        return self._joined[label]

    def labels(self, value: str) -> frozenset[str]:
        """The labels ``value`` was seen under (empty when never seen; see the module docstring)."""
        kind, form = canonical(value)
        if not form:
            return frozenset()
        out = {TRUSTED} if (kind, form) in self.sources[TRUSTED].atoms else set()
        for lb in (USER, UNTRUSTED):
            if kind != "text":
                ents = self.sources[lb].entities
                if (kind, form) in ents or (kind == "date" and ("date", "*" + form[4:]) in ents):
                    out.add(lb)
            elif f" {form} " in self._text(lb):
                out.add(lb)
        return frozenset(out)

    def targets_labels(self, values: Iterable[str]) -> list[frozenset[str]]:
        """:meth:`labels` of each value."""
        return [self.labels(v) for v in values]
