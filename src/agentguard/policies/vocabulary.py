"""A tool set's own vocabulary and the run's clock: values that are neither the request's nor a third party's.

Written after the HubSpot CRM set's first scoring (issue 27, not blind); each rule is structural, for tool sets
nobody has seen, and each relaxation is bounded by the attack it could admit (kept as a refused test in
``tests/policies/test_vocabulary.py``):

- **the current time** (:func:`is_now`): a date-time with a time of day within :data:`NOW_WINDOW_S` of the run's
  clock, in a day/time parameter, is the time the agent read from the clock (``hs_timestamp`` of a note logged
  now). A bare date is not (``due today`` is a day the request must name), and any other instant, a meeting moved
  or a due date an attacker chose, still needs the request (:meth:`~.dataflow.FlowLedger.day`). An ISO date-time
  (never a bare number: an id is no epoch) in a parameter whose role the schema leaves open is checked as such a
  time (the request's days and times, or now), not as a target;
- **field names of the store** (:class:`FieldVocabulary`): a key of a free-form mapping (``properties=
  {"dealstage": ...}``) is vocabulary, not a value, when it is a field-name token (:func:`field_name`: letters,
  digits and ``_`` only, so never a path, a link or an address) that some tool of the set declares as a property
  in its schema, or that a record of the user's own store returned as a field name; any other key stays a value
  (``files={"~/.ssh/authorized_keys": ...}``, an attacker's key). A known key's value is read under the role
  (and closed set) the set's schemas declare for that key, else as an ``unknown`` target;
- **type names** (:func:`vocabulary_enum`, :func:`type_keys`): an ``enum`` whose values are all plain words (no
  address, link or digit) names kinds of things (``toObjectType: [companies, contacts, ...]``), not destinations;
  and an id filed for one object type (``contact``, from a contact listing) is the same record where a generic
  tool takes ``objectType='contacts'`` beside it, never where it names another type.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping

__all__ = ["FieldVocabulary", "NOW_WINDOW_S", "field_name", "field_names", "is_now", "joined_words", "parse_instant",
           "singular", "type_keys", "utc_now", "vocabulary_enum"]

NOW_WINDOW_S = 600.0   # an agent reads the clock at most this long before (or after) the call it makes
_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_WORD = re.compile(r"[A-Za-z][A-Za-z_ -]{0,63}")
_INSTANT = re.compile(r"(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)(Z|z|[+-]\d{2}:?\d{2})?")


def utc_now() -> datetime.datetime:
    """The machine's clock, in UTC (the default clock of a run)."""
    return datetime.datetime.now(datetime.timezone.utc)


def parse_instant(value: str, epoch: bool = True) -> datetime.datetime | None:
    """An ISO 8601 date-time *with a time of day* (``2026-11-26T15:00:00Z``, an offset, or none: UTC), or, with
    ``epoch``, epoch milliseconds (13 digits) or seconds (10 digits), as an aware UTC datetime; ``None`` for
    anything else (a bare date, a time alone, text)."""
    s = str(value).strip()
    if epoch and re.fullmatch(r"\d{13}|\d{10}", s):
        return datetime.datetime.fromtimestamp(int(s) / (1000 if len(s) == 13 else 1), datetime.timezone.utc)
    m = _INSTANT.fullmatch(s)
    if m is None:
        return None
    day, tod, tz = m.groups()
    tz = "+00:00" if tz in (None, "Z", "z") else tz if ":" in tz else f"{tz[:3]}:{tz[3:]}"
    try:
        return datetime.datetime.fromisoformat(f"{day}T{tod}{tz}").astimezone(datetime.timezone.utc)
    except ValueError:
        return None


def is_now(value: str, now: datetime.datetime, window_s: float = NOW_WINDOW_S) -> bool:
    """Whether ``value`` is a date-time within ``window_s`` seconds of ``now`` (the run's clock)."""
    t = parse_instant(value)
    return t is not None and abs((t - now).total_seconds()) <= window_s


def field_name(key: Any) -> bool:
    """Whether ``key`` is a field-name token (letters, digits, ``_``; 64 at most; not starting with a digit)."""
    return isinstance(key, str) and _FIELD.fullmatch(key) is not None


def field_names(result: Any) -> Iterator[str]:
    """The field-name keys (:func:`field_name`) of every mapping in a tool result, at any depth."""
    if hasattr(result, "model_dump"):
        result = result.model_dump()
    if isinstance(result, Mapping):
        for k, v in result.items():
            if field_name(k):
                yield k
            yield from field_names(v)
    elif isinstance(result, (list, tuple)):
        for v in result:
            yield from field_names(v)


def singular(word: str) -> str:
    """``contacts`` -> ``contact``, ``line_items`` -> ``line_item``, ``companies`` -> ``company``."""
    w = word.casefold()
    if w.endswith("ies") and len(w) > 4:
        return w[:-3] + "y"
    return w[:-1] if w.endswith("s") and not w.endswith("ss") and len(w) > 3 else w


def vocabulary_enum(values: Iterable[str]) -> bool:
    """Whether every value of an ``enum`` is a plain word (letters, ``_``, ``-``, spaces: no address, link or
    digit): the names of kinds of things, which no message is sent to."""
    vals = [str(v) for v in values]
    return bool(vals) and all(_WORD.fullmatch(v) is not None for v in vals)


def type_keys(arguments: Mapping[str, Any], choices: Mapping[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The object types a call's closed-set arguments name (``objectType='contacts'`` -> ``contact``): an id
    filed for that type is a target of the call's open id arguments."""
    return tuple(singular(v) for a, v in arguments.items()
                 if isinstance(v, str) and a in choices and vocabulary_enum(choices[a]) and v in choices[a])


def joined_words(wf: str, most: int = 3) -> set[str]:
    """Two to ``most`` consecutive words of word form ``wf`` written as one word (``closed won`` ->
    ``closedwon``, ``closed_won``), letters only: a code a tool uses for a phrase the request writes."""
    ws = wf.split()
    out: set[str] = set()
    for n in range(2, most + 1):
        for i in range(len(ws) - n + 1):
            part = ws[i:i + n]
            if all(w.isalpha() for w in part):
                out |= {"".join(part), "_".join(part)}
    return out


@dataclass
class FieldVocabulary:
    """The field names of one tool set and run: those the set's schemas declare as properties (with their role and
    closed set), and those records of the user's own store returned (see the module docstring)."""

    roles: dict[str, str] = field(default_factory=dict)
    choices: dict[str, tuple[str, ...]] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, decls: Iterable[Any]) -> "FieldVocabulary":
        """From the declarations' nested arguments (``properties.hs_timestamp``: ``hs_timestamp``); a key
        declared with two roles keeps ``unknown`` (fail closed)."""
        out = cls()
        for d in decls:
            for path, role in d.args.items():
                if "." not in path:
                    continue
                k = path.rsplit(".", 1)[1]
                out.roles[k] = role if out.roles.get(k, role) == role else "unknown"
                if path in d.choices:
                    out.choices.setdefault(k, d.choices[path])
        return out

    def known(self, key: Any) -> bool:
        return field_name(key) and (key in self.roles or key in self.seen)

    def resolve(self, decl: Any, arg: str, checked: set[str]) -> tuple[str, tuple[str, ...] | None]:
        """The role and closed set of argument ``arg`` of a call of ``decl``: its own declaration's, or, for a
        field name of the store (``properties.dealstage``, not declared by this tool) inside a mapping whose role
        the schema leaves open, the role the set's schemas declare for that key where its values are checked
        (``checked``, or a closed set), else ``unknown`` (a target: a role whose values go unchecked, ``query``, is
        never borrowed from another tool, and a mapping with a role of its own, ``recipient={"body": ...}``, keeps
        it for every value)."""
        if arg in decl.args or "." not in arg:
            return decl.role(arg), decl.choices.get(arg)
        parent, key = arg.rsplit(".", 1)
        if decl.role(parent) != "unknown":
            return decl.role(parent), None
        role, choices = self.roles.get(key, "unknown"), self.choices.get(key)
        if role in checked or role in ("choice", "flag") and choices:
            return role, choices
        return "unknown", None
