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
  free text (``description: "cus_..."``) selects nothing. A value is never taken from nested objects (a
  subscription item's ``id`` inside ``items``), and mapping keys never count.

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
from typing import Any, Callable, Iterable, Mapping

__all__ = ["CURRENCY_EXPONENTS", "MINOR_UNIT_WORDS", "SystemIds", "file_listing_record", "in_minor_units",
           "listing_filter", "minor_unit_arg", "object_noun", "platform_fields", "reference_key", "selector",
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

    def file(self, key: str, value: Any, source: str) -> None:
        if isinstance(value, str) and value.strip():
            self.ids.setdefault(key, {}).setdefault(value.strip(), source)

    def selected_value(self, value: str) -> bool:
        """Whether ``value`` is an id already filed (a record the request selects, or one created in this run)."""
        return any(value.strip() in d for d in self.ids.values())

    def source(self, value: str, keys: Iterable[str]) -> str | None:
        for k in keys:
            if (src := self.ids.get(k, {}).get(value.strip())) is not None:
                return src
        return None


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


def system_fields(rec: Mapping[str, Any], noun: str, nouns: Iterable[str]) -> dict[str, str]:
    """A listing record's system-assigned top-level fields with the key each is filed under: ``id`` (the
    listed ``noun``) and the reference fields named after a listing noun; scalar strings only."""
    out = {"id": noun} if isinstance(rec.get("id"), str) and noun else {}
    for f, v in rec.items():
        if f != "id" and isinstance(v, str) and (k := reference_key(str(f), nouns)) is not None:
            out[str(f)] = k
    return out


def file_listing_record(ids: SystemIds, tool: str, rec: Mapping[str, Any], fields: Mapping[str, str],
                        stated: Callable[[str], bool], by: str | None = None) -> None:
    """File ``fields`` (:func:`system_fields`) of a listing record when the request selects the record: a system
    field of it is an id the request states or one already filed for a record the request selects; another
    top-level field is an e-mail or a name (2-4 words, no digit or ``_``) the request writes; or ``by``: the
    listing's filter argument selected it (:func:`listing_filter`)."""
    if by is not None:
        for g, key in fields.items():
            ids.file(key, rec.get(g), f"{tool}.{g} of a record the listing's filter selects ({by!r})")
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
        # (an id-like value written in a description selects nothing: ``description: "cus_..."``)
        if f in fields and (stated(s) or ids.selected_value(s)) or f not in fields and stated(s) and (
                "@" in s or 2 <= n <= 4 and not re.search(r"[\d_]", s)):
            for g, key in fields.items():
                ids.file(key, rec.get(g), f"{tool}.{g} of a record the request selects ({s!r})")
            return


def platform_fields(ids: SystemIds, tool: str, decl: Any, recs: list[dict[str, Any]],
                    arguments: Mapping[str, Any] | None, nouns: Iterable[str],
                    stated: Callable[[str], bool]) -> list[dict[str, str]]:
    """Apply both rules of the module docstring to one result of ``tool`` (declaration ``decl``): file the id a
    consequential call the guard allowed was assigned, or the system fields of the listing records the request
    selects; returns, per record, the fields that are system-assigned (not third-party text). Every system-field
    value is kept in ``ids.seen``: still a code a tool result wrote (a read of another service carrying it leaks
    it: :meth:`~agentguard.policies.dataflow.FlowLedger._remote_leak`)."""
    out = _platform_fields(ids, tool, decl, recs, arguments, nouns, stated)
    ids.seen.update(str(r[f]) for r, fs in zip(recs, out) for f in fs if isinstance(r.get(f), str))
    return out


def _platform_fields(ids: SystemIds, tool: str, decl: Any, recs: list[dict[str, Any]],
                     arguments: Mapping[str, Any] | None, nouns: Iterable[str],
                     stated: Callable[[str], bool]) -> list[dict[str, str]]:
    """The rules of :func:`platform_fields`."""
    if not decl.inferred:
        return [{} for _ in recs]
    if decl.kind != "read":
        if recs and ids.answered(tool, arguments) and isinstance(recs[0].get("id"), str):
            ids.file(object_noun(tool), recs[0]["id"], f"{tool}.id (assigned to a call the guard allowed)")
            # its id and references (create_invoice_item's ``invoice``) are the platform's, not third-party text
            return [{**system_fields(recs[0], "", nouns), "id": object_noun(tool)}] + [{} for _ in recs[1:]]
        return [{} for _ in recs]
    if not decl.whole:
        return [{} for _ in recs]
    out = [system_fields(rec, decl.whole, nouns) for rec in recs]
    by = listing_filter(ids, arguments or {}, nouns, stated)
    for rec, fields in zip(recs, out):
        file_listing_record(ids, tool, rec, fields, stated, by)
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
