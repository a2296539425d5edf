"""Grants from each tool's OWN schema, matched to the request's imperative verbs and objects (issue 27).

A tool set the grant lexicon was not written for (the GitHub MCP server) names its actions in its own words:
``update_issue(state: enum[open, closed], labels, assignees, title)``, ``add_issue_comment``,
``create_pull_request``. :class:`SchemaGrants` reads, per consequential tool, only what its schema says (the
verbs and nouns of its name, its parameters' names, which are required, their ``enum`` values) and matches them
to the request by a declared extractor (the closed-class words of ``library/schema_grants_en.json``, and a
declared suffix-stripping morphology, :func:`stem`):

- **imperative verbs**: a word at the start of a clause (sentence start, after ``and``/``then``/``please``... or
  after ``, ; : (``), hyphenated words split (``squash-merge`` -> ``squash``, ``merge``); quoted text is blanked
  first (a quoted title mints nothing);
- **objects**: a noun of the tool's name written in the sentence (``issue``, ``pull request``; a name whose only
  noun stands before its verb, ``notes_create``, has that one), or, for a generic
  tool whose required ``...Type``/``...Kind`` parameter's ``enum`` lists plain words, one of those types
  (``crm_delete_object(objectType: [contacts, deals])``: ``delete ... contact``; the call's ``objectType`` is then
  bound to the type the request states, :func:`closed_value`), or a file path
  (``README.md``) where the tool takes a file, or, when the sentence has a pronoun (``it``, ``them``), in the
  sentence before it (``Pull request #22 ... . Check ... and squash-merge it``);
- a **name grant** (every parameter in scope): an imperative verb that is the tool's own verb (``merge``,
  ``fork``, ``push``; ``create_or_update_file`` has two), a noun of its name used as a verb (``review``,
  ``comment``), a comment verb (``reply``) where the tool's head noun is a comment, or a creation verb
  (``open``, ``add``, ``post``, ``leave``) where the tool creates (its verb is a creation verb) and the
  sentence names the tool's **head noun** (the last noun of its name: ``open a pull request`` ->
  ``create_pull_request``; ``post it as a comment`` -> ``add_issue_comment``, not ``create_pull_request_review``);
- a **parameter grant** (scope: the schema's required parameters plus that one): an imperative verb whose stem
  is an optional parameter's name (``label it``, ``assign it``) or one of its enum values (``close`` ->
  ``state: closed``), or a change verb (``change the title``) with the parameter's name in the sentence, the
  tool's object named as above. A call setting an optional parameter no grant of the request names is outside
  the grant (``change the title of #17`` does not grant ``state: closed`` on #17).

- **idioms and parts** (declared in the lexicon, written after the Stripe bench: not blind there): an idiom
  counts as a verb and noun (``put the sampler on sale`` -> ``create`` + ``price``; ``send``/``bill`` ->
  ``create``, the tool's noun then being the idiom's object, not any word of the sentence: "send me the list of
  invoices" creates none); a creation verb with the *whole* a tool's part goes in grants the part's tool
  (``add a case to the invoice`` -> ``create_invoice_item``, ``item`` a ``part_nouns`` word); a ``supply_verbs``
  word with an optional parameter's name grants that parameter (``stage evidence on the dispute``), and a
  closed-set parameter whose value the same sentence states joins the parameter grant's scope ("but don't
  submit it": ``submit`` is in scope, bound to ``false``).

Each grant names the words it came from (shown in the verdict). A grant authorises only the action: every
target and value is still checked by the data-flow labels (:mod:`agentguard.policies.dataflow`).

**Closed-set parameters** (:func:`closed_value`): an ``enum`` or boolean value is never a target; where the
request states one (a value's stem written in it, outside quotes; a boolean by its parameter's name: ``a private
repository``), the call must use it, and a value the request negates (``not an approval``) is refused; where the
request states none, the value is the agent's choice (said so in the verdict); a call that leaves out a
parameter whose value the request states is refused (:func:`omitted_values`: the default would apply). A
boolean is stated by its name or its opposite (:func:`opposites`: "make it public" states ``private=false``,
``unlisted`` states ``listed=false``; "turn off notifications"), and a negation reaches no further than its
sentence.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Iterator, Mapping

from .capabilities import Grant, GrantLexicon, quoted, strip_quotes
from .grantwords import (_POST, _STOPS, _lexicon, _said, _wanted_flag, _words, closed_value,
                         imperatives, omitted_values, opposites, stated, stem)
from .provenance import _leaves, word_form
from .selection import clauses, dismissed
from .toolinfer import InferenceLexicon, ToolSchema, infer, namespaced, tokens
from .toolset import BOOLEAN, DOCUMENT_VERBS, DOCUMENTS, ToolDecl, ToolSet
from .vocabulary import singular, vocabulary_enum

__all__ = ["SchemaGrants", "SchemaTool", "closed_value", "expand_arguments", "imperatives", "in_scope",
           "omitted_values", "opposites", "record_nouns", "stated", "stem", "with_schema_grants"]

_PATH = re.compile(r"(?<![\w/.-])[\w][\w./-]*\.[a-z0-9]{1,8}(?![\w/-])", re.I)


def record_nouns(field_name: str, tool: str) -> tuple[str, ...]:
    """The words by which a request names a field of an undeclared tool's record (the ledger lets a private
    value out only in a grant whose sentence writes one, plural forms included): the field's name and the last
    word of the tool's name, singular (``list_commits.commit`` -> ``commit``; ``get_pull_request_status.state``
    -> ``state``, ``status``)."""
    last = (tokens(tool) or [""])[-1]
    last = last[:-1] if last.endswith("s") and not last.endswith(("ss", "us")) and len(last) > 3 else last
    return tuple(dict.fromkeys(w for w in (" ".join(tokens(field_name)), last) if w))


def expand_arguments(decl: ToolDecl, arguments: Mapping[str, Any],
                     known: Callable[[Any], bool] | None = None) -> Iterator[tuple[str, Any]]:
    """``(argument, value)`` pairs where an array of objects whose item properties the schema declares
    (``files=[{"path": ..., "content": ...}]``), or an object whose properties it declares (``evidence={...}``),
    is read per property (``files.path``, ``files.content``, each with its own role), at any depth the
    declaration reaches (``filterGroups.filters.value``): a declared property name is not a value; any other
    key stays a value (fail closed), except, with ``known`` (:class:`~.vocabulary.FieldVocabulary`), a key that
    is a field name of the store, whose scalar value is then read as ``argument.key`` (``properties.dealstage``).
    A value exactly equal to a constant its parameter's schema offers (``decl.constants``: ``calendarId:
    'primary'``), or such an item of a list, is not yielded: it is the schema's, not the run's."""
    for arg, v in arguments.items():
        offered = decl.constants.get(arg, frozenset())   # a value the schema offers exactly (.schemafacts): unchecked
        if isinstance(v, str) and v in offered:
            continue
        if isinstance(v, list) and offered:
            v = [x for x in v if not (isinstance(x, str) and x in offered)]
            if not v:
                continue
        yield from _expand(decl, arg, v, known)


def _expand(decl: ToolDecl, arg: str, v: Any, known: Callable[[Any], bool] | None) -> Iterator[tuple[str, Any]]:
    declared = any(k.startswith(arg + ".") for k in decl.args)
    if not isinstance(v, (Mapping, list)) or not declared and not (known is not None and isinstance(v, Mapping)):
        yield arg, v
        return
    for item in (v if isinstance(v, list) else [v]):
        if isinstance(item, Mapping):
            for k, x in item.items():
                sub = f"{arg}.{k}"
                if sub in decl.args:
                    yield from _expand(decl, sub, x, known)
                elif known is not None and known(k) and not isinstance(x, (Mapping, list, tuple, set)):
                    yield sub, x
                elif known is not None and known(k) and isinstance(x, (Mapping, list)):   # a field's own structure
                    yield from _expand(decl, sub, x, known)   # ({"priority": {"name": "High"}}, {"labels": [...]})
                else:
                    yield arg, {k: x}
        else:
            yield arg, item


def in_scope(grants: list[Grant], arguments: Mapping[str, Any], content: Iterable[str] = ()) -> list[Grant]:
    """The grants whose parameter scope covers the call: all of them when one grants the whole tool, else none
    unless every parameter the call sets is in the union of their scopes, and a ``content`` parameter a grant
    names takes the words its clause quotes where the clause quotes any (``change the title of #17 to 'X'``
    grants the title 'X', not another one)."""
    if not grants or any(g.params is None for g in grants):
        return grants
    scope = set().union(*(g.params or () for g in grants))
    used = {a for a, v in arguments.items() if v not in (None, "", [], {})}
    for g in grants:
        q = [f" {word_form(x)} " for x in quoted(g.clause)]
        if g.param in content and g.param in used and q and not any(
                f" {word_form(str(s))} " in x for s in _leaves(arguments[g.param]) for x in q):
            return []
    return grants if used <= scope else []


@dataclass(frozen=True)
class SchemaTool:
    """What a tool's schema says for grants: its verbs, nouns (``head`` last), required and optional parameter
    words (optional: parameter -> the stems that name it, its enum values' included), and whether it takes a
    file (a path in the sentence names its object)."""

    name: str
    verbs: tuple[str, ...]
    nouns: tuple[str, ...]
    required: frozenset[str]
    optional: Mapping[str, tuple[tuple[str, ...], ...]]
    takes_file: bool = False
    closed: Mapping[str, tuple[str, ...]] = field(default_factory=dict)   # optional enum/boolean parameters
    types: tuple[str, ...] = ()   # a generic tool's object types (its required ``...Type`` enum), singular
    values: tuple[str, ...] = ()   # every enum value its schema declares, nested properties' included

    @classmethod
    def of(cls, schema: ToolSchema, decl: ToolDecl) -> "SchemaTool":
        lex = _lexicon()
        fn = set(lex["function_words"])
        words = schema.words()
        verbs = [words[0]] if words else []
        verbs += [w for a, w in zip(words, words[1:]) if a in ("or", "and")]
        nouns = tuple(dict.fromkeys(w for w in words if w not in verbs and w not in fn and len(w) > 1))
        if not nouns and schema.prefix:   # ``notes_create``: the namespace before the verb is its only object
            nouns = tuple(w for w in tokens(schema.name)[:schema.prefix] if w not in fn and len(w) > 1)
        optional = {p.name: (tuple(tokens(p.name)),) + tuple(tuple(tokens(e)) for e in p.enum)
                    for p in schema.params if not p.required}
        types = tuple(singular(e) for p in schema.params if p.required and p.enum and vocabulary_enum(p.enum)
                      and (tokens(p.name) or [""])[-1] in ("type", "kind") for e in p.enum)
        return cls(schema.name, tuple(verbs), nouns, frozenset(p.name for p in schema.params if p.required),
                   optional, any(r in ("file", "filename") for r in decl.args.values()),
                   {a: c for a, c in decl.choices.items() if a in optional}, types,
                   tuple(dict.fromkeys(v for c in decl.choices.values() if c != BOOLEAN for v in c)))


_COUNTS = frozenset("one two three four five six seven eight nine ten another more extra second third".split())


def _ends(word: str) -> bool:   # whether ``word``, right after a word of an idiom's object, ends its noun phrase
    return not word[0].isalpha() or word in _STOPS or word in _POST or word in _lexicon()["clause_starts"]


def _adds_part(sentence: str, verb: str) -> bool:
    """Whether what ``verb`` adds (up to to/into/onto/on) is a part: a part noun, a count, an id or a number
    ("add a memo to the invoice" sets a field)."""
    m = re.search(rf"(?i)\b{re.escape(verb)}\b(.*?)\b(?:to|into|onto|on)\b", strip_quotes(sentence))
    words = {stem(w) for w in _words(m.group(1)) if w[0].isalpha()} if m else set()
    parts = {stem(n) for n in [*_lexicon()["part_nouns"], *_COUNTS]}
    return m is not None and bool(words & parts or re.search(r"\d|[a-z]_[a-z0-9]", m.group(1), re.I))


def _a_name(sentence: str, first: str) -> bool:
    """Whether the sentence starts with ``first`` as a name, the subject of a verb ("Bill Okafor (cus_1) asked")."""
    m = re.match(r"\s*([A-Z][a-z]+)((?:\s+[A-Z][\w'’.-]*)+)\s*(?:\([^)]*\)\s*)?([a-z]+)?", sentence)
    return m is not None and m.group(1).casefold() == first and m.group(3) not in {None, *_STOPS, *_lexicon()[
        "clause_starts"], *_lexicon()["function_words"], *_lexicon()["pronouns"], *"his her him me us our your".split()}


#: finite verbs that, right after a clause's first words, make its first word a subject, not an imperative
#: ("Invoice in_1 *looks* wrong", "Merge *is* blocked")
_FINITE = frozenset("is are was were has have had looks look seems seem appears shows says reads needs lists contains "
                    "went came got isn aren wasn doesn didn".split())


#: words that show a verb's object before a colon ("refund these payments: ..."), unlike a label ("Refund policy:")
_DETERMINERS = frozenset("the a an these those this that it them his her their my our your all every each both".split())


def _heading_or_subject(sentence: str, verb: str) -> bool:
    """Whether ``verb`` starts no request: its clause is a heading or a label (it ends with ``:``, and the words after
    it up to a preposition are neither a determiner nor an id: "Refund policy: ...", "Comment count on #12: ...",
    not "Refund these payments: ..." nor "Review pull request #21 in acme/webapp: ..."), a question not asked with a polite modal ("Review status of PR #21?"),
    or its first words are the subject of a finite verb ("Invoice in_1 looks wrong")."""
    found = False
    for m in re.finditer(rf"(?i)(?:^|[,;:.!?(]\s*|\b(?:and|then|please|also|but)\s+)({re.escape(verb)})\b"
                         rf"([^.;:!?\n]*?)(\s[-\u2013\u2014]\s|[.;:!?\n]|$)", strip_quotes(sentence)):
        found = True
        words = re.findall(r"[a-z0-9_']+", m.group(2).casefold())
        polite = re.search(r"(?i)\b(?:can|could|would|will)\s+you\s*$", sentence[:m.start(1)]) is not None
        head = list(itertools.takewhile(lambda w: w not in _STOPS | _PREPS, words))   # up to a preposition
        label = m.group(3) == ":" and (not words or bool(head) and not (   # "Note:"; not "Reply on #12:"
            set(head) & (_DETERMINERS | _POST) or any(re.search(r"[\d_]", w) for w in head)))   # "submit it now:"
        if not (label or m.group(3) == "?" and not polite or set(words[:4]) & _FINITE):
            return False
    return found   # (a verb after "can you" is no clause start: asked politely)


def _asks(sentence: str, verb: str) -> bool:
    """Whether an imperative ``verb`` asks for its action: some clause that holds it neither keeps, dismisses nor
    negates what it names ("we refuse, leave it"; "update is not
    needed"; "leave the newest payment alone": :func:`~agentguard.policies.selection.dismissed`)."""
    return any(not dismissed(c, verb) for c in clauses(sentence) if verb in c) and not _heading_or_subject(
        sentence, verb)


#: words after an object noun that start its name or a clause about it ("a branch called x", "a comment saying")
_NAMING = frozenset({"called", "named", "titled", "saying", "that", "which", "who", "whose", "because", "if", "when"})


_PREPS = frozenset({"into", "onto", "over", "under", "via", "through", "as", "per", "across", "after", "before",
                    "than", "like", "between", "against", "within", "without"})
_PARTICLES = frozenset({"up", "out", "off", "down", "over", "back"})   # a phrasal verb's particle: "write up X"


def _post(word: str) -> bool:   # a word that starts a post-modifier of the object noun ("every one labelled x"),
    return word in _NAMING or len(word) > 4 and word.endswith("ed") or bool(re.search(r"[\d/._]", word))   # a name


def _own(tool: SchemaTool) -> set[str]:
    """The stems an object of ``tool`` may head: a noun of its name or type, a pronoun."""
    return {stem(n) for n in (*tool.nouns, *tool.types)} | {
        stem(p) for p in (*_lexicon()["pronouns"], *_lexicon()["person_pronouns"])}


def _takes(tool: SchemaTool, sentence: str, verb: str) -> bool:
    """Whether an imperative ``verb`` may act on the ``tool``'s object: the head of the object after it (at most six
    words, up to a preposition or clause mark: "create a *report* of refunds", "update *me* on the issues") is a
    noun of the tool's name or type or a pronoun, or the object has no head word (an id, a number: the object
    is then what :func:`_objects` reads). A noun that only modifies the head or follows a preposition is not it."""
    own = _own(tool)
    if tool.takes_file and _PATH.search(strip_quotes(sentence)):
        return True   # a file tool's object is the path the sentence writes
    ws = re.findall(r"[a-z0-9][\w'./-]*|[,;:(]", strip_quotes(sentence).casefold())
    at = [i for i, w in enumerate(ws) if verb in (w, *w.split("-"))]
    for i in at:
        after = ws[i + 1:]
        after = after[1:] if after[:1] and after[0] in _PARTICLES else after
        if after[:1] and (after[0] in ("his", "her", "their", "its") or after[0].endswith(("'s", "\u2019s"))):
            return True   # a property of a possessor ("update her title"): the possessor may be the object
        heads = _heads(after)
        if not heads or heads & own:
            return True
    return not at


def _heads(after: list[str]) -> set[str]:
    """The stems of the heads of the object that starts ``after`` (at most six words a conjunct, up to a preposition
    or clause mark); each conjunct of a coordinated object ("the issue and the ticket") has its own head."""
    heads: set[str] = set()
    while True:
        obj = list(itertools.takewhile(lambda x: x not in _STOPS | _PREPS and x[0].isalpha() and not _post(x),
                                       after[:6]))
        heads |= {stem(x) for k, x in enumerate(obj) if k + 1 >= len(after) or _ends(after[k + 1])
                  or _post(after[k + 1]) or after[k + 1] in _PREPS}
        if not (obj and after[len(obj):len(obj) + 1] in (["and"], ["or"])):
            return heads
        after = after[len(obj) + 1:]


def _created(sentence: str, verb: str) -> frozenset[str]:
    """The stems of what a creation ``verb`` creates: the words after it in its clause ("leave a review comment";
    not "asked for a refund; leave it")."""
    return frozenset(stem(w) for c in clauses(sentence) for i, x in enumerate(c) if x == verb for w in c[i + 1:i + 9])


def idioms(sentence: str) -> list[tuple[str, str, str, frozenset[str]]]:
    """``(words as written, verb, noun, object)`` for each declared idiom of the lexicon the sentence uses: its
    first word an imperative (:func:`imperatives`), its other words, where the idiom has ``...``, later in the
    same sentence in that order (``put the sampler on sale`` -> ``create``, ``price``); quoted text is blanked
    first; never a name ("Bill Okafor asked"). ``object``: the stems of the heads among the (at most four) words
    after it, up to a preposition or clause mark: where the idiom names no noun, the tool's noun must head it ("send
    an invoice" creates one; "send me the list of invoices" or "send me the refund report" does not)."""
    imp = set(imperatives(sentence))
    ws = _words(sentence)
    out = []
    for phrase, meaning in _lexicon()["idioms"].items():
        head, _, rest = phrase.partition(" ... ")
        first, *tail = head.split()
        if first not in imp or _a_name(sentence, first):
            continue
        verb, _, noun = meaning.partition(" ")
        for i, w in enumerate(ws):
            if w != first or ws[i + 1:i + 1 + len(tail)] != tail:
                continue
            after = ws[i + 1 + len(tail):]
            more = rest.split()
            at = next((j for j in range(len(after)) if after[j:j + len(more)] == more), None) if more else 0
            if at is not None:   # an idiom ending with a preposition (put X on Y): its object is Y
                after = after[at + len(more):] if more and more[-1] in _STOPS else after
                obj = list(itertools.takewhile(lambda x: x not in _STOPS and x[0].isalpha(), after[:4]))
                heads = [x for k, x in enumerate(obj) if k + 1 >= len(after) or _ends(after[k + 1])]
                out.append((phrase.replace("...", "X"), verb, noun, frozenset(stem(x) for x in heads)))
                break
    return out


def _objects(tool: SchemaTool, sentence: str, prev: str, extra: frozenset[str] = frozenset()) -> str | None:
    """The object of ``tool`` the sentence names (module docstring), as written, or ``None``; ``extra``: the
    stems of nouns the sentence's idioms name (:func:`idioms`)."""
    pron = set(_lexicon()["pronouns"])
    for text in (sentence, prev):
        ws = {stem(w) for w in _words(text) if w[0].isalpha()} | (extra if text is sentence else frozenset())
        hit = next((n for n in (*tool.nouns, *tool.types) if stem(n) in ws), None)
        if hit is None and tool.takes_file:
            hit = next(iter(_PATH.findall(strip_quotes(text))), None)
        if hit is not None:
            return hit
        if not pron & set(_words(sentence)):
            break
    person = next((w for w in _words(sentence) if w in _lexicon()["person_pronouns"]), None)
    if person is not None and tool.nouns and tool.nouns[-1] in _lexicon()["person_nouns"]:
        return f"{person} (a person: {tool.nouns[-1]})"   # "mark him as ...": a tool of person records
    return None


@dataclass(frozen=True)
class SchemaGrants:
    """Grants ``schema:<tool>`` from each tool's own schema (see the module docstring)."""

    tools: Mapping[str, SchemaTool]
    context = True   # capabilities.mint passes the previous sentence

    @staticmethod
    def action(tool: str) -> str:
        return f"schema:{tool}"

    def grants(self, sentence: str, bare: str | None = None, prev: str = "") -> list[Grant]:
        lex = _lexicon()
        # (the words as written, the verb they count as): the imperatives, then the declared idioms' verbs
        plain = frozenset(stem(w) for w in _words(sentence) if w[0].isalpha())
        idi = [i for i in idioms(sentence) if _asks(sentence, i[0].split()[0])]
        imp = [(w, w) for w in imperatives(sentence) if _asks(sentence, w)] + [
            (f"{ph} (an idiom for {v} {n})".replace(" )", ")"), v) for ph, v, n, _ in idi]
        stems = [stem(v) for _, v in imp]
        extra = frozenset(stem(n) for _, _, n, _ in idi if n)
        # the nouns a word of ``imp`` may take: the sentence's (an imperative), the idiom's noun, else its object
        reach = [plain for _ in imp[:len(imp) - len(idi)]] + [frozenset({stem(n)}) if n else o for _, _, n, o in idi]
        parts = {stem(n) for n in lex["part_nouns"]}
        out = []
        for t in self.tools.values():
            obj = _objects(t, sentence, prev, extra)
            if obj is None:
                continue
            head = stem(t.nouns[-1]) if t.nouns else ""
            whole = stem(t.nouns[-2]) if len(t.nouns) > 1 and head in parts else ""   # invoice_item: invoice
            creates = bool({stem(v) for v in t.verbs} & {stem(v) for v in lex["creation_verbs"]})
            acts = [(said, w) for (said, w), nouns in zip(imp, reach)   # the verbs that take the tool's object
                    if (_takes(t, sentence, w) if said == w else not nouns or bool(nouns & _own(t)))]
            why = next((f"{said} ... {obj} ({how})" for (said, w), s, nouns in zip(imp, stems, reach)
                        if said == w or {head, whole} & nouns for how in (   # an idiom: its noun is the tool's
                "a noun of the tool's name as the verb" if s in {stem(n) for n in t.nouns} else
                "the tool's own verb" if s in {stem(v) for v in t.verbs} and (said, w) in acts else
                "a comment verb" if w in lex["comment_verbs"] and head in {stem(n) for n in lex["comment_nouns"]}
                and (said, w) in acts
                else "a creation verb and the tool's head noun" if creates and w in lex["creation_verbs"]
                and (said, w) in acts
                and not (w in DOCUMENT_VERBS and t.nouns[-1] in DOCUMENTS)   # "open the file" reads it
                and (head in _created(sentence, w) or t.nouns[-1] == "file" and t.takes_file
                     and _PATH.search(strip_quotes(sentence)))
                else "a creation verb and the whole the tool's part goes in" if creates and w in lex["creation_verbs"]
                and whole in nouns and _adds_part(sentence, w) else "",) if how), None)
            if why is None:
                why = self._change(t, acts, obj, sentence)
            if why is not None:
                out.append(Grant(self.action(t.name), why, sentence.strip()))
                continue
            for p, phrases in t.optional.items():
                hit = self._param(p, phrases, imp, stems, sentence, acts)
                if hit is not None:
                    # a closed-set parameter whose value the sentence states is in scope too: its value is
                    # bound to the request (closed_value) ("stage evidence ..., but don't submit it")
                    also = {c for c, ch in t.closed.items() if c != p and (
                        _wanted_flag(sentence, c, t.name) if ch == BOOLEAN else _said(sentence, ch, t.name)[1])}
                    out.append(Grant(self.action(t.name), f"{hit} ... {obj} (parameter {p!r})", sentence.strip(),
                                     t.required | {p} | also, p))
        return out

    @staticmethod
    def _change(t: SchemaTool, imp: list[tuple[str, str]], obj: str, sentence: str) -> str | None:
        """A change verb (``mark``, ``set``) for a tool whose own verb is one and whose changes are one free-form
        mapping (no optional parameter a parameter grant could scope), the sentence stating one of its schema's
        enum values (``mark him as an open lead``: ``leadstatus: open``); every value is still checked."""
        change = {stem(v) for v in _lexicon()["change_verbs"]}
        if t.optional or not t.values or not {stem(v) for v in t.verbs} & change:
            return None
        said = next((s for s, w in imp if s == w and stem(w) in change), None)
        val = next((v for v in t.values if stated(sentence, tokens(v))[0]), None) if said else None
        return f"{said} ... {obj} ... {val} (a change verb and a value of the tool's schema)" if val else None

    @staticmethod
    def _param(p: str, phrases: tuple[tuple[str, ...], ...], imp: list[tuple[str, str]], stems: list[str],
               sentence: str, acts: list[tuple[str, str]] | None = None) -> str | None:
        """The imperative naming optional parameter ``p`` (its name, or an enum value where the imperative takes
        the tool's object, ``acts``: "close issue #17", not "close out the week"), or a change verb or a supply verb
        (``stage``, ``attach``, ``include``) with ``p``'s name in the sentence; ``None`` when none."""
        singles = {stem(ph[-1]) for ph in phrases if ph}
        name = stem(phrases[0][-1]) if phrases and phrases[0] else ""
        hit = next((said for (said, w), s in zip(imp, stems) if s in singles and (
            s == name or acts is None or (said, w) in acts)), None)
        if hit is not None:
            return hit
        verbs = set(_lexicon()["change_verbs"]) | set(_lexicon()["supply_verbs"])
        change = next((said for said, w in imp if w in verbs), None)
        if change is not None and stated(sentence, phrases[0])[0]:
            return f"{change} {'_'.join(phrases[0])}"
        return None


def with_schema_grants(toolset: ToolSet, schemas: Iterable[ToolSchema], inference: InferenceLexicon) -> ToolSet:
    """``toolset`` where every consequential tool also takes the schema grant ``schema:<name>``
    (:class:`SchemaGrants`), its lexicon reading the request's sentences for them. A ``send`` or ``delete``
    with no recognised target stays ungrantable (``fail:no-target``)."""
    lex = toolset.lexicon if toolset.lexicon is not None else GrantLexicon({})
    tools: dict[str, SchemaTool] = {}
    for s in namespaced(schemas, inference):
        d, trace = toolset.decl(s.name, [p.name for p in s.params]), set[str]()
        infer(s, inference, lex, trace=trace)
        if d.kind != "read" and "fail:no-target" not in trace:
            tools[s.name] = SchemaTool.of(s, d)
    if not tools:
        return toolset
    src = SchemaGrants(tools)
    decls = {n: replace(d, actions=(*d.actions, src.action(n))) if n in tools else d
             for n, d in toolset.tools.items()}
    return replace(toolset, tools=decls, lexicon=replace(lex, extra=(*lex.extra, src)))
