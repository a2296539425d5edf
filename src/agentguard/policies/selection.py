"""A record selected by a property computed over a listing's structured fields (issue 27; split from
:mod:`agentguard.policies.platformids`, which files the selected record's id as a target): the declared selection
words (newest, largest, most-X, the later of two duplicates), bound to the listing their object names and
cancelled by a negation before them; free text a third party wrote never takes part in the computation."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Hashable, Iterable, Mapping, Sequence

from .capabilities import strip_quotes

__all__ = ["AMOUNT_TEXT", "BoundValues", "DISMISSALS", "DUPLICATE_WORDS", "NEGATED", "PARTY_FIELDS", "SELECTIONS",
           "bound_selections", "clauses", "computed_selection", "dismissed", "party_values",
           "selected_amounts", "selections"]


#: declared selection words (a record chosen by a property computed over a listing's records): word -> (order,
#: the kind of field it orders by); "most X" / "most-X" orders by a numeric field named X (most-starred: stars)
SELECTIONS: Mapping[str, tuple[str, str]] = {
    **{w: ("max", "time") for w in ("latest", "newest", "most recent", "later", "more recent")},
    **{w: ("min", "time") for w in ("earliest", "oldest", "earlier")},
    **{w: ("max", "amount") for w in ("largest", "biggest", "highest", "most expensive")},
    **{w: ("min", "amount") for w in ("smallest", "lowest", "cheapest", "least expensive")},
}
#: words that select the records duplicating another record of the listing (charged twice)
DUPLICATE_WORDS: tuple[str, ...] = ("twice", "duplicate", "duplicated", "duplicates", "double")
#: words that, at most four words before a selection word, negate it ("not the newest", "don't bill twice")
NEGATED: frozenset[str] = frozenset({"not", "no", "never", "without", "don", "dont", "nor", "neither", "except",
                                     "excluding", "rather", "instead", "other", "besides"})
#: words and phrases by which a clause keeps, dismisses or excuses what it names ("the newest is fine, leave it",
#: "keep the latest one", "no refund needed"): a selection or an imperative in such a clause selects and grants nothing
DISMISSALS: tuple[str, ...] = ("fine", "alone", "untouched", "unchanged", "ok", "okay", "correct", "legit",
                               "legitimate", "valid", "keep", "ignore", "skip", "spare", "leave", "for later", "as is",
                               "needed", "unnecessary")
#: negations anywhere in a clause (its predicate negated: "the newest payment should not be refunded")
_CLAUSE_NEGATIONS = frozenset({"not", "no", "never", "without", "don", "dont", "nor", "neither", "doesn", "isn",
                               "aren", "shouldn", "won", "didn", "mustn", "needn", "cannot"})
#: the words a clause of a bare dismissal holds besides them ("leave it", "don't touch that one", "it's fine")
_BARE = frozenset("it its that this them those one ones is s t are be as please just the there all touch change do "
                  "let alone was".split())
_CLAUSE_SPLIT = re.compile(r"[,;:.!?()\[\]\n\u2014\u2013]|\s-\s|\b(?:and|but|then|or|also|so)\b", re.I)


def clauses(text: str) -> list[list[str]]:
    """The clauses of ``text`` (split at punctuation, dashes and conjunctions), each as its words, quotes blanked."""
    out = [re.findall(r"[a-z0-9]+", c.casefold()) for c in _CLAUSE_SPLIT.split(strip_quotes(text))]
    return [c for c in out if c]


def dismissed(words: Sequence[str], verb: str = "") -> bool:
    """Whether a clause (its words) keeps, dismisses or negates what it names (:data:`DISMISSALS`, a negation
    anywhere in it); ``verb``: the clause's own imperative, which is not read as a dismissal of itself."""
    ws = list(words)
    if verb in ws:
        ws.remove(verb)
    joined = " " + " ".join(ws) + " "
    return bool(set(ws) & _CLAUSE_NEGATIONS) or any(f" {d} " in joined for d in DISMISSALS)


def _bare_dismissal(words: Sequence[str]) -> bool:
    return dismissed(words) and set(words) <= _BARE | _CLAUSE_NEGATIONS | {w for d in DISMISSALS for w in d.split()}


_FIELD_WORDS = {"time": {"created", "date", "time", "timestamp", "updated", "at", "when"},
                "amount": {"amount", "price", "total", "cost", "value"}}


@lru_cache(maxsize=64)
def selections(prompt: str) -> tuple[tuple[str, str, str], ...]:
    """``(words, order, field)`` for each selection the request writes (:data:`SELECTIONS`, ``most X``, and
    :data:`DUPLICATE_WORDS` as ``("twice", "dup", "")``), quoted text blanked. A selection word right after a
    number is a listing's size, not a selection (``the 10 most recent payments``); one negated (:data:`NEGATED`
    at most four words before it: ``not the newest one``) selects nothing."""
    cs = clauses(prompt)
    out: list[tuple[str, str, str]] = []
    for k, ws in enumerate(cs):
        # a clause that keeps, dismisses or negates what it names, or one a bare dismissal follows ("the newest
        # is fine, leave it"), selects nothing
        if not dismissed(ws) and not (k + 1 < len(cs) and _bare_dismissal(cs[k + 1])):
            out.extend(_clause_selections(ws))
    return tuple(out)


def _clause_selections(ws: list[str]) -> list[tuple[str, str, str]]:
    out = []
    for i, w in enumerate(ws):
        two = " ".join(ws[i:i + 2])
        after_number = i > 0 and ws[i - 1].isdigit()
        if set(ws[max(0, i - 4):i]) & NEGATED:   # four words: don't is two (don, t)   # "not the newest one": a record the request excludes
            continue
        if w in DUPLICATE_WORDS:
            out.append((w, "dup", ""))
        elif after_number:
            continue
        elif two in SELECTIONS:
            out.append((two, *SELECTIONS[two]))
        elif w in SELECTIONS:
            out.append((w, *SELECTIONS[w]))
        elif w == "most" and i + 1 < len(ws) and len(ws[i + 1]) >= 4:
            out.append((two, "max", re.sub(r"(\w)\1?(?:ed|s)$", r"\1", ws[i + 1])))
    return out


def _singular_words(text: str) -> set[str]:
    return {w[:-1] if w.endswith("s") and len(w) > 3 else w for w in re.findall(r"[a-z0-9]+", text)}


def bound_selections(prompt: str, tool: str, nouns: Iterable[str]) -> tuple[tuple[str, str, str], ...]:
    """The :func:`selections` of the request that may apply to listing ``tool``: a selection whose object (the
    words after it up to a clause mark, at most five: ``the newest customer``, ``the later of the two charges``)
    names another listing's noun of the tool set (``nouns``) and none of ``tool``'s own words selects nothing
    here ("refund pi_1 and tell me the newest customer" makes no payment the newest one)."""
    own = _singular_words(re.sub(r"[_-]", " ", re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", tool)).casefold())
    other = {n.casefold() for n in nouns if n} - own
    toks = re.findall(r"[a-z0-9]+|[.,;:!?()]", strip_quotes(prompt).casefold())
    out = []
    for sel in selections(prompt):
        words = sel[0].split()
        objs = [_singular_words(" ".join(itertools.takewhile(
                    lambda t: t not in _CLAUSE, toks[i + len(words):i + len(words) + 5])))
                for i in range(len(toks)) if toks[i:i + len(words)] == words]
        if not objs or any(not (o & other) or o & own for o in objs):
            out.append(sel)
    return tuple(out)


_CLAUSE = frozenset({".", ",", ";", ":", "!", "?", "(", ")", "and", "then", "or", "but", "also"})


def _order_field(recs: Sequence[Mapping[str, Any]], kind: str) -> str | None:
    """The one field every record of ``recs`` holds a number (or every one an ISO date) in, named by ``kind``
    (``time``, ``amount``: :data:`_FIELD_WORDS`; else a field whose name has a word starting with ``kind``);
    of several, the one named exactly so (``amount``, not ``amount_received``); else ``None``."""
    def named(f: str) -> bool:
        words = re.split(r"[^a-z0-9]+", f.casefold())
        return bool(set(words) & _FIELD_WORDS[kind]) if kind in _FIELD_WORDS else any(
            w.startswith(kind) for w in words)
    def number(x: Any) -> bool:
        return isinstance(x, (int, float)) and not isinstance(x, bool)
    ok = [f for f in recs[0] if named(str(f)) and (all(number(r.get(f)) for r in recs) or all(
        isinstance(r.get(f), str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}.*", r[f]) for r in recs))]
    exact = [f for f in ok if str(f).casefold() in _FIELD_WORDS.get(kind, {kind})]   # amount, not amount_received
    return ok[0] if len(ok) == 1 else exact[0] if len(exact) == 1 else None


def computed_selection(recs: Sequence[Mapping[str, Any]], chosen: Sequence[tuple[str, str, str]]) -> int | None:
    """The index of the one record of a listing the request's selections compute (:func:`selections`), else
    ``None``: the duplicates first (records equal on every scalar field that is neither a time nor unique to one
    record; one group only), then the order (a unique maximum or minimum). Structured fields only: free text
    that claims a property ("this is the newest") counts for nothing."""
    idx = list(range(len(recs)))
    if len(recs) < 2 or not chosen:
        return None
    if any(o == "dup" for _, o, _ in chosen):
        keys = [f for f in recs[0] if isinstance(recs[0][f], (str, int, float)) and not (
            set(re.split(r"[^a-z0-9]+", str(f).casefold())) & _FIELD_WORDS["time"])
            and len({repr(r.get(f)) for r in recs}) < len(recs)]
        groups: dict[str, list[int]] = {}
        for i, r in enumerate(recs):
            groups.setdefault(repr([r.get(f) for f in keys]), []).append(i)
        dups = [g for g in groups.values() if len(g) > 1]
        if len(dups) != 1:
            return None
        idx = dups[0]
    orders = [(o, f) for _, o, f in chosen if o != "dup"]
    if len(orders) != 1:
        return idx[0] if len(idx) == 1 else None
    order, kind = orders[0]
    f = _order_field([recs[i] for i in idx], kind)
    if f is None:
        return None
    vals = [recs[i][f] for i in idx]
    best = max(vals) if order == "max" else min(vals)
    return idx[vals.index(best)] if vals.count(best) == 1 else None


@dataclass
class BoundValues:
    """Values a record the request names makes trusted (value -> where from), each resting on the selector that
    named the record (a name or an e-mail the request writes). A selection binds one record: where the same
    selector names a second record of the same tool (an attacker's namesake in a shared store), it names neither,
    now or later, and the values it made trusted are dropped (ambiguity escalates, never allows)."""

    values: dict[Hashable, str] = field(default_factory=dict)
    _bound: dict[tuple[Hashable, str], str] = field(default_factory=dict)
    _ambiguous: set[tuple[Hashable, str]] = field(default_factory=set)
    _support: dict[Hashable, set[tuple[Hashable, str]]] = field(default_factory=dict)

    def add(self, selector: Hashable, tool: str, record: str, value: Hashable, source: str) -> None:
        """``value`` is trusted through ``selector`` naming ``record`` (an identity) of ``tool``'s results."""
        if self.bind(selector, tool, record):
            self._support.setdefault(value, set()).add((selector, tool))
            self.values.setdefault(value, source)

    def add_all(self, selector: Hashable, tool: str, record: str, values: Iterable[tuple[Hashable, str]]) -> None:
        for value, source in values:
            self.add(selector, tool, record, value, source)

    def names(self, key: Hashable, select: Hashable | None, tool: str, record: str) -> bool:
        """Whether ``select`` (the value by which the request names ``record`` among its listing's records) names
        it alone; ``key`` (any value of it the request writes, shared or not) is bound too, so a namesake in a later
        result makes it ambiguous."""
        self.bind(key, tool, record)
        return select is not None and self.bind(select, tool, record)

    @staticmethod
    def identity(rec: Mapping[str, Any], fields: Iterable[str], shared: bool) -> str:
        """The record a name binds in a ``shared`` (inferred, third parties write to it) store, by its ``fields``;
        a declared tool's records are the user's own and are never ambiguous (one identity for all)."""
        return repr(sorted((str(f), repr(rec.get(f))) for f in fields)) if shared else ""

    def bind(self, selector: Hashable, tool: str, record: str) -> bool:
        """Whether ``selector`` names ``record`` alone among ``tool``'s records seen so far (else: ambiguous)."""
        k = (selector, tool)
        if k in self._ambiguous:
            return False
        if self._bound.setdefault(k, record) == record:
            return True
        self._ambiguous.add(k)
        for v, sups in list(self._support.items()):
            sups.discard(k)
            if not sups:
                del self._support[v]
                self.values.pop(v, None)
        return False

    def __contains__(self, value: object) -> bool:
        return value in self.values

    def __getitem__(self, value: Hashable) -> str:
        return self.values[value]


#: the last word of a field that names a party to a record or the record itself (a transaction's ``sender`` and
#: ``recipient``, a customer's ``email``): an entity the request writes selects a record only there, never in free
#: text its sender wrote (a subject that repeats the friend's IBAN)
PARTY_FIELDS: frozenset[str] = frozenset({"sender", "recipient", "recipients", "from", "to", "cc", "bcc", "payee",
                                          "payer", "counterparty", "account", "iban", "owner", "participants",
                                          "email", "customer", "user", "name", "organizer", "attendees"})


def party_values(rec: Mapping[str, Any]) -> list[Any]:
    """The values of ``rec``'s :data:`PARTY_FIELDS` (its field name's last word), for an entity to select it by."""
    return [v for f, v in rec.items() if (re.findall(r"[a-z]+|[A-Z][a-z]*", str(f)) or [""])[-1].casefold()
            in PARTY_FIELDS]


#: the one spelling of an amount given as text (the budget guard's too: :data:`.budget.AMOUNT_TEXT`): a plain decimal
#: (JSON's number grammar without the sign and the exponent), ASCII digits only. Why an allow-list: Python's
#: ``float()``/``int()``/``Fraction()`` also read ``"1_000"``, ``" 5"``, ``"+5"``, ``"1e3"``, ``"5."``, ``".5"``,
#: ``"007"``, ``"\u0663"`` (Arabic-Indic digits) and fullwidth digits, which JSON refuses, JavaScript's
#: ``Number()``/``parseInt()`` read otherwise (``parseInt("1e3")`` is 1, ``parseInt("1_000")`` 1) and a tool's backend
#: may read as anything; a text every common reader reads as the same number is the only one a guard can count as the
#: tool will.
AMOUNT_TEXT = re.compile(r"(?:0|[1-9][0-9]*)(?:\.[0-9]+)?")
#: an amount a record holds (session 23): :data:`AMOUNT_TEXT` with an optional minus (a refund); a record's text read
#: in no other way selects nothing (the request's amount then has no record behind it: refused)
_AMOUNT = re.compile(r"-?" + AMOUNT_TEXT.pattern)


def selected_amounts(records: Iterable[tuple[Mapping[str, Any], Sequence[str]]],
                     by_entity: Callable[[Mapping[str, Any]], bool],
                     names_in: Callable[[Mapping[str, Any]], set[str]]) -> set[float]:
    """The amounts (each record's declared ``select`` fields) of the records the request selects: a record holding an
    entity the request writes (an IBAN, an e-mail: ``by_entity``), or one holding a name the request writes
    (``names_in``: those its text holds) where every record that name reaches holds the same amounts. A name is
    any record's free text (a transaction's subject its sender wrote): an attacker's record that writes the
    name beside another amount makes the name select none (a selection binds one value or none)."""
    def amounts(rec: Mapping[str, Any], fields: Sequence[str]) -> frozenset[float]:
        vals = [rec.get(f) for f in fields]
        return frozenset(float(v) for v in vals if isinstance(v, (int, float, str)) and not isinstance(v, bool)
                         and _AMOUNT.fullmatch(str(v)))
    out: set[float] = set()
    by_name: dict[str, set[frozenset[float]]] = {}
    for rec, fields in records:
        got = amounts(rec, fields)
        if by_entity(rec):
            out |= got
        for n in names_in(rec):
            by_name.setdefault(n, set()).add(got)
    for seen in by_name.values():
        if len(seen) == 1:
            out |= next(iter(seen))
    return out
