"""Identifiers the platform assigned, and amounts in minor units (issue 27, after the blind Stripe run).

Two structural rules of the dataflow ledger (:class:`agentguard.policies.dataflow.FlowLedger`), each declared here
and applied only to tools whose declarations were *inferred* from their schemas (:mod:`agentguard.policies.toolinfer`):

**Identifiers the platform assigned** (:class:`SystemIds`). A value is a target of a later call when it is
the system's own name for an object the request selects, never because third-party text writes it:

- *created in this run*: the top-level ``id`` of the record a consequential call returned, where the guard
  **allowed** that call in this run (the platform assigned the id in answer to a granted call: the created
  object is the one the user asked for). It is filed under the object noun of the tool's name
  (``create_price`` -> ``price``). A call the guard did not allow (escalated, then run) mints nothing;
- *a record the request selects*: in a record of a **listing** (an inferred read whose name holds a plural noun
  X, e.g. ``list_subscriptions``), the record's own ``id`` (filed under X) and its top-level **reference
  fields** (a field named like a parameter of the tool set, e.g. ``customer``, ``payment_intent``; filed under
  that name) are system-assigned, unlike free text (metadata, description, memo, name) that third parties
  write. They are filed only when the request **selects** the record: a system field of it is an id the
  request states or one already filed for a record the request selects ("Ben Okafor's subscription" is the one
  whose ``customer`` is Ben Okafor's record's id), another top-level field is an e-mail or a name (two to four
  words, no digit or ``_``) the request writes, or the listing was called with a filter argument named after an
  object (``list_disputes(payment_intent=...)``) whose value the request states or selects. An id-like value in
  free text (``description: "cus_..."``) selects nothing. Of nested objects only the ``id`` of each object
  of a top-level list of objects (or list wrapper) counts, filed under its argument path (a subscription
  item's ``id`` inside ``items`` is a target of ``items.id`` only, for a record the request selects or
  created; :func:`nested_ids`), and mapping keys never count.

Either way an identifier that third-party content also writes is refused (fail closed): an id only *mentioned*
in a description or memo never becomes a target, and an id the injector planted in free text cannot ride on a
record the request selects. An injector's own record is a target only where the request selects it by a value
the request states.

**Amounts in minor units** (:func:`minor_unit_arg`, :func:`in_minor_units`). A parameter whose schema
description says its amount is in minor units (one of :data:`MINOR_UNIT_WORDS`, whole words: "in cents",
"smallest currency unit") takes the request's amount times ``10 ** e``, where ``e`` is the ISO 4217 minor-unit
exponent of the call's ``currency`` argument (:data:`CURRENCY_EXPONENTS` lists those that are not 2; no
currency argument: 2). "Refund 5 USD" allows ``amount=500``, never 5000 nor 50; only numbers the request
writes are scaled (a record's amount is in minor units already and is never scaled again).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from .provenance import scalars
from .selection import DUPLICATE_WORDS, NEGATED, SELECTIONS, bound_selections, computed_selection, selections

__all__ = ["CURRENCY_EXPONENTS", "DUPLICATE_WORDS", "MATCHING", "MINOR_UNIT_WORDS", "NAMING_FIELDS",
           "NEGATED", "SELECTIONS", "SystemIds", "bound_selections", "computed_selection",
           "file_listing_record", "id_keys", "in_minor_units", "linked_records", "list_wrapper",
           "listed_records", "listing_filter", "minor_unit_arg", "nested_ids", "object_noun",
           "platform_fields", "record_keys", "reference_key", "search_filter", "selections", "selector",
           "system_fields"]

#: words of a parameter's description that declare its amount in a currency's minor unit (whole words)
MINOR_UNIT_WORDS: tuple[str, ...] = ("cents", "in cents", "smallest currency unit", "smallest unit of the currency",
                                     "minor unit", "minor units", "minor currency unit", "pence")

#: ISO 4217 minor-unit exponents that are not 2 (the ISO 4217 list, "minor unit" column)
CURRENCY_EXPONENTS: Mapping[str, int] = {
    **{c: 0 for c in ("bif", "clp", "djf", "gnf", "isk", "jpy", "kmf", "krw", "pyg", "rwf", "ugx", "uyi",
                      "vnd", "vuv", "xaf", "xof", "xpf")},
    **{c: 3 for c in ("bhd", "iqd", "jod", "kwd", "lyd", "omr", "tnd")},
}


def minor_unit_arg(description: str) -> bool:
    """Whether a parameter's description declares its amount in minor units (:data:`MINOR_UNIT_WORDS`)."""
    d = " " + re.sub(r"[^a-z]+", " ", description.casefold()) + " "
    return any(f" {w} " in d for w in MINOR_UNIT_WORDS)


def in_minor_units(value: float, user_numbers: Iterable[float], currency: Any = None) -> float | None:
    """The request's number that ``value`` is in the currency's minor unit (``500`` for ``5`` USD), or ``None``.
    A currency that is not a known code counts as exponent 2; ``value`` must be a whole number of minor units."""
    exp = CURRENCY_EXPONENTS.get(str(currency).strip().casefold(), 2) if currency is not None else 2
    if value != int(value):
        return None
    for n in user_numbers:
        if n > 0 and round(n * 10 ** exp, 6) == value:
            return n
    return None


@dataclass
class SystemIds:
    """One run's platform-assigned identifiers (see the module docstring): key (object noun or reference field
    name) -> value -> where it came from; ``pending``: the consequential calls the guard allowed, not yet seen
    answered."""

    ids: dict[str, dict[str, str]] = field(default_factory=dict)
    pending: list[tuple[str, str]] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)   # every system-field value seen (codes a result wrote: dataflow)
    # one selection binds one record: (selector, object noun) -> the record it bound; ambiguous selectors; and
    # the selectors each filed id rests on (an id filed with none was created in this run and is never revoked)
    bound: dict[tuple[str, str], str] = field(default_factory=dict)
    ambiguous: set[tuple[str, str]] = field(default_factory=set)
    support: dict[tuple[str, str], set[str]] = field(default_factory=dict)

    @staticmethod
    def call_key(tool: str, arguments: Mapping[str, Any]) -> tuple[str, str]:
        return tool, repr(sorted((str(k), repr(v)) for k, v in arguments.items()))

    def allowed(self, tool: str, arguments: Mapping[str, Any]) -> None:
        """The guard allowed this consequential call: its answer may mint an identifier."""
        self.pending.append(self.call_key(tool, arguments))

    def answered(self, tool: str, arguments: Mapping[str, Any] | None) -> bool:
        """Whether this result answers a call the guard allowed (consumed once)."""
        key = self.call_key(tool, arguments or {})
        if arguments is None or key not in self.pending:
            return False
        self.pending.remove(key)
        return True

    def file(self, key: str, value: Any, source: str, via: Iterable[str] = ()) -> None:
        """File ``value`` under ``key``; ``via``: the selectors it rests on (:meth:`bind`), none for an id this run
        created. An id filed again by another selector rests on each of them."""
        if isinstance(value, str) and value.strip():
            v, asked = value.strip(), set(via)
            via = asked - {f"id:{v}"}   # an id never rests on itself (a child record's reference to its parent)
            if asked and not via:
                return
            if v not in self.ids.get(key, {}):
                self.support[(key, v)] = via
            elif (key, v) in self.support:
                self.support[(key, v)] = self.support[(key, v)] | via if via else set()
            self.ids.setdefault(key, {}).setdefault(v, source)
            if not self.support.get((key, v), {""}):
                self.support.pop((key, v), None)

    def bind(self, selector: str, noun: str, record: str) -> bool:
        """Whether ``selector`` (a value the request states that a record holds, a search's values) may select
        ``record`` (its object noun and id): a selection binds one record. A second record of the same noun that
        the same selector reaches (an attacker's namesake, a second customer with the user's e-mail) makes it
        ambiguous: it selects neither, now or later, and what it filed is revoked (:meth:`revoke`)."""
        k = (selector, noun)
        if any(s == selector for s, _ in self.ambiguous):   # ambiguous for one noun: revoked for every noun
            return False
        if self.bound.setdefault(k, record) == record:
            return True
        self.ambiguous.add(k)
        self.revoke(selector)
        return False

    def revoke(self, selector: str) -> None:
        """Drop ``selector`` from the support of every id it filed; an id left with none is no longer filed, and
        what was filed through it (``id:<value>``: a listing filtered by it, its links) is revoked in turn."""
        todo = [selector]
        while todo:
            sel = todo.pop()
            for (key, v), sups in list(self.support.items()):
                if sel in sups:
                    sups.discard(sel)
                    if not sups:
                        del self.support[(key, v)]
                        self.ids.get(key, {}).pop(v, None)
                        if not self.selected_value(v):
                            todo.append(f"id:{v}")

    def selected_value(self, value: str) -> bool:
        """Whether ``value`` is an id already filed (a record the request selects, or one created in this run)."""
        return any(value.strip() in d for d in self.ids.values())

    def source(self, value: str, keys: Iterable[str]) -> str | None:
        """Where ``value`` was filed under one of ``keys`` (``*``: under any key), else ``None``."""
        for k in keys:
            if k == "*":
                return next((d[value.strip()] for d in self.ids.values() if value.strip() in d), None)
            if (src := self.ids.get(k, {}).get(value.strip())) is not None:
                return src
        return None


def id_keys(role: str, path: str, types: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The keys under which a filed id is a target of the argument at ``path`` with ``role``: its role, a nested
    argument's path (``items.id``), for an id argument (its last word ``id``/``ids``) the object ``types`` the
    call names beside it (``crm_delete_object(objectType='contacts', objectId=...)``: an id filed as a
    ``contact``, :func:`~agentguard.policies.vocabulary.type_keys`), and, for an id argument whose object the
    schema leaves open (role ``unknown``: ``associations[].to.id``, ``fromObjectId``), any key: the id of any
    record the request selects or this run created (never an id no rule filed)."""
    last = re.findall(r"[a-z]+|[A-Z][a-z]*", path.rsplit(".", 1)[-1])
    is_id = bool(last) and last[-1].casefold() in ("id", "ids")
    return (role, *((path,) if "." in path else ()), *(types if is_id else ()),
            *(("*",) if is_id and role == "unknown" else ()))


def object_noun(tool: str) -> str:
    """The object noun of a tool's name: its last word, singular (``create_price`` -> ``price``)."""
    words = [w for w in re.split(r"[^a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", tool).casefold()) if w]
    last = words[-1] if len(words) > 1 else ""
    return last[:-1] if len(last) > 3 and last.endswith("s") and not last.endswith("ss") else last


def reference_key(field_name: str, nouns: Iterable[str]) -> str | None:
    """The object noun a record's top-level field refers to by name (``customer``, ``payment_intent`` ->
    ``intent``), among the tool set's listing ``nouns``, else ``None``."""
    words = [w for w in re.split(r"[^a-z0-9]+", field_name.casefold()) if w]
    return words[-1] if words and words[-1] in set(nouns) else None


def selector(value: str, words: int) -> bool:
    """Whether a record's value may select it: an identifier-like value (a digit, ``_``, ``@``, ``.``) or a
    name of two to four words; a single plain word (``active``, ``draft``) selects nothing."""
    return bool(re.search(r"[\d_@.]", value)) or 2 <= words <= 4


def list_wrapper(rec: Mapping[str, Any]) -> tuple[str, list[Mapping[str, Any]]] | None:
    """``(key, objects)`` where ``rec`` is a list wrapper: exactly one of its values is a non-empty list of objects
    (``{"object": "list", "data": [...]}``, ``{"total_count": 2, "items": [...]}``), else ``None``."""
    lists = [(str(k), x) for k, x in rec.items() if isinstance(x, list) and x and all(isinstance(i, Mapping) for i in x)]
    return lists[0] if len(lists) == 1 else None


def listed_records(recs: list[dict[str, Any]], decl: Any) -> tuple[list[dict[str, Any]], list[Any]]:
    """``(records, rest)``: an inferred read whose one record is a list wrapper (:func:`list_wrapper`) lists the
    wrapper's objects, as if it had answered with a bare list; ``rest``, the wrapper's other values (a count, a
    page token, a note), stays third-party text. Any other result: its records, nothing else."""
    if decl.inferred and decl.kind == "read" and len(recs) == 1 and (wrap := list_wrapper(recs[0])) is not None:
        return [dict(r) for r in wrap[1]], [v for k, v in recs[0].items() if k != wrap[0]]
    return recs, []


def nested_ids(rec: Mapping[str, Any]) -> dict[str, list[str]]:
    """The ids of a record's nested objects, by the argument path that names them (``items.id``): the string
    ``id`` of each object of a top-level field ``f`` that holds a list of objects, or a list wrapper (a mapping
    with exactly one list-of-objects value: ``items: {"data": [...]}``). One level only (an item's ``price.id``
    is not one), and a free-form mapping of scalars (``metadata: {"id": ...}``) is no list of objects."""
    out: dict[str, list[str]] = {}
    for f, v in rec.items():
        if isinstance(v, Mapping):
            v = (list_wrapper(v) or ("", None))[1]
        if isinstance(v, list):
            got = [i["id"] for i in v if isinstance(i, Mapping) and isinstance(i.get("id"), str) and i["id"].strip()]
            if got:
                out[f"{f}.id"] = got
    return out


def system_fields(rec: Mapping[str, Any], noun: str, nouns: Iterable[str]) -> dict[str, str]:
    """A listing record's system-assigned top-level fields with the key each is filed under: ``id`` (the
    listed ``noun``) and the reference fields named after a listing noun; scalar strings only; and the ids of
    its nested objects (:func:`nested_ids`), filed under their argument path (``items.id``)."""
    out = {"id": noun} if isinstance(rec.get("id"), str) and noun else {}
    for f, v in rec.items():
        if f != "id" and isinstance(v, str) and (k := reference_key(str(f), nouns)) is not None:
            out[str(f)] = k
    out.update({p: p for p in nested_ids(rec)})
    return out


def _file_fields(ids: SystemIds, rec: Mapping[str, Any], fields: Mapping[str, str], why: str,
                 via: Iterable[str] = ()) -> None:
    """File ``fields`` of ``rec`` (a nested path: each of its ids), each with ``why`` naming the field, resting on
    the selectors ``via`` (:meth:`SystemIds.file`)."""
    nested, via = nested_ids(rec), tuple(via)
    for g, key in fields.items():
        for v in nested.get(g, []) if "." in g else [rec.get(g)]:
            ids.file(key, v, why.format(g), via)


def _form(value: str) -> str:
    """A selector's value as :func:`~agentguard.policies.provenance.canonical` reads it (NFKC, invisible characters
    and spacing dropped, case folded): ``Maria\u00a0Lopez`` and ``Ｍａｒｉａ Lopez`` are the request's Maria Lopez."""
    from .provenance import canonical
    return " ".join(canonical(w)[1] for w in value.split())


def _identity(rec: Mapping[str, Any], fields: Mapping[str, str]) -> str:
    """The record a selection binds: its own id, else its system fields' values."""
    return str(rec["id"]) if isinstance(rec.get("id"), (str, int)) else repr(sorted((f, repr(rec.get(f))) for f in fields))


#: the last word of a field that names its own record (a customer's ``name``, ``email``; an invoice's
#: ``customer_name``): free text (``description``, ``memo``, ``notes``) that writes a name names no record by it
NAMING_FIELDS: frozenset[str] = frozenset({"name", "email", "nickname", "title", "login", "username", "handle",
                                           "fullname", "firstname", "lastname", "mail"})


def _naming(field_name: str) -> bool:
    words = re.findall(r"[a-z]+|[A-Z][a-z]*", field_name)
    return bool(words) and words[-1].casefold() in NAMING_FIELDS


def file_listing_record(ids: SystemIds, tool: str, rec: Mapping[str, Any], fields: Mapping[str, str],
                        stated: Callable[[str], bool], by: str | None = None, unique: bool = False) -> None:
    """File ``fields`` (:func:`system_fields`) of a listing record when the request selects the record: a system
    field of it is an id the request states or one already filed for a record the request selects; another
    top-level field is an e-mail or a name (2-4 words, no digit or ``_``) the request writes; or ``by``: the
    listing's filter argument selected it (:func:`listing_filter`). A selection by a value any record may hold (a
    name, an e-mail, a search's values, ``unique``) binds one record of the listing's noun (:meth:`SystemIds.bind`):
    a namesake makes it select none. An id selects the one record it names, or that record's children."""
    noun = fields.get("id", tool)
    if by is not None:
        sel = f"search:{_form(by)}" if unique else f"id:{by}"
        if not unique or ids.bind(sel, noun, _identity(rec, fields)):
            _file_fields(ids, rec, fields, f"{tool}.{{}} of a record the listing's filter selects ({by!r})", (sel,))
        return
    for f, v in rec.items():
        if f in ("metadata",) or isinstance(v, (Mapping, list, tuple, bool)) or v is None:
            continue
        s = str(v).strip()
        n = len(s.split())
        if not s or n > 4 or not selector(s, n):
            continue
        # a system field selects by an id the request states or selects; any other field (free text a third
        # party may write) only by an e-mail the request writes or a name of 2-4 words without digits or ``_``
        # (an id-like value written in a description selects nothing: ``description: "cus_..."``), and only the
        # one record of the noun that holds it
        if f in fields and (stated(s) or ids.selected_value(s)):
            _file_fields(ids, rec, fields, f"{tool}.{{}} of a record the request selects ({s!r})", (f"id:{s}",))
            return
        if f not in fields and _naming(str(f)) and stated(s) and (
                "@" in s or 2 <= n <= 4 and not re.search(r"[\d_]", s)):
            sel = f"value:{_form(s)}"   # as the request's reading reads it: a respelled namesake is the same name
            if ids.bind(sel, noun, _identity(rec, fields)):
                _file_fields(ids, rec, fields, f"{tool}.{{}} of a record the request selects ({s!r})", (sel,))
            return


def platform_fields(ids: SystemIds, tool: str, decl: Any, recs: list[dict[str, Any]],
                    arguments: Mapping[str, Any] | None, nouns: Iterable[str],
                    stated: Callable[[str], bool], prompt: str = "", vocabulary: Iterable[str] = ()
                    ) -> list[dict[str, str]]:
    """Apply both rules of the module docstring to one result of ``tool`` (declaration ``decl``): file the id a
    consequential call the guard allowed was assigned, or the system fields of the listing records the request
    selects; returns, per record, the fields that are system-assigned (not third-party text). Every system-field
    value is kept in ``ids.seen``: still a code a tool result wrote (a read of another service carrying it leaks
    it: :meth:`~agentguard.policies.dataflow.FlowLedger._remote_leak`). ``vocabulary``: the property names the
    tool set's schemas declare inside objects (with the returned records' field names: :func:`search_filter`)."""
    out = _platform_fields(ids, tool, decl, recs, arguments, nouns, stated, prompt, vocabulary)
    ids.seen.update(v for r, fs in zip(recs, out) for f in fs
                    for v in (nested_ids(r).get(f, []) if "." in f else [r[f]] if isinstance(r.get(f), str) else []))
    return out


def _platform_fields(ids: SystemIds, tool: str, decl: Any, recs: list[dict[str, Any]],
                     arguments: Mapping[str, Any] | None, nouns: Iterable[str],
                     stated: Callable[[str], bool], prompt: str = "", vocabulary: Iterable[str] = ()
                     ) -> list[dict[str, str]]:
    """The rules of :func:`platform_fields`."""
    if not decl.inferred:
        return [{} for _ in recs]
    if decl.kind != "read":
        if recs and ids.answered(tool, arguments) and isinstance(recs[0].get("id"), str):
            ids.file(object_noun(tool), recs[0]["id"], f"{tool}.id (assigned to a call the guard allowed)")
            # its id and references (create_invoice_item's ``invoice``) are the platform's, not third-party text;
            # the ids of its nested objects (its line items) were assigned to the same allowed call
            sysf = {**system_fields(recs[0], "", nouns), "id": object_noun(tool)}
            _file_fields(ids, recs[0], {p: p for p in nested_ids(recs[0])},
                         f"{tool}.{{}} (assigned to a call the guard allowed)")
            return [sysf] + [{} for _ in recs[1:]]
        return [{} for _ in recs]
    if any(linked := linked_records(ids, tool, decl, recs, arguments or {})):
        return linked
    noun = decl.whole or decl.results.get("id", "")   # a listing, or a search of the records of a noun
    if not noun:
        return [{} for _ in recs]
    out = [system_fields(rec, noun, nouns) for rec in recs]
    by = listing_filter(ids, arguments or {}, nouns, stated)
    unique = by is not None and not any(reference_key(str(a), nouns) is not None and v == by
                                        for a, v in (arguments or {}).items())   # an e-mail filter: a search
    searched = None if by is not None or not arguments else search_filter(
        arguments, decl.choices, {*vocabulary, *record_keys(recs)}, stated, prompt)
    by = by or searched
    for rec, fields in zip(recs, out):
        # a search selects only the returned records that hold every value it matched on: a name of the store's
        # vocabulary beside a stated value (lastname IN [Reyes, firstname]) reaches records the request never named
        file_listing_record(ids, tool, rec, fields, stated,
                            by if searched is None or _holds(rec, searched) else None, unique or searched is not None)
    # a record the request selects by a property computed over this listing's records (the later of two
    # duplicate charges), where every argument of the listing is the request's (no third party chose the list)
    if by is None and (chosen := bound_selections(prompt, tool, nouns)) and all(
            isinstance(v, (int, float)) or stated(str(v)) or ids.selected_value(str(v)) for v in (arguments or {}).values()) \
            and (i := computed_selection(recs, chosen)) is not None:
        what = " / ".join(w for w, _, _ in chosen)
        _file_fields(ids, recs[i], out[i], f"{tool}.{{}} of the record the request's selection ({what!r}) computes")
    return out


def _id_named(name: Any) -> bool:
    last = re.findall(r"[a-z]+|[A-Z][a-z]*", str(name).rsplit(".", 1)[-1])
    return bool(last) and last[-1].casefold() in ("id", "ids")


def linked_records(ids: SystemIds, tool: str, decl: Any, recs: list[dict[str, Any]],
                   arguments: Mapping[str, Any]) -> list[dict[str, str]]:
    """A read keyed by a record the request selects (its id arguments, ``fromObjectId``, ids filed for such a
    record; every other argument a closed-set value or a number: no third party chose what it lists) returns that
    record's links: their id-named top-level fields (``toObjectId``, ``id``) are the platform's, filed under the
    object types the call names other than the selected record's (``toObjectType='tickets'`` -> ``ticket``:
    :func:`~agentguard.policies.vocabulary.type_keys`). Anything else: no system field."""
    from .vocabulary import type_keys

    keyed = [str(v) for a, v in arguments.items() if _id_named(a)]
    rest_ok = all(_id_named(a) or a in decl.choices or isinstance(v, (int, float)) for a, v in arguments.items())
    if not keyed or not rest_ok or not all(isinstance(v, str) and ids.selected_value(v) for v in keyed):
        return [{} for _ in recs]
    own = {k for k, d in ids.ids.items() if any(v.strip() in d for v in keyed)}
    types = [t for t in type_keys(arguments, decl.choices) if t not in own]
    out = [{str(f): types[-1] for f, v in rec.items() if _id_named(f) and isinstance(v, (str, int))
            and not isinstance(v, bool)} if types else {} for rec in recs]
    for rec, fields in zip(recs, out):
        for f, key in fields.items():
            ids.file(key, str(rec[f]), f"{tool}.{f} (a link of a record the request selects)",
                     [f"id:{v}" for v in keyed])
    return out


def listing_filter(ids: SystemIds, arguments: Mapping[str, Any], nouns: Iterable[str],
                   stated: Callable[[str], bool]) -> str | None:
    """The value of a listing call's filter argument that selects every record the platform returns for it, or
    ``None``: an argument named after a listing noun (``customer``, ``payment_intent``) or ``email`` whose value
    the request states or is an id filed for a record the request selects (``list_disputes(payment_intent=<the
    payment the user named>)``). Paging and closed-set arguments (``limit=10``, ``status="active"``) select
    nothing: they are not named after an object."""
    for a, v in arguments.items():
        if isinstance(v, str) and v.strip() and (reference_key(str(a), nouns) is not None or str(a) == "email") \
                and selector(v.strip(), len(v.split())) and (stated(v) or ids.selected_value(v)):
            return v.strip()
    return None


#: closed-set values of a nested filter object that select by equality, membership or containment of the value
#: (an allow-list: ``NEQ``, ``NOT_IN``, ``GT``, ``HAS_PROPERTY`` select records the request did not state)
MATCHING: frozenset[str] = frozenset({"eq", "equals", "equal", "is", "in", "contains", "contains_token", "includes",
                                      "match", "matches", "=", "==", "like", "ilike"})


def search_filter(arguments: Mapping[str, Any], choices: Iterable[str], vocabulary: Iterable[str],
                  stated: Callable[[str], bool], prompt: str) -> str | None:
    """The values by which a search call selects every record it returns, or ``None``. The call's arguments are
    read as a tree (``filterGroups[].filters[].value``, paths as the schema names them): a closed-set value (an
    operator, a sort direction: ``choices`` names their paths), a number (a page size) or a name of the store's
    own vocabulary (``vocabulary``: a property the tool set's schemas declare, ``firstname``) says which records
    or fields, not which values; **every** other value must be one the request states and writes as it is
    (case and all): an identifier-like value or a name of two to four words, or a single word the request
    capitalises (a proper name: ``Reyes``, ``Northfield``, not ``open``); and every nested object (a filter, an
    OR-group) must hold such a value (``{propertyName: email, operator: HAS_PROPERTY}`` alone selects every
    record that has an e-mail: nothing the request stated), and a closed-set value inside one must be an
    equality or membership operator (:data:`MATCHING`: ``lastname NEQ Reyes`` selects everyone else). One value a third party supplied (a filter value
    from an e-mail, an extra OR-group, a page cursor) and the search selects nothing."""
    vocab = {v.casefold() for v in vocabulary}
    closed = set(choices)
    values: list[str] = []

    def walk(path: str, v: Any, top: bool) -> bool:   # False: something no one stated (or an empty object)
        if isinstance(v, list):
            return all(walk(path, x, top) for x in v)
        if isinstance(v, Mapping):
            before = len(values)
            ok = all(walk(f"{path}.{k}" if path else str(k), x, False) for k, x in v.items())
            return ok and (top or len(values) > before)
        if path in closed and isinstance(v, str) and path.count(".") and v.strip().casefold() not in MATCHING:
            return False   # a predicate that is not equality or membership (NEQ, NOT_IN, GT, HAS_PROPERTY)
        if isinstance(v, (bool, int, float)) or v is None or path in closed:
            return True
        s = str(v).strip()
        if not s or s.casefold() in vocab:
            return True
        written = re.search(r"(?<![\w@.])" + re.escape(s) + r"(?![\w@])", prompt) is not None
        if not (stated(s) and written and (selector(s, len(s.split())) or s[:1].isupper())):
            return False
        values.append(s)
        return True

    return " ".join(values) or None if walk("", dict(arguments), True) else None


def _holds(rec: Mapping[str, Any], values: str) -> bool:
    """Whether the string values of ``rec`` (at any depth) hold every word of ``values`` (case folded)."""
    words = {w for x in scalars(rec) if isinstance(x, str) for w in x.casefold().split()}
    return set(values.casefold().split()) <= words


def record_keys(recs: Sequence[Mapping[str, Any]]) -> set[str]:
    """The field names of records a tool returned, at any depth (``properties.dealname`` -> ``dealname``): names
    of the store's fields, which a search's filter names (not values it matches)."""
    out: set[str] = set()
    todo: list[Any] = list(recs)
    while todo:
        x = todo.pop()
        if isinstance(x, Mapping):
            out.update(str(k) for k in x)
            todo.extend(x.values())
        elif isinstance(x, list):
            todo.extend(x)
    return out
