"""Records of a service as its own tools return them (issue 27, after the blind Jira + Confluence run; not blind).

Four structural rules of the dataflow ledger (:class:`agentguard.policies.dataflow.FlowLedger`) for tools whose
declarations were *inferred* (:mod:`agentguard.policies.toolinfer`) and whose names carry a **namespace** (an MCP
server's mount prefix, ``jira_`` of ``jira_search``: :func:`~agentguard.policies.toolnames.namespaced`). Each tells
what the service assigns from what an outsider writes, by where a value came from in the run, never because an
equal string appears somewhere; each relaxation's attack is kept refused in ``tests/policies/test_provenance_fresh4.py``:

- **a key goes back where it came from** (:meth:`ServiceRecords.goes_back`): the own key of a record (its top-level
  ``id`` or ``key``: the service assigned it) that a read of namespace N returned, sent as the *whole* argument of a
  read of the same namespace, goes back to the service that assigned it and leaks nothing (the ledger's remote-leak
  check skips it). A key written inside a record's free text (a description, a page body), or any value sent to a
  read of another namespace, is checked as before.
- **a record the request selects** (:meth:`ServiceRecords.observe`): a read that returns one record (not a listing)
  whose every string argument the request states or is an id already selected (``get_page(title='Release
  checklist', space_key='ENG')``), or a listing or search whose query is a conjunction of equality predicates
  (:func:`query_values`: ``status = "In Review"``, ``x IN (a, b)``) on values the request states (a zero-argument
  function the service evaluates, ``currentUser()``, names the caller; at least one stated value) selects the
  records it returns that hold each value as a whole field: their own
  keys are filed as platform ids (:class:`~agentguard.policies.platformids.SystemIds`) under the object noun of the
  tool and the roles of the namespace's key parameters (``issue_key`` -> ``issue``). Containment (``~``), negation,
  comparison or ``OR`` selects nothing: an outsider makes records match by text it writes. An id third-party
  content also writes stays refused (the ledger's fail-closed check of platform ids).
- **options a listing offers** (:meth:`ServiceRecords.option`): a parameter whose name, less a trailing ``id``/
  ``key``/``name``, is the object words of a listing read of the same namespace (``transition_id`` and
  ``jira_get_transitions``, ``link_type`` and ``jira_get_link_types``) takes the own id or name of a record that
  listing returned when called with the same values for the arguments both calls share (the transitions offered
  for *this* issue). Only a listing of labels counts (every string field of every record four words at most: no
  comment or page body, which outsiders write), only for a parameter whose role the schema leaves open (or a word
  misread as a link: ``link_type``), never a recipient, and never an address (a listing of users offers no one to
  send to); where the request states a label of an offered option (``to Done``), only that option. A value no
  listing offered, or offered for another record, is checked as before.
- **field names of the service** (:meth:`ServiceRecords.observe`): the field-name keys of the records a read of a
  namespace returned, and the keys an object parameter's own description writes as an example (``{'resolution':
  {'name': 'Fixed'}}``: the schema's author, not an outsider), are the tool set's vocabulary (``fields={"priority":
  {"name": "High"}}``: ``priority`` and ``name`` are field names, not values; ``High`` is still checked).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Mapping, Sequence

from .capabilities import Grant
from .grantwords import _lexicon, imperatives, stem
from .links import links
from .platformids import SystemIds, object_noun
from .provenance import canonical, scalars, word_form
from .selection import BoundValues
from .toolnames import tokens
from .vocabulary import field_names, singular

__all__ = ["MOVE_VERBS", "OWN_KEYS", "ServiceRecords", "clause", "holds", "identifiers_in", "key_grant", "label_listing",
           "namespace", "own_keys", "query_clauses", "query_values", "sentences"]

#: the fields that hold a record's own key, which the service assigns
OWN_KEYS: tuple[str, ...] = ("id", "key")
_TRAILING = frozenset({"id", "ids", "key", "keys", "name"})
#: verbs that move a record to a state (with the grant lexicon's change verbs: change, set, mark, switch, ...)
MOVE_VERBS: tuple[str, ...] = ("move", "transition", "shift", "push", "bring", "take", "send back", "put")


@lru_cache(maxsize=1)
def _moving() -> frozenset[str]:
    return frozenset(stem(w) for w in (*_lexicon()["change_verbs"], *MOVE_VERBS) if " " not in w)
_NOT_BOUNDS = frozenset({"to", "please", "just", "first", "next", "finally"})
_PRONOUNS = frozenset({"it", "them", "this", "that", "these", "those"})
_STOP = frozenset({"the", "a", "an", "to", "for", "of", "on", "in", "as", "into", "with", "by", "at"})
_ORDER = re.compile(r"\s+order\s+by\s+[\w.,\s]+$", re.I)
_AND = re.compile(r"\s+and\s+", re.I)
_CLAUSE = re.compile(r"([A-Za-z_][\w.]*)\s*(=|\bis\b|\bin\b)\s*(.+)", re.I | re.S)
_FUNC = re.compile(r"[A-Za-z_]\w*\(\s*\)")
_BARE = re.compile(r"[\w.@:+-]+")


def namespace(tool: str, namespaces: frozenset[str]) -> str:
    """The namespace of ``tool`` (its first word, where the tool set marks it as one), else ``""``."""
    w = tokens(tool)
    return w[0] if len(w) >= 2 and w[0] in namespaces else ""


def own_keys(rec: Mapping[str, Any]) -> list[str]:
    """The record's own keys: its top-level ``id`` and ``key`` scalars (strings or integers, never booleans)."""
    return [str(rec[f]).strip() for f in OWN_KEYS if isinstance(rec.get(f), (str, int))
            and not isinstance(rec.get(f), bool) and str(rec[f]).strip()]


def query_values(query: str) -> list[str] | None:
    """Every value of :func:`query_clauses`, in order."""
    clauses = query_clauses(query)
    return None if clauses is None else [v for c in clauses for v in c]


def holds(rec: Any, value: str) -> bool:
    """Whether a scalar of ``rec`` (any depth) is ``value`` as a whole (case-folded): the record a query or a read
    by this value returns holds it (``status.name == "In Review"``; a word inside a description is no match)."""
    want = value.strip().casefold()
    return any(isinstance(x, (str, int, float)) and not isinstance(x, bool) and str(x).strip().casefold() == want
               for x in scalars(rec))


def query_clauses(query: str) -> list[list[str]] | None:
    """The values a query selects by, per clause (an ``IN`` clause's alternatives together), when it is a conjunction
    of equality or membership predicates (``f = v``, ``f IN (a, b)``, ``f IS v``; an ``ORDER BY`` tail allowed), else
    ``None``. A zero-argument function (``currentUser()``) is no value. ``OR``, ``NOT``, ``!=``, ``~`` (containment), comparisons, or anything that
    does not parse select nothing (``None``)."""
    q = _ORDER.sub("", query.strip())
    if not q or re.search(r"\bor\b|\bnot\b|!|~|<|>|\|", q, re.I):
        return None
    out: list[list[str]] = []
    for clause in _AND.split(q):
        m = _CLAUSE.fullmatch(clause.strip())
        if m is None:
            return None
        op, rhs = m.group(2).casefold(), m.group(3).strip()
        items, alts = [rhs], list[str]()
        if op == "in":
            if not (rhs.startswith("(") and rhs.endswith(")")):
                return None
            items = [x.strip() for x in rhs[1:-1].split(",")]
        for v in items:
            if _FUNC.fullmatch(v):
                continue
            if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
                v = v[1:-1]
                if not v.strip() or re.search(r"[\"']", v):
                    return None
            elif not _BARE.fullmatch(v):
                return None
            alts.append(v.strip())
        if alts:
            out.append(alts)
    return out


def label_listing(recs: Sequence[Mapping[str, Any]]) -> bool:
    """Whether ``recs`` are labels, not content: each record has an own key or a name, and every string at its top
    level is four words at most (a transition, a link type; never a comment, whose body an outsider writes)."""
    return bool(recs) and all(
        (own_keys(r) or isinstance(r.get("name"), str)) and all(
            len(v.split()) <= 4 for v in r.values() if isinstance(v, str)) and not any(
            isinstance(v, (Mapping, list)) for v in r.values()) for r in recs)


def sentences(prompt: str) -> list[str]:
    """The request's sentences (a full stop, ``!`` or ``?`` before a space, or a line break, ends one; ``2.7.4``
    does not)."""
    return [x.strip() for x in re.split(r"(?<=[.!?])\s+|\n+", prompt) if x.strip()]


def _verb_names_tool(word: str, verb: str, nouns: Sequence[str]) -> str:
    """How the imperative ``word`` names a tool whose name has ``verb`` and ``nouns`` (``""``: it does not): the
    tool's own verb, a noun of its name as the verb (``comment``), the last word of a compound noun of its name
    (``log`` of ``worklog``, both parts three letters or more), or a comment verb where its head noun is a comment
    noun (``answer`` for ``add_comment``; the grant lexicon's closed lists)."""
    lex, st = _lexicon(), stem(word)
    if st == stem(verb):
        return "the tool's own verb"
    if st in {stem(n) for n in nouns}:
        return "a noun of the tool's name as the verb"
    if len(word) >= 3 and any(len(n) - len(word) >= 3 and n.endswith(word) for n in nouns):
        return "the last word of a compound noun of the tool's name"
    if nouns and word in lex["comment_verbs"] and stem(nouns[-1]) in {stem(n) for n in lex["comment_nouns"]}:
        return "a comment verb"
    return ""


def key_grant(tool: str, decl: Any, arguments: Mapping[str, Any], prompt: str, namespaces: frozenset[str]
              ) -> list[Grant]:
    """A grant of a namespaced tool that writes (no deletion, no send) named by the record its key argument
    identifies (``issue_key='TP-137'``): a command of the request (no question) whose clause-start word names the
    tool (:func:`_verb_names_tool`: "Log 2h 30m on TP-137", "answer Ruth on SUP-219") and whose clause (from that
    word to the next ``and``/``then``/``,``/``;``/``:``: :func:`clause`) writes the key, or writes no identifier but
    a pronoun, the sentence before writing that key and no other identifier ("How much is logged on TP-137? Also
    log another 1h on it"). "Log 2h on TP-137 and close TP-138" grants no worklog on TP-138; the record is still
    checked as a target, every value as usual; "Did anyone log time on TP-137?" grants nothing."""
    words = tokens(tool)
    if not namespace(tool, namespaces) or decl.kind != "write" or not decl.actions or len(words) < 3:
        return []
    verb, nouns = words[1], [w for w in words[2:] if w not in _STOP]
    keys = {word_form(v) for a, v in arguments.items() if isinstance(v, str) and v.strip()
            and (tokens(a) or [""])[-1] in ("key", "id")}
    prev = ""
    for sentence in sentences(prompt):
        before, prev = prev, sentence
        if sentence.endswith("?") or not keys:
            continue
        for w in imperatives(sentence):
            if not (how := _verb_names_tool(w, verb, nouns)):
                continue
            part = clause(sentence, w)
            ids = identifiers_in(part)
            if ids and ids <= keys or not ids and bool(_PRONOUNS & set(word_form(part).split())) and \
                    identifiers_in(before) and identifiers_in(before) <= keys:
                return [Grant(decl.actions[0], f"{w} ... {' / '.join(sorted(keys))} ({how}, the record its key "
                                               f"names)", part)]
    return []


def identifiers_in(text: str) -> set[str]:
    """The identifiers ``text`` writes (word forms): a word of letters, ``-`` or ``_`` and then digits (``tp-137``,
    ``sup_9``), or of five digits or more (a page id)."""
    return {w for w in word_form(text).split() if re.fullmatch(r"[a-z][a-z0-9]*[-_]\d+|\d{5,}", w)}


def clause(sentence: str, verb: str) -> str:
    """The clause of ``sentence`` that ``verb`` (a clause-start word) begins: up to the next ``,``/``;``/``:`` or
    clause-start word of the grant lexicon that joins clauses (``and``, ``then``, ``also``, ``but``...; not ``to``
    of "move it to Done", nor an adverb such as ``please`` or ``first``)."""
    m = re.search(rf"(?<![\w-]){re.escape(verb)}(?![\w-])", sentence, re.I)
    rest = sentence[m.start():] if m else sentence
    starts = "|".join(re.escape(w) for w in _lexicon()["clause_starts"] if w not in _NOT_BOUNDS)
    return re.split(rf"[,;:]|\s(?:{starts})\s", rest, maxsplit=1, flags=re.I)[0]


def _commanded(prompt: str, rec: Mapping[str, Any], keys: set[str]) -> tuple[str, str, str] | None:
    """``(verb, label, clause)`` where a command of ``prompt`` states a label of option ``rec`` in the clause its
    verb begins (no question; a clause-start word that is a change verb of the grant lexicon or one of
    :data:`MOVE_VERBS`, or the option's own name as a verb: "Resolve it"), for the record whose key word forms are
    ``keys``: the clause writes those keys only, or no identifier while the whole request writes none but them
    ("Look at TP-142 and move TP-143 to In Progress" moves no TP-142), else ``None``. A statement ("I moved it to
    Done", "Omar moved it") has none."""
    for sentence in sentences(prompt):
        if sentence.strip().endswith("?"):
            continue
        for w in imperatives(sentence):
            part = clause(sentence, w)
            said, ids = f" {_content_words(part)} ", identifiers_in(part)
            if ids - keys or not ids and identifiers_in(prompt) - keys:
                continue
            for f, v in rec.items():
                if f in OWN_KEYS or not isinstance(v, str) or not (cw := _content_words(v)) or f" {cw} " not in said:
                    continue
                own = {stem(cw.split()[0])} if f == "name" else set()   # the option's own verb: "Resolve it"
                if stem(w) in own or stem(w) in _moving():
                    return w, v, part.strip()
    return None


def _also_stated(part: str, arguments: Mapping[str, Any]) -> set[str]:
    """The parameters of a call that the command's clause ``part`` asks for beside the option: one named as a comment
    noun of the grant lexicon where the clause names one ("with a short closing note": ``comment``), and a mapping
    whose every scalar value the clause writes ("as Fixed": ``fields={"resolution": {"name": "Fixed"}}``)."""
    said = f" {word_form(part)} "
    nouns = {stem(n) for n in _lexicon()["comment_nouns"]}
    out = {a for a in arguments if {stem(t) for t in tokens(a)} & nouns and any(
        stem(w) in nouns for w in said.split())}
    for a, v in arguments.items():
        leaves = scalars(v) if isinstance(v, Mapping) else []
        if leaves and all(isinstance(x, str) and word_form(x) and f" {word_form(x)} " in said for x in leaves):
            out.add(a)
    return out


def _content_words(text: str) -> str:
    return " ".join(w for w in re.findall(r"[a-z0-9]+(?:[.-][a-z0-9]+)*", text.casefold()) if w not in _STOP)


@dataclass
class ServiceRecords:
    """One run's records of namespaced services (see the module docstring): ``returned``: namespace -> own keys of
    the records its reads returned; ``listings``: the label listings read, ``(namespace, object words, the
    listing call's scalar arguments, its records)``."""

    namespaces: frozenset[str] = frozenset()
    key_roles: Mapping[str, frozenset[str]] = field(default_factory=dict)   # namespace -> roles of key parameters
    described: frozenset[str] = frozenset()   # keys an object parameter's own description writes ({'resolution': ..})
    returned: dict[str, set[str]] = field(default_factory=dict)
    listings: list[tuple[str, tuple[str, ...], dict[str, str], Sequence[Mapping[str, Any]]]] = field(
        default_factory=list)

    @classmethod
    def of(cls, toolset: Any) -> "ServiceRecords":
        """From a tool set (its ``namespaces`` role class: :func:`~agentguard.policies.toolinfer.with_inferred`): the
        roles of each namespace's key parameters (``issue_key`` -> ``issue``; a parameter whose last word is ``id``
        or ``key`` and whose role is a named object, not ``unknown``)."""
        namespaces = frozenset(toolset.roles.get("namespaces", frozenset()))
        roles: dict[str, set[str]] = {}
        for name, d in toolset.tools.items():
            ns = namespace(name, namespaces)
            if ns and getattr(d, "inferred", False):
                for a, r in d.args.items():
                    t = tokens(a)
                    if t and t[-1] in ("id", "key") and r not in ("unknown", "text", "choice", "flag", "query"):
                        roles.setdefault(ns, set()).add(r)
        return cls(namespaces, {k: frozenset(v) for k, v in roles.items()},
                   described=frozenset(toolset.roles.get("described_keys", frozenset())) if namespaces else frozenset())

    def observe(self, tool: str, decl: Any, result: Any, recs: list[dict[str, Any]],
                arguments: Mapping[str, Any] | None, ledger: Any) -> list[dict[str, str]]:
        """Record one result of an inferred read of a namespace (the rules of the module docstring) in ``ledger``
        (a :class:`~agentguard.policies.dataflow.FlowLedger`); returns, per record, its own-key fields
        (system-assigned: not third-party text; still private where the ledger says so)."""
        ledger._vocab.seen.update(self.described)
        return self.record(tool, decl, result, recs, arguments, ledger.sys_ids, ledger.user_named,
                           ledger._vocab.seen, ledger._resolved)

    def record(self, tool: str, decl: Any, result: Any, recs: list[dict[str, Any]],
               arguments: Mapping[str, Any] | None, ids: SystemIds, stated: Callable[[str], bool],
               vocabulary: set[str], resolved: BoundValues) -> list[dict[str, str]]:
        """:meth:`observe` with the ledger's parts. The one record a read by values the request states returns
        (every string argument stated: the page the request names by title and space) is the one the request
        names: its own keys go in ``resolved`` (canonical value -> source), as a directory record the request
        names by name resolves its fields (level 2), bound to the stated values: a second record the same stated
        read returns makes them name neither (:class:`.selection.BoundValues`)."""
        ns = namespace(tool, self.namespaces)
        if not ns or not decl.inferred or decl.kind != "read" or not recs:
            return [{} for _ in recs]
        vocabulary.update(field_names(result))
        for r in recs:
            self.returned.setdefault(ns, set()).update(own_keys(r))
        args = {str(k): v for k, v in (arguments or {}).items() if v is not None}
        single = isinstance(result, Mapping) and (bool(own_keys(result)) or len(result) == 1 and isinstance(
            next(iter(result.values())), Mapping))   # one record, or an envelope of one ({"metadata": {...}})
        listing = len(recs) > 1 or not own_keys(recs[0]) or not single
        if listing and label_listing(recs):
            words = tuple(singular(w) for w in tokens(tool)[2:])
            self.listings.append((ns, words, {k: str(v) for k, v in args.items()
                                              if isinstance(v, (str, int)) and not isinstance(v, bool)}, recs))
        strings = [str(v) for v in args.values() if isinstance(v, str) and v.strip()]
        if not listing and strings and all(stated(x) and holds(recs[0], x) for x in strings) and all(
                isinstance(v, (str, int, float)) for v in args.values()):
            resolved.add_all(("stated", tuple(sorted(canonical(x) for x in strings))), tool,
                             repr(sorted(own_keys(recs[0]))), ((canonical(k), f"{tool}: the record the request names "
                                                                f"({', '.join(strings)!r})") for k in own_keys(recs[0])))
        if self._selects(args, listing, ids, stated):
            nouns = {object_noun(tool), *self.key_roles.get(ns, ())} - {""}
            clauses = [c for s in strings for c in query_clauses(s) or ()] if listing else [[x] for x in strings]
            for r in recs:   # a record that does not hold what the query matched on was not selected by it
                for k in own_keys(r) if all(any(holds(r, v) for v in c) for c in clauses) else ():
                    for n in nouns:
                        ids.file(n, k, f"{tool}.{'/'.join(f for f in OWN_KEYS if f in r)} of a record the request "
                                       f"selects ({', '.join(str(v) for v in args.values())!r})")
        return [{f: "own" for f in OWN_KEYS if f in r and str(r[f]).strip() in own_keys(r)} for r in recs]

    @staticmethod
    def _selects(args: Mapping[str, Any], listing: bool, ids: SystemIds, stated: Callable[[str], bool]) -> bool:
        strings = [str(v) for v in args.values() if isinstance(v, str) and v.strip()]
        if not strings or any(not isinstance(v, (str, int, float)) for v in args.values()):
            return False   # no argument chose it, or a structure this rule does not read
        if not listing:   # one record: every string argument stated or an id already selected
            return all(stated(s) or ids.selected_value(s) for s in strings)
        parsed = [query_values(s) for s in strings]
        if any(p is None for p in parsed) or not any(p for p in parsed):
            return False   # no predicate, or functions only (``assignee = currentUser()``: the request states none)
        return all(stated(v) or ids.selected_value(v) for p in parsed for v in p or ())

    def unwrap(self, tool: str, decl: Any, recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A namespaced read's one record that is an envelope (one key whose value is a record with an own key:
        ``{"metadata": {"id": ...}}``) is that record, as a list wrapper's items are (platformids.listed_records)."""
        if namespace(tool, self.namespaces) and decl.inferred and decl.kind == "read" and len(recs) == 1 and \
                len(recs[0]) == 1 and isinstance(inner := next(iter(recs[0].values())), Mapping) and own_keys(inner):
            return [dict(inner)]
        return recs

    def granted(self, tool: str, decl: Any, arguments: Mapping[str, Any], ledger: Any,
                content: Sequence[str]) -> list[Grant]:
        """The ledger's grants of ``tool`` whose scope covers the call (:func:`~.schemagrants.in_scope`), else the
        grant of the record its key names (:func:`key_grant`)."""
        from .schemagrants import in_scope

        ledger._vocab.seen.update(self.described)   # field names the schemas' own descriptions write
        return in_scope([g for g in ledger.grants if g.action in decl.actions], arguments, content) or key_grant(
            tool, decl, arguments, ledger.prompt, self.namespaces)

    def goes_back(self, tool: str, value: str) -> bool:
        """Whether ``value`` (a whole argument of a read of ``tool``) is the own key of a record a read of the same
        namespace returned: it goes back to the service that assigned it."""
        ns = namespace(tool, self.namespaces)
        return bool(ns) and value.strip() in self.returned.get(ns, ())

    def option(self, tool: str, arg: str, value: str, arguments: Mapping[str, Any], prompt: str,
               grants: list[Grant] | None = None, actions: Sequence[str] = ()) -> tuple[int, str] | None:
        """``(level, why)`` where ``value`` of parameter ``arg`` is an option a label listing of the namespace offered
        for the record this call names (see the module docstring): 2 when offered and the request states no label
        of another option, 0 when the request states another option's label; ``None`` when no listing offered it.

        **The stated option grants its tool** (appended to ``grants`` when it holds none, for the tool's first
        action): a command of the request (a sentence that is no question, whose clause-start words include one
        that is no read verb: :func:`~agentguard.policies.grantwords.imperatives`) states the label of the option
        the call uses ("move it to In Progress", "mark the ticket as waiting for the customer"), as a closed-set
        value the request states grants the change of a schema's enum. The grant covers only the option and the
        arguments the listing was called with (the record): a call setting anything else (a comment, other
        fields) is outside it, and the record is still checked as a target."""
        ns = namespace(tool, self.namespaces)
        t = tokens(arg.rsplit(".", 1)[-1])
        words = tuple(singular(w) for w in (t[:-1] if t and t[-1] in _TRAILING else t))
        if not ns or not words or links(value) or "@" in value:
            return None   # an address is never a label (a listing of users offers no recipient)
        said = f" {_content_words(prompt)} "
        for lns, lwords, largs, recs in self.listings:
            if lns != ns or lwords != words or any(
                    a not in arguments or str(arguments[a]) != v for a, v in largs.items()):
                continue
            hit = next((r for r in recs if value.strip() in {*own_keys(r), str(r.get("name", "")).strip()}), None)
            if hit is None:
                continue
            stated = [r for r in recs if any(isinstance(v, str) and (cw := _content_words(v)) and f" {cw} " in said
                                             for f, v in r.items() if f not in OWN_KEYS)]
            if stated and hit not in stated:
                return 0, f"{arg} {value!r}: offered, but the request states another option ({stated[0].get('name')!r})"
            used = {a for a, v in arguments.items() if v not in (None, "", [], {})}
            if grants is not None and not grants and actions and hit in stated and (
                    cmd := _commanded(prompt, hit, {word_form(v) for v in largs.values()})) is not None and \
                    used <= (scope := {arg, *largs, *_also_stated(cmd[2], arguments)}):
                grants.append(Grant(actions[0], f"{cmd[0]} ... {cmd[1]} (a command stating an option the listing "
                                                f"offered)", cmd[2], frozenset(scope)))
            return 2, f"{arg} {value!r}: an option the listing offered for this record"
        return None
