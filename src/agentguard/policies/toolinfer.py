"""Tool declarations inferred from a tool's own schema by a declared rule set, for tools nobody declared (issue 27).

A tool set's explicit declarations (:mod:`agentguard.policies.toolset`) are written per tool; a tool the
agent is given but the file does not name would otherwise fall to the bare generic rule. :func:`infer` reads
what an agent runtime hands over for every tool (MCP ``tools/list``, an AgentDojo ``Function``): its name,
description, and each parameter's name, JSON-schema type and description, and applies the rules of an
:class:`InferenceLexicon` (a JSON file, ``policies/library/tool_inference_en.json``), each rule one line of
that file:

- **kind**: the first verb of the name, by the ordered ``kinds`` rules (a rule with ``objects`` needs one of
  them among the name's or first sentence's words), else by the published vocabularies of
  ``library/verbs_external.json`` (RFC 9110 methods, Google AIP standard methods, the schema.org Action
  hierarchy: :func:`external_kinds`); a verb none of them knows is a consequential ``write``;
  a read verb with a URL argument is a ``fetch``; a read verb with a *destination* argument (a recipient,
  ``to``, ``cc``) is a ``send``, whatever the description claims ("read-only" in a description is not read),
  unless that argument's own description calls it a ``filter`` (a listing filtered by e-mail reads the store), or
  its ``enum`` lists plain words only (``toObjectType: [companies, contacts]``: type names, not addresses:
  :func:`~agentguard.policies.vocabulary.vocabulary_enum`);
  an ``amount`` whose description says it is in minor units (:mod:`agentguard.policies.platformids`) is
  recorded in the declaration's ``minor``;
- **argument roles**: the ordered ``params`` rules over the parameter name's tokens (``user_email`` ->
  ``user``, ``email``), the first rule that matches wins; a destination's role is refined by its description
  (``IBAN of the recipient`` -> ``account``, ``email addresses`` -> ``email``, else ``person``); an ``id``'s
  role is the id role of its object (``file_id`` -> ``file``, else the tool name's object); a parameter no
  rule knows takes the role of the schema.org property it is named as (:func:`external_param_role`:
  ``amount`` -> amount, ``url`` -> url), else ``unknown`` (only the user's own words ground it); in an ``account`` tool every other
  value is a ``profile`` value (written in the request or refused);
- **actions**: the grant lexicon's actions whose verbs include the tool's verb and whose objects (if any)
  are among the tool's words and, where ``action_needs`` lists roles for the action (``pay`` needs an
  ``amount``), that have an argument of one of them; a ``send`` or ``delete`` with no recognised target
  gets **no** action, so no grant authorises it (it escalates);
- **results**: ``whole`` rules (a bare-value result of a listing such as ``get_channels``; the ledger uses
  ``whole`` only for a bare result, never for records) and ``stores`` rules (the system fields of the
  user's own store, e.g. an e-mail's id, a contact's address) vouch for a role; **every other field is
  third-party**. A tool that is neither a store nor ``public`` has its record fields private as well (a
  value of it leaves only when the request names the field).

**Roles from the tool set's structure** (:func:`listing_roles`, applied by :func:`with_inferred`): a listing
(``get_channels``, ``get_users_in_channel``) gives parameters named after what it lists a role whose trusted
values are the listing's bare values, and a listing of records vouches for the ids of the consequential tool
with the same object words; no word list is involved, so a leave-one-suite-out fold drops none of it.

:meth:`InferenceLexicon.sha256` is the hash of the file's bytes; the leave-one-suite-out bench records it
(the lexicon was frozen before scoring). :func:`with_inferred` adds inferred declarations to a tool set;
the tool set's own declarations always win.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..core.errors import InputError
from .capabilities import GrantLexicon
from .platformids import minor_unit_arg
from .schemafacts import constants, format_role, id_noun, noun_ids
from .toolnames import _singular, external_kinds, external_param_role, namespaced, tokens
from .toolset import BOOLEAN, KINDS, ToolDecl, ToolSet, read_has_effect
from .vocabulary import vocabulary_enum

__all__ = ["InferenceLexicon", "ParamSchema", "ToolSchema", "external_kinds", "external_param_role", "infer",
           "listing_roles", "namespaced", "tokens", "with_inferred"]


#: a string parameter whose schema allows this many characters or more, and whose name or description's first
#: sentence says :data:`PROSE`, is prose (text), not a name or an id (a URL or reference may allow 2048 too)
LONG_TEXT = 1000
PROSE = frozenset({"text", "explanation", "disclosure", "statement", "statements", "description", "body", "content",
                   "message", "note", "notes", "comment", "summary", "details", "reason", "memo", "narrative"})


@dataclass(frozen=True)
class ParamSchema:
    """One parameter: ``name``, its JSON-schema ``types``, ``description``, closed set of values (``enum``) and
    whether the schema lists it as ``required`` (a required parameter identifies what a call acts on; an optional
    one modifies it: :mod:`agentguard.policies.schemagrants` scopes a parameter grant by it)."""

    name: str
    types: tuple[str, ...] = ()
    description: str = ""
    enum: tuple[str, ...] = ()
    required: bool = False
    items: tuple["ParamSchema", ...] = ()   # the properties of an array's object items (push_files' files)
    # or of an object parameter (update_dispute's evidence); max_length: a string's declared maxLength
    max_length: int = 0
    fmt: str = ""   # the JSON-schema ``format`` (date-time): .schemafacts.format_role
    constants: tuple[str, ...] = ()   # values the schema offers (const, default, "use 'primary'"): .schemafacts


def _nested(spec: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The schema whose properties a parameter's value holds: an array's object items, or an object's own."""
    if isinstance(spec.get("items"), Mapping):
        return spec["items"]
    return spec if spec.get("type") == "object" and isinstance(spec.get("properties"), Mapping) else None


@dataclass(frozen=True)
class ToolSchema:
    """What the runtime says about a tool: ``name``, ``description`` and ``params``."""

    name: str
    description: str = ""
    params: tuple[ParamSchema, ...] = ()
    prefix: int = 0   # words of the name that are the tool set's namespace, not its verb (:func:`namespaced`)

    def words(self) -> list[str]:
        """The words of the name after the namespace: ``crm_search_contacts`` in a ``crm_`` set -> search, contacts."""
        return tokens(self.name)[self.prefix:]

    @classmethod
    def from_json_schema(cls, name: str, description: str, schema: Mapping[str, Any] | None) -> "ToolSchema":
        """From a JSON schema of the arguments (MCP ``inputSchema``, pydantic ``model_json_schema()``)."""
        props = (schema or {}).get("properties") or {}
        if not isinstance(props, Mapping):
            raise InputError(f"tool {name!r}: 'properties' of its input schema must be a mapping")
        params = []
        items = [cls.from_json_schema(f"{name}.{p}", "", _nested(s)).params if isinstance(s, Mapping) else ()
                 for p, s in props.items()]
        req = (schema or {}).get("required") or ()
        required = {str(r) for r in req} if isinstance(req, (list, tuple)) else set()
        for (pname, spec), sub in zip(props.items(), items):
            spec = spec if isinstance(spec, Mapping) else {}
            types = [spec.get("type")] + [a.get("type") for a in spec.get("anyOf", ()) if isinstance(a, Mapping)]
            enum_raw = spec.get("enum")
            enum: list[Any] = enum_raw if isinstance(enum_raw, list) else []
            params.append(ParamSchema(str(pname), tuple(str(t) for t in types if t and t != "null"),
                                      str(spec.get("description") or ""),
                                      tuple(str(e) for e in enum if isinstance(e, (str, int, float))
                                            and not isinstance(e, bool)), str(pname) in required, tuple(sub),
                                      ml if isinstance(ml := spec.get("maxLength"), int) else 0,
                                      str(spec.get("format") or ""), constants(spec)))
        return cls(str(name), str(description or ""), tuple(params))

    @classmethod
    def from_mcp(cls, tool: Mapping[str, Any]) -> "ToolSchema":
        """From one entry of an MCP ``tools/list`` answer (``name``, ``description``, ``inputSchema``)."""
        return cls.from_json_schema(str(tool.get("name", "")), str(tool.get("description") or ""),
                                    tool.get("inputSchema"))


@dataclass(frozen=True)
class InferenceLexicon:
    """The inference rules (see the module docstring). Load with :meth:`load` or :meth:`from_config`."""

    kinds: tuple[tuple[str, frozenset[str], frozenset[str]], ...]
    params: tuple[Mapping[str, Any], ...]
    ids: Mapping[str, str]
    whole: tuple[Mapping[str, Any], ...]
    stores: tuple[Mapping[str, Any], ...]
    public: frozenset[str]
    private: frozenset[str]
    action_needs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    sha256: str = ""
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_config(cls, data: Mapping[str, Any], sha256: str = "") -> "InferenceLexicon":
        kinds = []
        for r in data.get("kinds") or ():
            if r.get("kind") not in KINDS or not r.get("verbs"):
                raise InputError(f"inference lexicon: kind rule {r!r} needs a kind in {KINDS} and verbs")
            kinds.append((str(r["kind"]), frozenset(map(str, r["verbs"])), frozenset(map(str, r.get("objects", ())))))
        params = tuple(data.get("params") or ())
        for p in params:
            if not p.get("role") or not p.get("tokens"):
                raise InputError(f"inference lexicon: parameter rule {p!r} needs a role and tokens")
        if not kinds:
            raise InputError("inference lexicon: 'kinds' must list at least one rule")
        return cls(tuple(kinds), params, dict(data.get("ids") or {}), tuple(data.get("whole") or ()),
                   tuple(data.get("stores") or ()), frozenset(data.get("public") or ()),
                   frozenset(data.get("private") or ()),
                   {str(k): tuple(map(str, v)) for k, v in (data.get("action_needs") or {}).items()},
                   sha256, dict(data))

    @classmethod
    def load(cls, path: str | Path) -> "InferenceLexicon":
        from ..core.strict_json import loads_strict  # a duplicate key or NaN is refused (configuration JSON)

        raw = Path(path).read_bytes()
        return cls.from_config(loads_strict(raw, max_depth=200), hashlib.sha256(raw).hexdigest())

    def without(self, rules: Iterable[str]) -> "InferenceLexicon":
        """A copy with the named rules (as :meth:`used_rules` names them) removed: ``kind:<kind>:<verb>`` drops
        the verb from that kind's rules, ``param:<role>:<token>`` the token from that role's rules,
        ``store:<i>``/``whole:<i>`` that entry (it then matches nothing). Names of fallbacks (``unknown``,
        ``fail:``, ``kind:send:read-with-destination``) are not rules and are ignored."""
        drop = set(rules)
        kinds = tuple((k, frozenset(v for v in verbs if f"kind:{k}:{v}" not in drop), objs)
                      for k, verbs, objs in self.kinds)
        params = tuple(dict(p, tokens=[t for t in p["tokens"] if f"param:{p['role']}:{t}" not in drop])
                       for p in self.params)
        whole = tuple(dict(r, objects=[]) if f"whole:{i}" in drop else r for i, r in enumerate(self.whole))
        stores = tuple(dict(r, objects=[]) if f"store:{i}" in drop else r for i, r in enumerate(self.stores))
        return replace(self, kinds=kinds, params=params, whole=whole, stores=stores)

    def used_rules(self, schemas: Iterable[ToolSchema], grants: GrantLexicon | None = None) -> set[str]:
        """Names of the rules (``kind:<verb>``, ``param:<role>:<token>``, ``store:<i>``, ``whole:<i>``) that
        ``schemas`` exercise: the fold report of the leave-one-suite-out bench lists the rules only the
        left-out suite exercised."""
        used: set[str] = set()
        for s in namespaced(schemas, self):   # the verb after a namespace, as with_inferred reads it
            infer(s, self, grants, trace=used)
        return used


def _words(schema: ToolSchema) -> set[str]:
    first = re.split(r"(?<=[.!?])\s", schema.description.strip(), maxsplit=1)[0] if schema.description else ""
    out = set(schema.words()) | set(re.findall(r"[a-z]+", first.casefold()))
    return out | {w[:-1] for w in out if w.endswith("s") and len(w) > 3}


def _param_role(p: ParamSchema, lex: InferenceLexicon, name_words: list[str],
                trace: set[str]) -> tuple[str, bool]:
    """The role of parameter ``p`` and whether it is a destination (see the module docstring)."""
    toks = tokens(p.name)
    if "string" in p.types and (fr := format_role(p.fmt)) is not None:
        trace.add(f"external:param:{fr}:format")   # JSON Schema's own date/time formats: never dropped by a fold
        return fr, False
    for rule in lex.params:
        hit = next((t for t in toks if t in rule["tokens"]), None)
        if hit is None or (rule.get("types") and not set(p.types) & set(rule["types"])):
            continue
        if rule.get("with") and not set(toks) & set(rule["with"]):
            continue
        role = str(rule["role"])
        if set(p.types) == {"boolean"} and (role == "recipient" or rule.get("destination")):
            break   # true or false is sent to no one (convert_to_markdown): a flag, whatever its name's words
        trace.add(f"param:{role}:{hit}")
        if role == "recipient":
            desc = p.description.casefold()
            role = next((r for w, r in rule.get("described", {}).items() if w in desc or w in toks),
                        str(rule.get("default", "unknown")))
            return role, bool(rule.get("destination"))
        if role == "id":
            obj = next((lex.ids[t] for t in toks if t in lex.ids), None) or next(
                (lex.ids[t] for t in reversed(name_words) if t in lex.ids), None)
            if obj is not None and (own := id_noun(toks, name_words, lex.ids)) is not None:
                return own, False   # calendarId of update_event: a calendar's id, not the tool's object's
            return obj or "unknown", False   # an id of a kind no word names stays unknown (the request's only)
        return role, bool(rule.get("destination"))
    if set(p.types) == {"boolean"}:
        return "flag", False
    ext = external_param_role(p.name)
    if ext is not None and (ext != "amount" or set(p.types) & {"number", "integer"}):
        trace.add(f"external:param:{ext}:{p.name}")   # a published property, not a lexicon rule: never dropped
        return ext, ext == "email" and p.name.casefold() in ("attendee", "attendees", "participant", "participants")
    if "string" in p.types and p.max_length >= LONG_TEXT and PROSE & {
            *tokens(p.name), *re.findall(r"[a-z]+", re.split(r"(?<=[.!?])\s", p.description.casefold(), 1)[0])}:
        trace.add(f"param:text:maxLength:{p.name}")   # a long string its name or description calls prose
        return "text", False
    trace.add(f"param:unknown:{p.name}")
    return "unknown", False


def _kind(verb: str, words: set[str], lex: InferenceLexicon, trace: set[str]) -> str:
    for kind, verbs, objects in lex.kinds:
        if verb in verbs and (not objects or words & objects):
            trace.add(f"kind:{kind}:{verb}")
            return kind
    ext = external_kinds().get(verb)
    if ext is not None:   # a published vocabulary's kind: not a rule of the lexicon, never dropped by a fold
        trace.add(f"external:{ext}:{verb}")
        return ext
    trace.add(f"kind:unknown:{verb}")
    return "write"


#: how deep :func:`infer` reads nested object properties (``filterGroups.filters.value`` is depth 2)
MAX_DEPTH = 6


def _nested_roles(path: str, items: tuple[ParamSchema, ...], lex: InferenceLexicon, name_words: list[str],
                  trace: set[str], args: dict[str, str], choices: dict[str, tuple[str, ...]], depth: int) -> None:
    """The role of each property declared inside an array of objects or an object, at any depth up to
    :data:`MAX_DEPTH` (``filterGroups.filters.propertyName``): a declared property name is a key, never a value;
    a nested ``enum`` is a closed set as a top-level one; deeper than the bound, the object is one ``unknown``
    value (its keys are values: fail closed)."""
    if depth > MAX_DEPTH:
        return
    for sub in items:
        sp = f"{path}.{sub.name}"
        role = _param_role(sub, lex, name_words, trace)[0]
        if sub.enum:
            role, choices[sp] = "choice", sub.enum
        elif set(sub.types) == {"boolean"}:
            choices[sp] = BOOLEAN
        args[sp] = role
        _nested_roles(sp, sub.items, lex, name_words, trace, args, choices, depth + 1)


def infer(schema: ToolSchema, lex: InferenceLexicon, grants: GrantLexicon | None = None, *,
          trace: set[str] | None = None) -> ToolDecl:
    """The declaration of ``schema`` by the rules of ``lex`` (see the module docstring); ``grants`` gives the
    actions. ``trace`` collects the names of the rules used."""
    trace = trace if trace is not None else set()
    name_words = schema.words()
    words = _words(schema)
    verb = name_words[0] if name_words else ""
    kind = _kind(verb, words, lex, trace)
    args: dict[str, str] = {}
    destination = False
    choices: dict[str, tuple[str, ...]] = {}
    minor: set[str] = set()
    for p in schema.params:
        role, dest = _param_role(p, lex, name_words, trace)
        if dest and p.enum and vocabulary_enum(p.enum):   # type names (toObjectType): nothing is sent to them
            dest = False
            trace.add(f"param:choice:not-a-destination:{p.name}")
        if role == "amount" and minor_unit_arg(p.description):
            minor.add(p.name)
        if p.enum and not dest:   # a closed set the schema fixes: no third party can put a value in it
            role, choices[p.name] = "choice", p.enum
        elif set(p.types) == {"boolean"}:
            choices[p.name] = BOOLEAN
        args[p.name] = role
        # a parameter the schema describes as a filter of a listing (list_customers(email=...)) chooses records
        # of the store the tool reads; it sends nothing to that address
        destination = destination or (dest and not re.search(r"\bfilter\b", p.description.casefold()))
        _nested_roles(p.name, p.items, lex, name_words, trace, args, choices, 1)
    if kind == "account":
        args = {a: (r if r in ("secret", "person", "email", "account", "flag", "url") else "profile")
                for a, r in args.items()}
    if kind == "read" and read_has_effect(args):   # get(method="POST"), query(sql=...), load_funds(amount)
        kind = "write"
        trace.add("kind:write:read-choosing-its-effect")
    elif kind == "read" and destination:
        kind = "send"
        trace.add("kind:send:read-with-destination")
    elif kind == "read" and "url" in args.values():
        kind = "fetch"
    if kind != "read" and "query" in args.values():
        # a search or paging name (head, sort, page) is unchecked only where nothing changes: in a tool with an
        # effect it is grounded like any unknown argument (create_pull_request(head=<an outsider's branch>))
        args = {a: "unknown" if r == "query" else r for a, r in args.items()}
    actions: list[str] = []
    if grants is not None and kind != "read":
        for act, (verbs, objects) in grants.actions.items():
            need = lex.action_needs.get(act)
            if verb in verbs and (not objects or words & set(objects)) and (
                    not need or set(need) & set(args.values())):
                actions.append(act)
    targets = {"account", "email", "person", "channel", "url", "venue", "file", "event", "message", "scheduled",
               "unknown"}
    if kind in ("send", "delete") and not set(args.values()) & targets:
        actions = []   # consequential, no recognised target: nothing can grant it
        trace.add("fail:no-target")
    whole = ""
    for i, rule in enumerate(lex.whole):
        if set(rule["objects"]) & set(name_words) and kind == "read" and (
                (rule.get("no_args") and not schema.params)
                or set(rule.get("args", ())) & set(args) or not (rule.get("no_args") or rule.get("args"))):
            whole = str(rule["role"])
            trace.add(f"whole:{i}")
            break
    results: dict[str, str] = {}
    select: tuple[str, ...] = ()
    store = False
    for i, rule in enumerate(lex.stores):
        if set(rule["objects"]) & set(name_words):
            results, select, store = dict(rule["fields"]), tuple(rule.get("select", ())), True
            trace.add(f"store:{i}")
            break
    own = set(name_words)
    public = store or bool(whole) or bool(own & lex.public) or (bool(words & lex.public) and not own & lex.private)
    return ToolDecl(kind, tuple(actions), args, results, whole, {}, select, declared=public, inferred=True,
                    choices=choices, minor=frozenset(minor),
                    constants={p.name: frozenset(p.constants) for p in schema.params if p.constants})


def listing_roles(schemas: Iterable[ToolSchema],
                  decls: Mapping[str, ToolDecl]) -> tuple[dict[str, ToolDecl], set[str], set[str]]:
    """Roles from the tool set's own structure, not from words of a lexicon: a **listing** is a read whose name
    holds a plural noun X (``get_channels``, ``get_users_in_channel``, ``list_files``); its bare-value result
    names the user's own X (``whole`` = X: the dataflow ledger applies it to a bare value or list of values only,
    never to a record's fields, which stay third-party). A parameter of an inferred tool that no rule knew and
    whose name holds X (``channel``, ``user``) gets the role X, a target: a value of it is the request's or one
    a listing of X returned. A value gets into a listing only through a tool of the same set, whose own target
    argument of role X is checked the same way (a channel or user named only by third-party text is refused
    there), so an injection cannot plant a value it then uses. Only ``decls`` (inferred) are changed; returns
    them, the nouns made roles, and the id roles made for record listings (fail closed as the tool set's
    ``ids`` and ``named_ids``: the id must belong to a record the request names and appear in no third-party
    text)."""
    schemas = list(schemas)   # read three times
    out = dict(decls)
    nouns: dict[str, str] = {}
    for s in schemas:
        d = out.get(s.name)
        if d is None or d.kind != "read" or d.whole:
            continue
        noun = next((n for n in (_singular(w) for w in s.words()[1:]) if n), None)
        if noun is not None:
            nouns[s.name] = noun
    made: set[str] = set()
    for s in schemas:
        d = out.get(s.name)
        if d is None:
            continue
        args = dict(d.args)
        for p in s.params:
            toks = tokens(p.name)
            hit = next((n for n in nouns.values() if n in toks or n + "s" in toks), None)
            if hit is not None and args.get(p.name) == "unknown" and not {"id", "ids"} & set(toks):   # ids: below
                args[p.name] = hit
                made.add(hit)
        out[s.name] = replace(d, args=args)
    for name, noun in nouns.items():
        if noun in made:
            out[name] = replace(out[name], whole=noun)
    ids: set[str] = set()
    _record_listings(schemas, out, nouns, ids)
    return out, made | ids, ids


#: the last word of a parameter that names a record's numeric key (``issue_number``, ``pull_no``)
_NUMERIC_KEYS = frozenset({"number", "num", "no"})


def _phrase(schema: ToolSchema) -> tuple[str, ...]:
    """The object words of a tool's name, function words out and a plural made singular."""
    fn = {"to", "from", "by", "in", "for", "of", "the", "a", "an", "on", "at", "with", "all", "and", "or", "my"}
    return tuple(_singular(w) or w for w in schema.words()[1:] if w not in fn)


def _record_listings(schemas: list[ToolSchema], out: dict[str, ToolDecl], nouns: Mapping[str, str],
                     ids: set[str]) -> None:
    """Records a listing returns (see :func:`listing_roles`): the ``id`` of a record listed by ``get_X`` is the
    system identifier of an X, trusted for the id argument of a consequential tool of the same object words
    (``get_scheduled_transactions`` -> ``update_scheduled_transaction(id)``); the fields named like an amount
    argument of the tool set's consequential tools are selectable (an amount of a record the request names,
    as the ledger's ``select``). Every other field stays third-party; nothing is changed where a rule of the
    lexicon already declared the listing's results."""
    consequential = [s for s in schemas if s.name in out and out[s.name].kind != "read"]
    amounts = tuple(sorted({a for s in consequential for a, r in out[s.name].args.items() if r == "amount"}))
    by_name = {s.name: s for s in schemas}
    for name, noun in nouns.items():
        d = out[name]
        if d.select or set(d.results) & {"id", "id_"}:
            continue
        results: dict[str, str] = dict(d.results)   # a store rule's fields stay; the record's own id joins them
        for s in consequential:
            if _phrase(s) != _phrase(by_name[name]):
                continue
            t = out[s.name]
            for p in s.params:
                toks = tokens(p.name)
                key = "id" if "id" in toks else toks[-1] if toks[-1] in _NUMERIC_KEYS and noun in toks and set(
                    p.types) & {"number", "integer"} else None
                if key is not None:   # file_id; issue_number (a number of the listed noun: the record's own key)
                    role = t.args.get(p.name, "unknown")
                    if role == "unknown" or key != "id" and role == noun:
                        role = noun
                        out[s.name] = t = replace(t, args={**t.args, p.name: role})
                        ids.add(role)
                    results.update({"id": role, "id_": role} if key == "id" else {key: role})
        out[name] = replace(d, results=results, select=d.select if d.results else amounts)


def with_inferred(toolset: ToolSet, schemas: Iterable[ToolSchema], lex: InferenceLexicon) -> ToolSet:
    """``toolset`` plus an inferred declaration for every schema it does not declare (its own win), with the
    roles of :func:`listing_roles` (each made role is a target of the tool set); a namespace before each
    name's verb (:func:`namespaced`) is skipped."""
    schemas = namespaced(schemas, lex)
    tools = {s.name: infer(s, lex, toolset.lexicon) for s in schemas if s.name not in toolset.tools}
    tools, made, ids = listing_roles(schemas, tools)
    tools, nouns = noun_ids(schemas, tools, lex.ids)   # calendarId: a calendar's id (.schemafacts)
    made, ids = made | nouns, ids | nouns
    tools.update(toolset.tools)
    roles = dict(toolset.roles)
    roles["targets"] = frozenset(roles.get("targets", frozenset())) | made
    for cls in ("ids", "named_ids"):
        roles[cls] = frozenset(roles.get(cls, frozenset())) | ids
    # the property names the schemas declare inside objects (properties.firstname): the store's field names, which
    # a search names rather than matches (agentguard.policies.platformids.search_filter)
    roles["namespaces"] = frozenset(tokens(s.name)[0] for s in schemas if s.prefix)   # a server's mount prefix
    roles["described_keys"] = frozenset(k for s in schemas for p in s.params if "object" in p.types   # ``{'x': ...}``
                                        for k in re.findall(r"['\"]([A-Za-z_]\w{0,63})['\"]\s*:", p.description))
    roles["vocabulary"] = frozenset(roles.get("vocabulary", frozenset())) | {
        a.rsplit(".", 1)[1] for d in tools.values() for a in d.args if "." in a}
    return replace(toolset, tools=tools, roles=roles)
