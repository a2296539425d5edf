"""Labels that follow data flow, and the check of one proposed call against the user's grants (issue 27).

:class:`FlowLedger` holds one run: the user's prompt and the grants minted from it (:mod:`.capabilities`), and every
tool result, each field labelled by the tool set's declarations (:mod:`.toolset`): the user's own records and system
metadata vouch for a value *of the declared role only* (a transaction id never vouches for an amount, a balance
never for a payment); everything else, senders, participants, owners, counterparties, subjects, bodies, pages, is
third-party, whatever its field's name.

**The approximation, stated.** A replay (or any guard outside the model) cannot see which input an LLM copied
a value from. Where a value of a proposed call equals values from several sources, the ledger labels it by
*every* source it could have come from, and decides fail closed:

- a target (recipient, IBAN, URL, file, event, message id) is the user's (level 2) when the user's request names
  it, or a trusted record the user pointed at by name resolves it (the contact whose name the user wrote); it is
  trusted (level 1) when a source declared for its role holds it **and**, for identifiers (``ids`` roles), no
  third-party content also holds it (the model may have copied it from the attacker: escalated, never allowed);
- an amount is the user's when the request writes it; level 1 when it is computed (sum, difference, a percentage
  the request writes with ``%``, half; two steps at most, whole cents) from numbers the request writes and the
  amounts of records the user selected (a record holding an IBAN, address or name the request wrote); else 0;
- a deletion by an inferred declaration needs the record the request names (or selects: platformids), not a
  trusted id of another record ("delete the newsletter e-mail" deletes no other e-mail);
- days and times: when the grant's sentence (else the request) names days or times of day, the call's must be
  one of them (else the agent's choice, said so); a target the request points at by its page ("her e-mail is on
  www.x.com"): :mod:`.pointers`; account values (a password, an address) must be written in the request;
- a read whose argument holds a link is a *fetch* of it (``_read_links``); a read of a service not the user's
  store carries no private value, code or text of a tool result the request did not write (``_remote_leak``);
- platform ids, minor units: :mod:`.platformids`; a namespaced service's records: :mod:`.servicerecords`; an
  amount is positive, and not left out when the request states one (:func:`.schemagrants.omitted_values`);
- outgoing content (bodies, subjects, posts): every link in it (:mod:`.links`) must be the user's or trusted; a
  private value of the user (passport, card, an undeclared tool's field) needs a grant whose sentence names it; 8+
  consecutive words of third-party text go only to targets the user named; the answer to the user: :mod:`.answers`.

A call is within a grant when one of the tool's declared actions was granted and the grants' parameter scope covers
what it sets; closed-set values (``enum``, booleans) are checked against the request where it states one
(:mod:`.schemagrants`). :meth:`FlowLedger.facts`: the policy's facts, ``grant`` (its words) and ``why`` (what failed).
"""

from __future__ import annotations

import datetime
import itertools
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Sequence

from .capabilities import Grant, GrantLexicon, mint, strip_quotes
from .answers import AnswerSources
from .links import Link, links, local_path
from .provenance import (_EMAIL, _IBAN, _NOT_DIGIT, _TIME, _arg_leaves, _carries, _leaves, _records, canonical,
                         dates, entities, identifiers, times, two_step_amounts, word_form)
from .pointers import Pointers
from .platformids import SystemIds, id_keys, in_minor_units, listed_records, nested_ids, platform_fields
from .schemagrants import closed_value, expand_arguments, omitted_values, record_nouns
from .selection import BoundValues, party_values, selected_amounts
from .servicerecords import ServiceRecords
from .toolset import READ_VERBS, Facts, ToolDecl, ToolSet
from .vocabulary import FieldVocabulary, field_names, is_now, joined_words, parse_instant, type_keys, utc_now

__all__ = ["Facts", "FlowLedger", "SHINGLE", "times"]

SHINGLE, _ISO_PART = 8, re.compile(r"\d{4}-\d{2}-\d{2}t\d{2}|\d{2}(?:\.\d+)?(?:[+-]\d{2}|z)")   # forwarded words; ISO instant pieces
_FILE_ROLES = frozenset({"file", "filename"})   # values are file names: "notes.md" parses as a host
# a read verb joined to another verb (get_and_delete, fetch_then_pay) or a particle (check_out, sign_up)
_COMPOUND = re.compile(r"(?:^|_)(?:and|then|also|plus)_([a-z]+)|^[a-z]+_(?:out|up|off|over|away|through)(?:_|$)")
_KIND_CODE, _CHECKED = {"read": 0, "fetch": 1, "write": 2, "send": 3, "account": 4, "delete": 5}, (
    "targets", "amounts", "days", "content", "account_values")   # _CHECKED: role classes whose values are checked


def _shingles(words: list[str]) -> set[tuple[str, ...]]: return {tuple(words[i:i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)}


@dataclass
class FlowLedger:
    """One run's grants and labelled values (see the module docstring). Not thread-safe per run."""

    toolset: ToolSet
    lexicon: GrantLexicon
    prompt: str = ""
    grants: list[Grant] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    _user_ents: set[tuple[str, str]] = field(default_factory=set)
    _user_text: str = " "
    _user_parts: set[str] = field(default_factory=set)   # the parts of a compound word the request writes
    _user_sites: set[str] = field(default_factory=set)
    _user_numbers: set[float] = field(default_factory=set)
    _user_percents: set[float] = field(default_factory=set)
    _names: set[str] = field(default_factory=set)
    _trusted: dict[str, dict[tuple[str, str], str]] = field(default_factory=dict)   # role -> value -> source
    _resolved: BoundValues = field(default_factory=BoundValues)   # a record the request names: its fields
    _tp_ents: set[tuple[str, str]] = field(default_factory=set)
    _tp_words: list[str] = field(default_factory=list)
    _tp_shingles: set[tuple[str, ...]] = field(default_factory=set)
    _said: AnswerSources = field(default_factory=AnswerSources)   # names and entries third-party text offers
    _tp_refs: set[str] = field(default_factory=set)   # numbers third-party text writes as references (#17)
    _private: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    _selectable: list[tuple[dict[str, Any], tuple[str, ...], str]] = field(default_factory=list)
    _pointed: dict[str, str] = field(default_factory=dict)   # link form -> the record the request names
    _named: BoundValues = field(default_factory=BoundValues)   # trusted value -> the named record
    _cache: dict[str, Any] = field(default_factory=dict)
    sys_ids: SystemIds = field(default_factory=SystemIds)   # platform-assigned ids (agentguard.policies.platformids)
    clock: Callable[[], datetime.datetime] = utc_now   # the run's clock (a value of now: agentguard.policies.vocabulary)
    _vocab: FieldVocabulary = field(default_factory=FieldVocabulary)   # the store's field names (.vocabulary)
    _service: ServiceRecords = field(default_factory=ServiceRecords)   # namespaced services' records (.servicerecords)
    _pointers: Pointers = field(default_factory=Pointers)   # values the request points at by their page (.pointers)

    def __post_init__(self) -> None:
        self._vocab, self._service = FieldVocabulary.of(self.toolset.tools.values()), ServiceRecords.of(self.toolset)

    def observe_prompt(self, prompt: str) -> None:
        """Record the user's request: its grants and the values it names."""
        self.prompt = (self.prompt + "\n" + prompt).strip()
        self.grants, self._user_ents = mint(self.prompt, self.lexicon), set(entities(self.prompt))
        self._user_text = f" {word_form(self.prompt)} "
        # a compound written as one word ("acme/webapp", not a link) names its parts (owner=, repo=)
        self._user_parts = {p for w in self._user_text.split() if "/" in w and not links(w)
                            for p in w.split("/") if len(p) >= 2}
        self._user_sites = {lk.site for lk in links(self.prompt)}
        # numbers the request writes as numbers (not the digit groups of an IBAN, address or date)
        bare_nums = _IBAN.sub(" ", _EMAIL.sub(" ", self.prompt.casefold()))
        self._user_numbers = {float(f) for k, f in entities(bare_nums) if k == "number"}
        self._user_percents = {float(m) for m in re.findall(r"(\d+(?:\.\d+)?)\s*(?:%|percent\b|per cent\b)",
                                                           bare_nums)}
        bare = strip_quotes(self.prompt)
        verbs = {f for vs, _ in self.lexicon.actions.values() for v in vs for f in self.lexicon.forms(v)}
        self._names = {w.casefold() for w in re.findall(r"\b\w*[A-Z]\w*\b", self.prompt)   # not "Send", an IBAN
                       if len(w) >= 3 and w.casefold() not in self.lexicon.stopwords | verbs and canonical(w)[0] == "text"} | \
                      {w.casefold() for w in re.findall(r"'([^']{3,40})'", bare)}
        self._cache.clear()
        self._pointers.observe_prompt(self.prompt)

    def _third_party(self, text: str) -> None:
        self._tp_ents.update(entities(text))
        self._tp_refs.update(m.lstrip("0") for m in re.findall(r"#\s?(\d{1,6})\b", text))
        wf = word_form(text)
        self._tp_words.append(wf)
        self._tp_shingles |= _shingles(wf.split())
        self._said.observe(text)
        self._cache.pop("tp_text", None)

    def _trust(self, role: str, value: str, source: str) -> None: self._trusted.setdefault(role, {})[canonical(value)] = source

    def observe_result(self, tool: str, result: Any, arguments: Mapping[str, Any] | None = None) -> None:
        """Record one tool result, each field labelled by ``tool``'s declaration; ``arguments``: the call's."""
        self.calls.append(tool)
        decl = self.toolset.decl(tool)
        self._pointers.observe_result(result, arguments, decl.kind)
        self._cache = {k: v for k, v in self._cache.items() if k not in ("codes", "derived")}
        recs, rest = listed_records(self._service.unwrap(tool, decl, list(_records(result))), decl)   # wrappers, envelopes
        if decl.declared and not decl.inferred or decl.inferred and (decl.results or decl.whole):   # the user's store
            self._vocab.seen.update(field_names(result))
        if decl.whole and not recs:   # a bare value or list of values only: never a record's fields
            for s in _leaves(result):
                self._trust(decl.whole, s, f"{tool} (declared {decl.whole})")
            return
        for s in _leaves(rest if recs else result):   # no record: third-party text, as a wrapper's other fields
            self._third_party(s)
        if not recs:
            return
        nouns = self._cache.setdefault("nouns", {d.whole for d in self.toolset.tools.values() if d.inferred})
        sysfs = platform_fields(self.sys_ids, tool, decl, recs, arguments, nouns, self._states, self.prompt,
                                self.toolset.roles.get("vocabulary", frozenset()))
        for rec, sysf, o in zip(recs, sysfs, self._service.observe(tool, decl, result, recs, arguments, self)):
            self._record(tool, decl, rec, recs if decl.inferred else [], {**o, **sysf})

    def _states(self, s: str) -> bool:   # whether the request states value s (an id or e-mail; its words)
        c = canonical(s)
        return c in self._user_ents if c[0] not in ("text", "number") else c[0] == "text" and f" {c[1]} " in self._user_text

    def _record(self, tool: str, decl: ToolDecl, rec: dict[str, Any], among: Sequence[Mapping[str, Any]],
                sysf: Mapping[str, str] = {}) -> None:
        key, select = self._names_record(rec), self._names_record(rec, among)   # select: for ids (below)
        named, unnamed = "", decl.inferred and bool(decl.results) and key is None   # named: the name it is named by
        ident = BoundValues.identity(rec, decl.results, decl.inferred)   # the record a name binds (selection)
        nested = {p: set(v) for p, v in nested_ids(rec).items() if p in sysf}   # platform ids of nested objects
        for f, v in rec.items():
            role = decl.results.get(f)
            for s in _leaves(v):
                if role:
                    self._trust(role, s, f"{tool}.{f}")
                    named = named or (word_form(s) if role == "person" and f" {word_form(s)} " in self._user_text else "")
                elif f in decl.private:
                    if len(word_form(s)) >= 4:
                        self._private[word_form(s)] = (f"{tool}.{f}", decl.private[f])
                else:
                    if f not in sysf and s not in nested.get(f"{f}.id", ()) and ("id" not in sysf or s != rec["id"]):
                        # system-assigned (nested ids; the own id a field echoes): not third-party, private as any
                        self._third_party(s)
                    if not decl.declared and len(word_form(s)) >= 4 and word_form(f):
                        # an undeclared tool's field may be private: it leaves only when the request names it
                        self._private.setdefault(word_form(s), (f"{tool}.{f} (undeclared tool)", record_nouns(f, tool)))
                    elif unnamed and word_form(f):   # an inferred store's record the request does not name: its
                        for w in {word_form(s), *identifiers(word_form(s))} - {""}:   # text and its keys stay
                            self._private.setdefault(w, (f"{tool}.{f} (a record the request does not name)",
                                                         (word_form(f),)))
        if named:   # a directory record the user pointed at by name resolves its other trusted fields
            self._resolved.add_all(named, tool, ident, ((canonical(s), f"{tool}.{f} of the record the request names")
                                                        for f in decl.results for s in _leaves(rec.get(f))))
        self._selectable.extend([(rec, decl.select, tool)] if decl.select else [])
        if key is not None:   # an inferred store's namesake makes the name ambiguous: it names no record's ids
            if self._named.names(canonical(key), None if select is None else canonical(select), tool, ident):
                self._named.add_all(canonical(select), tool, ident, ((canonical(s), f"{tool} record the request names "
                                    f"({select!r})") for f in decl.results for s in _leaves(rec.get(f))))
            for s in _leaves(rec):
                for lk in links(s):
                    self._pointed.setdefault(lk.form, f"a link in a {tool} record the request names ({key!r})")

    def _names_record(self, rec: Mapping[str, Any], among: Sequence[Mapping[str, Any]] = ()) -> str | None:
        """A short value of ``rec`` the request names (a channel, a sender, an IBAN), if any; with ``among`` (an
        inferred listing's records), one that not every record of the listing holds (``state: open`` of a listing
        of open issues selects none of them for an id: it is the listing's filter; links and privacy keep any)."""
        shared = set.intersection(*({canonical(s) for s in _leaves(r)} for r in among)) if len(among) > 1 else set()
        for v in rec.values():
            for s in _leaves(v):
                if (c := canonical(s)) in shared:
                    continue
                if c[0] not in ("text", "number") and c in self._user_ents:
                    return s
                if c[0] == "text" and 0 < len(c[1].split()) <= 4 and f" {c[1]} " in self._user_text:
                    return s
        return None

    def _tp_text(self) -> str: return self._cache.setdefault("tp_text", " " + " \n ".join(self._tp_words) + " ")

    def in_third_party(self, value: str) -> bool:
        c = canonical(value)
        return c in self._tp_ents if c[0] != "text" else bool(c[1]) and f" {c[1]} " in self._tp_text()

    def _id_in_third_party(self, value: str, role: str = "") -> bool:
        """Whether third-party content writes this identifier: a short number only where it reads as an id
        (``id 13``, ``#13``, ``number 13``, ``issue 13`` after the ``role``'s own noun: a bare ``13`` in a
        file's text is no reference); anything else wherever it occurs."""
        v, r = value.strip(), rf"|\b{re.escape(role)}s?" if role.isalpha() else ""
        if re.fullmatch(r"\d{1,6}", v):
            return v.lstrip("0") in self._tp_refs or re.search(rf"(?:\bids?|\bfiles?|\bemails?|\bevents?|\bnumber|\bno|#{r}) ?{v}\b",
                             self._tp_text()) is not None
        return self.in_third_party(value)

    def user_named(self, value: str) -> bool:
        kind, form = canonical(value)
        if not form:
            return False
        if kind == "url":   # every host in it (the one a client reaches included: links), not any one of them
            return bool(lks := links(value)) and all(lk.site in self._user_sites for lk in lks)
        if kind != "text":
            return (kind, form) in self._user_ents or (kind == "date" and ("date", "*" + form[4:]) in self._user_ents)
        return f" {form} " in self._user_text or form in self._user_parts or form in self._cache.setdefault(
            "joined", joined_words(self._user_text))   # "closed won" names the code ``closedwon``

    def target(self, value: str, role: str, fetch: bool = False, named: bool = False, path: str = "",
               types: tuple[str, ...] = ()) -> tuple[int, str]:
        """Level (2 user, 1 trusted, 0 not) of a target value of ``role``, and its source. For a fetch, a link
        written in a record the request names (a message in the channel the user named) is level 1. With
        ``named`` (a deletion by an inferred declaration), a trusted identifier counts only when it belongs
        to a record the request names, as for the tool set's ``named_ids`` roles."""
        if self.user_named(value):
            return 2, "named in the request"
        c = canonical(value)
        if c in self._resolved:
            return 2, self._resolved[c]
        if (p := self._pointers.source(c, role)) is not None:
            return 1, p   # the one value of its kind in a page the request points at (.pointers)
        if fetch and role == "url" and c[0] == "url" and c[1] in self._pointed:
            return 1, self._pointed[c[1]]
        if (sys := self.sys_ids.source(value, id_keys(role, path, types))) is not None and \
                not self._id_in_third_party(value, role):   # a nested argument (items.id) by its path
            return 1, sys   # the platform's own id of an object the request selects or this run created
        src = self._trusted.get(role, {}).get(c)
        if src is None or role == "unknown":
            where = "third-party content" if self.in_third_party(value) else "no source"
            return 0, f"{role} {value!r}: from {where}, not the request or a trusted {role} source"
        if (role in self.toolset.roles["named_ids"] or named) and c not in self._named:
            return 0, f"{role} {value!r}: in {src}, but not a record the request names"
        if role in self.toolset.roles["ids"] and self._id_in_third_party(value, role):
            return 0, f"{role} {value!r}: in {src} but also written in third-party content (fail closed)"
        return 1, src

    def link_target(self, lk: Link, fetch: bool = False) -> tuple[int, str]:
        """:meth:`target` of a link as the parser read it: its form is never parsed again (the form
        ``evil/?r=<the user's site>`` of ``https://evil/?r=...`` would read back as the user's site)."""
        if lk.site in self._user_sites:
            return 2, "named in the request"
        c = ("url", lk.form)
        if c in self._resolved:
            return 2, self._resolved[c]
        if fetch and lk.form in self._pointed:
            return 1, self._pointed[lk.form]
        if (src := self._trusted.get("url", {}).get(c)) is None:
            where = "third-party content" if self.in_third_party(lk.form) else "no source"
            return 0, f"url {lk.form!r} (host {lk.host}): from {where}, not the request or a trusted url source"
        if "url" in self.toolset.roles["ids"] and self._id_in_third_party(lk.form):
            return 0, f"url {lk.form!r}: in {src} but also written in third-party content (fail closed)"
        return 1, src

    def _derived(self) -> set[float]:
        if "derived" in self._cache:
            return self._cache["derived"]
        def vals(rec: Any) -> list[tuple[str, str]]: return [canonical(s) for s in _leaves(rec)]
        base = set(self._user_numbers) | selected_amounts(   # a record the request selects: its amounts; by a party's
            [(rec, fields) for rec, fields, _ in self._selectable],   # entity, not the user's own account (in every
            lambda r: any(c in self._user_ents and c not in self._trusted.get("own_account", {})   # record: none)
                          for c in vals(party_values(r)) if c[0] != "number"),
            lambda r: {n for n in self._names if any(c[0] == "text" and f" {n} " in f" {c[1]} " for c in vals(r))})
        return self._cache.setdefault("derived", two_step_amounts(base, self._user_percents))

    def amount(self, value: str, minor: tuple[Any, ...] | None = None) -> tuple[int, str]:
        kind, form = canonical(value)
        if kind != "number":
            return 0, f"amount {value!r} is not a number"
        x = float(form)
        if x <= 0:   # a computation (0 - 45.5) or a sign flips who pays: no payment is zero or negative
            return 0, f"amount {value!r} is not positive"
        if x in self._user_numbers:
            return 2, "written in the request"
        if minor is not None and (n := in_minor_units(x, self._user_numbers, minor[0])) is not None:
            return 2, f"the request's {n:g} in the currency's minor unit (the parameter's description)"
        if round(x, 2) in self._derived():
            return 1, "computed from the request's numbers and the records it selects"
        return 0, f"amount {value!r}: not written in the request nor computed from it and the records it selects"

    def day(self, value: str, role: str, grants: list[Grant]) -> tuple[int, str]:
        if is_now(value, self.clock()):   # read from the clock: neither the request's nor a third party's
            return 2, "the current time (the run's clock)"
        scope_days = (set().union(*(dates(g.clause) for g in grants)) if grants else set()) or dates(self.prompt)
        kind, form = canonical(value)
        day = form[:10] if kind == "date" else ""
        if scope_days and not (day in scope_days or "*" + day[4:] in scope_days):
            return 0, f"day {value!r} is not a day the request names ({', '.join(sorted(scope_days))})"
        if role == "time":
            scope_t = (set().union(*(times(g.clause) for g in grants)) if grants else set()) or times(self.prompt)
            t = times(str(value))
            if scope_t and t and not t & scope_t:
                return 0, f"time {value!r} is not a time of day the request names ({', '.join(sorted(scope_t))})"
        return 2, "named in the request" if scope_days else "the request constrains no day (the agent's choice)"

    def content(self, value: str, grants: list[Grant], target_level: int) -> tuple[int, str]:
        for lk in links(value):
            if lk.site in self._user_sites:
                continue
            if ("url", lk.form) in self._trusted.get("url", {}):   # the form as parsed, not parsed again
                continue
            return 0, f"link {lk.form!r} in outgoing content is not the user's (site {lk.site})"
        wf, ents = f" {word_form(value)} ", set(entities(value))   # an account or address only third-party text
        for kind, ent in self._tp_ents:   # wrote is the attacker's; an IBAN as a bank reads it, however separated
            if kind in ("iban", "email") and ((kind, ent) in ents or kind == "iban" and _carries(wf, ent)) and \
                    (kind, ent) not in self._user_ents and not any((kind, ent) in d for d in self._trusted.values()):
                return 0, f"{kind} {ent!r} in outgoing content: only third-party content wrote it"
        if (why := self._private_in(wf, [g.clause for g in grants])) is not None:
            return 0, f"{why} sent without a request that names it"
        if target_level < 2 and _shingles(wf.split()) & self._tp_shingles:
            return 0, "forwards third-party text to a target the request does not name"
        return 2, "content checked"

    def _private_in(self, wf: str, scopes: list[str]) -> str | None:
        """The private value in word form ``wf`` that no sentence of ``scopes`` (the grants') names. An
        identifier is found however it is spaced or split (:func:`_carries`: ``4237 4252 7456 2574`` for
        ``4237-4252-7456-2574``, ``H G K 1 3 7 8 0 3``)."""
        scope_wf = [f" {word_form(c)} " for c in scopes]
        for secret, (src, words) in self._private.items():
            if _carries(wf, secret) and not any(f" {word_form(w)}{p} " in c for c in scope_wf for w in words
                                                for p in ("", "s", "es")):
                return f"private {src} ({' / '.join(words)})"
        return None

    def users_words(self, text: str) -> bool:
        """Every word of ``text`` is a word of the request (a word with at most two digits counts when its
        letters are at most a 3-letter suffix: ``1-th`` for the request's ``k-th``), and it carries no code a
        tool result wrote (``463820`` from an e-mail, however spaced: a number is not the user's word)."""
        wf = word_form(text)
        digits = _NOT_DIGIT.sub("", wf)
        if any((_carries(f" {wf} ", c) or _NOT_DIGIT.sub("", c) in digits) and not _carries(self._user_text, c)
               for c in self._record_codes()):
            return False
        for w in wf.split():
            if f" {w} " in self._user_text:
                continue
            if len(_NOT_DIGIT.sub("", w)) in (1, 2) and len(re.sub(r"[\d.,:-]", "", w)) <= 3:
                continue
            return False
        return True

    # ------------------------------------------------------------------ the call
    def _read_links(self, decl: ToolDecl, arguments: Mapping[str, Any]) -> tuple[int, str] | None:
        """The lowest trust of a link a read's arguments carry (the read is then a fetch of it), or ``None``. File
        names are not links: a file-name role's value is skipped while it is a local path by the allow-list
        grammar of :func:`~agentguard.policies.links.local_path` (``download_file(source="https://...")`` and
        ``bank.com/pay/to/x`` are fetches); a ``query`` one when it is such a path *and* a trusted listing gave
        it (``read_file(file_path="app.py")``); any other link must be the user's or trusted (fail closed)."""
        worst: tuple[int, str] | None = None
        for arg, v in arguments.items():
            role = decl.role(arg)
            for s in _arg_leaves(v):
                if role in _FILE_ROLES and local_path(s):
                    continue   # a local path or file name (``q3.md``), not a network address
                if role == "query" and local_path(s) and any(canonical(s) in self._trusted.get(r, {})
                                                             for r in _FILE_ROLES):
                    continue   # a file name a trusted listing gave (``app.py`` from list_files)
                for lk in links(s):
                    lv, w = self.link_target(lk, True)
                    if worst is None or lv < worst[0]:
                        worst = (lv, f"{arg}: a read carrying a link is a fetch: {w}")
        return worst

    def _record_codes(self) -> set[str]:
        """Words of 4+ digits (not dates, times or an ISO instant's pieces) that tool results wrote (when first needed)."""
        if "codes" not in self._cache:
            words = itertools.chain(" ".join(self._tp_words).split(), (w for p in self._private for w in p.split()),
                                    (w for d in self._trusted.values() for _, f in d for w in f.split()),
                                    (word_form(w) for w in self.sys_ids.seen))
            self._cache["codes"] = {w for w in words if len(_NOT_DIGIT.sub("", w)) >= 4
                                    and canonical(w)[0] != "date" and not (_TIME.fullmatch(w) or _ISO_PART.fullmatch(w))}
        return self._cache["codes"]

    def _remote_leak(self, decl: ToolDecl, arguments: Mapping[str, Any], tool: str = "") -> str | None:
        """Why a read of a service that is not the user's own store (an undeclared tool, or an inferred one
        that is neither a store nor a listing) carries the user's data out, or ``None``: its arguments go to
        that service, so a private value of the user (as for outgoing content), a code or number of four
        or more digits that a tool result wrote and the request did not (``search_web(query="463820")``),
        or eight consecutive words of a tool result (an e-mail's sentences) needs the request to name it."""
        if decl.declared and not decl.inferred or decl.inferred and (decl.results or decl.whole):
            return None
        types = type_keys(arguments, decl.choices)   # an id the platform filed for the type the call names goes home
        for arg, v in arguments.items():
            for s in (x for x in _arg_leaves(v) if not self._service.goes_back(tool, x)):   # a key back home
                if types and self.sys_ids.source(s, id_keys(decl.role(arg), arg, types)) is not None:
                    continue
                wf = f" {word_form(s)} "
                if (why := self._private_in(wf, [self.prompt])) is not None:
                    return f"{arg}: a read of a service that is not the user's carries {why}"
                for w in self._record_codes():
                    if _carries(wf, w) and not _carries(self._user_text, w):
                        return f"{arg}: a read of a service that is not the user's carries {w!r} from a tool result"
                if _shingles(wf.split()) & self._tp_shingles - _shingles(self._user_text.split()):
                    return f"{arg}: a read of a service that is not the user's carries a tool result's text"
        return None

    def facts(self, tool: str, arguments: Mapping[str, Any]) -> Facts:
        """The verified policy's facts for a proposed call (see the module docstring)."""
        decl = self.toolset.decl(tool, arguments.keys())
        kind = _KIND_CODE[decl.kind]
        self._pointers.bind(s for v in arguments.values() for s in _arg_leaves(v))   # an owner-bound pointer's call
        name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", tool).casefold().replace("-", "_")
        if decl.kind == "read" and (decl.inferred or not decl.declared) and (
                (m := _COMPOUND.search(name)) and not {m.group(1), m.group(0).replace("_", "")} & READ_VERBS):
            # not a read by its name's first verb alone: whatever else it does, no grant names it
            return Facts(_KIND_CODE["write"], 2, False, 2, "", f"{tool}: a read verb joined to {m.group(0)!r}")
        if decl.kind == "read":
            carried = self._read_links(decl, arguments)
            if carried is None and (leak := self._remote_leak(decl, arguments, tool)) is not None:
                return Facts(_KIND_CODE["fetch"], 0, True, 2, "", leak)
            if carried is None:
                return Facts(kind, 2, True, 2, "", "a read")
            return Facts(_KIND_CODE["fetch"], carried[0], True, 2, "", carried[1])
        content = [a for a, r in decl.args.items() if r in self.toolset.roles["content"]]
        grants = self._service.granted(tool, decl, arguments, self, content)   # in scope, or the record's key's
        grant, roles, contents = "; ".join(g.describe() for g in grants), self.toolset.roles, list[str]()
        tt, why_t, failed = 2, "", set[str]()
        vt, why_v = omitted_values(decl, arguments, self.prompt, roles["amounts"], tool)
        types, checked = type_keys(arguments, decl.choices), set().union(*(roles[r] for r in _CHECKED))
        for arg, v in expand_arguments(decl, arguments, self._vocab.known):
            base, choices = self._vocab.resolve(decl, arg, checked)   # a store's field name: its declared role
            for s in _arg_leaves(v):   # an ISO instant in an open parameter: a time (.vocabulary), not a target
                role = "time" if base == "unknown" and "time" in roles["days"] and parse_instant(s, False) else base
                if not s.strip():
                    continue
                if role in ("unknown", "url") and (opt := self._service.option(tool, arg, s, arguments, self.prompt, grants, decl.actions)):
                    (tt, why_t), role = min((tt, why_t), (opt[0], f"{arg}: {opt[1]}"), key=lambda t: t[0]), "offered"
                if choices and role in ("choice", "flag"):   # a closed set: never a target
                    vt, why_v = min((vt, why_v), closed_value(self.prompt, arg, s, choices, tool), key=lambda t: t[0])
                    continue
                if role in roles["content"]:
                    contents.append(s)
                    continue
                if role in roles["targets"] or role == "unknown":
                    lv, w = self.target(s, role, decl.kind == "fetch", decl.inferred and decl.kind == "delete", arg, types)
                    if lv == 0:
                        failed.add(role)
                    if lv < tt:
                        tt, why_t = lv, f"{arg}: {w}"
                elif role in roles["amounts"] or role in roles["days"] or role in roles["account_values"]:
                    lv, w = (self.amount(s, (arguments.get("currency"),) if arg in decl.minor else None)
                             if role in roles["amounts"] else self.day(s, role, grants)
                             if role in roles["days"] else ((2, "named in the request") if self.user_named(s)
                                                            else (0, f"{role} value not written in the request")))
                    if lv < vt:
                        vt, why_v = lv, f"{arg}: {w}"
                if role not in roles["targets"] and role != "url":
                    for lk in links(s):   # an address written inside a non-content argument is a target too
                        lv, w = self.link_target(lk, decl.kind == "fetch")
                        failed |= {"url"} if lv == 0 else set()
                        if lv < tt:
                            tt, why_t = lv, f"{arg}: {w}"
        if tt == 0 and failed <= self.toolset.roles.get("members", frozenset()) and contents and all(
                self.users_words(s) for s in contents):
            tt, why_t = 1, "a member of the user's workspace, sent only words the request wrote"
        for s in contents:
            lv, w = self.content(s, grants, tt)
            if lv < vt:
                vt, why_v = lv, w
        why = why_t if tt == 0 else (f"no grant for {'/'.join(decl.actions) or tool}" if not grants else why_v)
        return Facts(kind, tt, bool(grants), vt, grant, why)
