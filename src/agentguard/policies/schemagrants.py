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
- **objects**: a noun of the tool's name written in the sentence (``issue``, ``pull request``), or a file path
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
import json
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from .capabilities import Grant, GrantLexicon, omitted_amount, quoted, strip_quotes
from .provenance import _leaves, word_form
from .toolinfer import InferenceLexicon, ToolSchema, infer, namespaced, tokens
from .toolset import BOOLEAN, DOCUMENT_VERBS, DOCUMENTS, ToolDecl, ToolSet

__all__ = ["SchemaGrants", "SchemaTool", "closed_value", "expand_arguments", "imperatives", "in_scope",
           "omitted_values", "opposites", "record_nouns", "stated", "stem", "with_schema_grants"]

_PATH = re.compile(r"(?<![\w/.-])[\w][\w./-]*\.[a-z0-9]{1,8}(?![\w/-])", re.I)
_WORD = re.compile(r"[a-z][a-z'-]*|[,;:(]")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


@lru_cache(maxsize=1)
def _lexicon() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((Path(__file__).parent / "library" / "schema_grants_en.json").read_text(
        encoding="utf-8"))
    return data


def stem(word: str) -> str:
    """The declared morphology: case-folded, one suffix of ``suffixes`` stripped (the longest that leaves three
    letters), a doubled final consonant undone (``labelled`` -> ``label``, ``approval``/``approve`` ->
    ``approv``, ``closed``/``close`` -> ``clos``, ``assignees`` -> ``assign``)."""
    w = word.casefold()
    for suf in sorted(_lexicon()["suffixes"], key=len, reverse=True):
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            w = w[:-len(suf)]
            if suf in ("ed", "ing", "ings") and len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiou":
                w = w[:-1]
            break
    return w


def _words(text: str) -> list[str]:
    """Words of ``text`` (case-folded, quotes blanked, hyphenated words split) and clause marks."""
    out: list[str] = []
    for w in _WORD.findall(strip_quotes(text).casefold()):
        out.extend([p for p in w.split("-") if p] if w[0].isalpha() else [w])
    return out


def imperatives(sentence: str) -> list[str]:
    """The words at a clause's start (see the module docstring): the request's imperative verbs; a hyphenated
    word there counts by each part (``squash-merge``)."""
    starts = set(_lexicon()["clause_starts"])
    out: list[str] = []
    prev = ""
    for w in _WORD.findall(strip_quotes(sentence).casefold()):
        if w[0].isalpha() and (not prev or prev in starts or not prev[0].isalpha()):
            out.extend(p for p in w.split("-") if p)
        prev = w
    return out


def stated(text: str, phrase: Iterable[str]) -> tuple[bool, bool]:
    """``(positive, negative)``: whether the words of ``phrase`` (by :func:`stem`, consecutive) are written in
    ``text`` outside quotes, and whether some occurrence is negated (a ``negations`` word at most three words
    before it, in the same sentence: "the order never arrived. Submit evidence now" does not negate ``submit``)."""
    want = [stem(w) for w in phrase if w]
    neg = {n for n in _lexicon()["negations"]}
    pos = negd = False
    for sentence in _SENTENCE.split(text):
        p, n = _stated_in(sentence, want, neg)
        pos, negd = pos or p, negd or n
    return pos, negd


def _stated_in(text: str, want: list[str], neg: set[str]) -> tuple[bool, bool]:
    """:func:`stated` within one sentence (``want``: the phrase's stems)."""
    ws = [w for w in _words(text) if w[0].isalpha()]
    pos = negd = False
    for i in range(len(ws) - len(want) + 1):
        if want and [stem(w) for w in ws[i:i + len(want)]] == want:
            before = ws[max(0, i - 3):i]
            if any(b in neg or f"{a} {b}" in neg for a, b in zip([""] + before, before)):
                negd = True
            else:
                pos = True
    return pos, negd


def opposites(word: str) -> list[str]:
    """The words that state the other value of a boolean named ``word`` (the lexicon's ``opposites`` pairs, by
    :func:`stem`; ``word`` with or without one of its ``opposite_prefixes``: ``listed``/``unlisted``)."""
    lex, s = _lexicon(), stem(word)
    out = [b if stem(a) == s else a for a, b in lex["opposites"] if s in (stem(a), stem(b))]
    for pre in lex["opposite_prefixes"]:
        out.append(pre + word)
        if word.startswith(pre) and len(word) - len(pre) >= 4:
            out.append(word[len(pre):])
    return list(dict.fromkeys(out))


def _flag_evidence(prompt: str, param: str, tool: str = "") -> tuple[bool, bool]:
    """``(true, false)``: whether the request states boolean ``param`` true, and whether false (both: it states
    both). Read by its name's words (function words dropped: ``is_private`` -> ``private``): a ``switch_on`` or
    ``switch_off`` phrase right before or after them (``turn off notifications``, ``notifications off``) decides
    where one is written; else the name (negated: false) or one of its :func:`opposites` (``make it public`` for
    ``private``: false; ``not public``: true)."""
    lex = _lexicon()
    name = [w for w in tokens(param) if w not in lex["function_words"]] or tokens(param)
    if not name:
        return False, False
    sw: dict[bool, tuple[bool, bool]] = {}
    for on in (True, False):
        hits = [stated(prompt, ph) for w in lex["switch_on" if on else "switch_off"]
                for ph in ([*w.split(), *name], [*name, *w.split()])]
        sw[on] = (any(h[0] for h in hits), any(h[1] for h in hits))
    if any(sw[True]) or any(sw[False]):
        return sw[True][0] or sw[False][1], sw[False][0] or sw[True][1]
    pos, neg = stated(prompt, name)
    for opp in opposites(name[-1]):
        op, on_ = stated(_predicates(prompt, opp, tool), [*name[:-1], opp])
        pos, neg = pos or on_, neg or op
    return pos, neg


def _predicates(prompt: str, word: str, tool: str = "") -> str:
    """``prompt`` with each use of ``word`` (any form :func:`stem` reads as it) that states no flag blanked: part
    of a compound name (``public-site-mirror``) or before another noun (``the public key``). A use that ends its
    phrase (make it public; public, please; a public one), takes an object (enable the webhook) or comes before
    a noun of ``tool``'s name (a non-public repository) stays."""
    ends = {*_STOPS, *_lexicon()["clause_starts"], *_lexicon()["pronouns"], *_POST, "the", "a", "an", "my", "our"}
    ends |= {stem(w) for w in tokens(tool)}
    pre_re = r"(?i)(?<![\w/])(?:{})-$".format("|".join(_lexicon()["opposite_prefixes"]))   # non-public: no compound

    def keep(m: re.Match[str]) -> str:
        after, pre = re.match(r"\s+([a-z]+)", prompt[m.end():], re.I), prompt[:m.start()]
        compound = re.search(r"[\w/]$", pre) or pre.endswith("-") and not re.search(pre_re, pre) or re.match(
            r"[\w/-]|[.@:]\w", prompt[m.end():])
        ok = after is None or {after[1].casefold(), stem(after[1].casefold())} & ends
        return m.group() if ok and not compound else "x"
    want = stem(word.casefold())
    return re.sub(r"(?i)[a-z]+", lambda m: keep(m) if stem(m.group().casefold()) == want else m.group(), prompt)


def _wanted_flag(prompt: str, param: str, tool: str = "") -> str | None:
    """``"true"``/``"false"`` where the request states a boolean parameter (:func:`_flag_evidence`: by its name,
    maybe negated, or by its opposite), else None (neither, or both)."""
    pos, neg = _flag_evidence(prompt, param, tool)
    return "true" if pos and not neg else "false" if neg and not pos else None


def _said(prompt: str, choices: tuple[str, ...], tool: str) -> tuple[dict[str, tuple[bool, bool]], list[str]]:
    """Each choice's ``stated`` reading, and the choices the request names (not negated). A choice made of words
    of the tool's own name is named only when written twice: once is the verb that asks for the action ("squash-
    merge it" names ``squash``, not ``merge``: ``merge_method: merge`` passed before; "merge it with a merge
    commit" names ``merge``)."""
    said = {c.casefold(): stated(prompt, tokens(c)) for c in choices}
    own = set(tokens(tool))
    words = [stem(w) for w in _words(prompt)]
    named = sorted(c for c, (p, n) in said.items() if p and not n and (
        not set(tokens(c)) <= own or sum(w == stem(tokens(c)[-1]) for w in words) > 1))
    return said, named


def closed_value(prompt: str, param: str, value: str, choices: tuple[str, ...], tool: str = "") -> tuple[int, str]:
    """Level (2 stated, 1 the agent's choice, 0 refused) and reason of a closed-set value (module docstring)."""
    v = str(value).strip().casefold()
    if choices == BOOLEAN:
        if v not in BOOLEAN:
            return 0, f"{param} {value!r} is not a boolean"
        want = _wanted_flag(prompt, param, tool)
        if want is not None and v != want:
            return 0, f"{param}={value!r} but the request states {param}={want}"
        return (2, "stated in the request") if want else (1, f"{param}: the request states none (the agent's choice)")
    if v not in {c.casefold() for c in choices}:
        return 0, f"{param} {value!r} is not one of the schema's values"
    said, named = _said(prompt, choices, tool)
    if said[v][1] and not said[v][0]:
        return 0, f"{param} {value!r}: the request rules it out"
    if named and v not in named:
        return 0, f"{param} {value!r}: the request states {'/'.join(named)}"
    return (2, "stated in the request") if v in named else (1, f"{param}: the request states none (the agent's choice)")


def omitted_values(decl: ToolDecl, arguments: Mapping[str, Any], prompt: str, amount_roles: Iterable[str],
                   tool: str = "") -> tuple[int, str]:
    """``(0, why)`` when a consequential call leaves out a parameter whose value the request states, else
    ``(2, "")``: an amount (:func:`~agentguard.policies.capabilities.omitted_amount`), a boolean the request
    states by its name ("a private repository" and no ``private``) or an ``enum`` value it names ("squash-merge"
    and no ``merge_method``). The tool's default, which no value check sees, would apply (found by the lead's red
    team: a public repository and a plain merge were allowed)."""
    roles = set(amount_roles)
    lv, why = omitted_amount([a for a, r in decl.args.items() if r in roles], arguments, prompt)
    if lv == 0:
        return lv, why
    for arg, choices in decl.choices.items():
        if "." in arg or arguments.get(arg) not in (None, ""):
            continue
        want = _wanted_flag(prompt, arg, tool) if choices == BOOLEAN else "/".join(_said(prompt, choices, tool)[1])
        if want:
            return 0, f"the request states {arg}={want} but the call leaves {arg} out: the tool's default would apply"
    return 2, ""


def record_nouns(field_name: str, tool: str) -> tuple[str, ...]:
    """The words by which a request names a field of an undeclared tool's record (the ledger lets a private
    value out only in a grant whose sentence writes one, plural forms included): the field's name and the last
    word of the tool's name, singular (``list_commits.commit`` -> ``commit``; ``get_pull_request_status.state``
    -> ``state``, ``status``)."""
    last = (tokens(tool) or [""])[-1]
    last = last[:-1] if last.endswith("s") and not last.endswith(("ss", "us")) and len(last) > 3 else last
    return tuple(dict.fromkeys(w for w in (" ".join(tokens(field_name)), last) if w))


def expand_arguments(decl: ToolDecl, arguments: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """``(argument, value)`` pairs where an array of objects whose item properties the schema declares
    (``files=[{"path": ..., "content": ...}]``), or an object whose properties it declares (``evidence={...}``),
    is read per property (``files.path``, ``files.content``, each with its own role), at any depth the
    declaration reaches (``filterGroups.filters.value``): a declared property name is not a value; any other
    key stays a value (fail closed)."""
    for arg, v in arguments.items():
        yield from _expand(decl, arg, v)


def _expand(decl: ToolDecl, arg: str, v: Any) -> Iterator[tuple[str, Any]]:
    if not any(k.startswith(arg + ".") for k in decl.args) or not isinstance(v, (Mapping, list)):
        yield arg, v
        return
    for item in (v if isinstance(v, list) else [v]):
        if isinstance(item, Mapping):
            for k, x in item.items():
                sub = f"{arg}.{k}"
                if sub in decl.args:
                    yield from _expand(decl, sub, x)
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

    @classmethod
    def of(cls, schema: ToolSchema, decl: ToolDecl) -> "SchemaTool":
        lex = _lexicon()
        fn = set(lex["function_words"])
        words = schema.words()
        verbs = [words[0]] if words else []
        verbs += [w for a, w in zip(words, words[1:]) if a in ("or", "and")]
        nouns = tuple(dict.fromkeys(w for w in words if w not in verbs and w not in fn and len(w) > 1))
        optional = {p.name: (tuple(tokens(p.name)),) + tuple(tuple(tokens(e)) for e in p.enum)
                    for p in schema.params if not p.required}
        return cls(schema.name, tuple(verbs), nouns, frozenset(p.name for p in schema.params if p.required),
                   optional, any(r in ("file", "filename") for r in decl.args.values()),
                   {a: c for a, c in decl.choices.items() if a in optional})


_STOPS = frozenset({"to", "from", "by", "in", "for", "of", "on", "at", "with", "and", "or", "about"})


#: words that may follow an idiom's object noun without making it a modifier ("send an invoice due in 14 days")
_POST = frozenset({"due", "now", "today", "tomorrow", "immediately", "asap", "again", "please", "too", "as", "so"})
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
            if not more or any(after[j:j + len(more)] == more for j in range(len(after))):
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
        hit = next((n for n in tool.nouns if stem(n) in ws), None)
        if hit is None and tool.takes_file:
            hit = next(iter(_PATH.findall(strip_quotes(text))), None)
        if hit is not None:
            return hit
        if not pron & set(_words(sentence)):
            return None
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
        idi = idioms(sentence)
        imp = [(w, w) for w in imperatives(sentence)] + [(f"{ph} (an idiom for {v} {n})".replace(" )", ")"), v)
                                                         for ph, v, n, _ in idi]
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
            why = next((f"{said} ... {obj} ({how})" for (said, w), s, nouns in zip(imp, stems, reach)
                        if said == w or {head, whole} & nouns for how in (   # an idiom: its noun is the tool's
                "the tool's own verb" if s in {stem(v) for v in t.verbs} else
                "a noun of the tool's name as the verb" if s in {stem(n) for n in t.nouns} else
                "a comment verb" if w in lex["comment_verbs"] and head in {stem(n) for n in lex["comment_nouns"]}
                else "a creation verb and the tool's head noun" if creates and w in lex["creation_verbs"]
                and not (w in DOCUMENT_VERBS and t.nouns[-1] in DOCUMENTS)   # "open the file" reads it
                and (head in nouns or t.nouns[-1] == "file" and t.takes_file
                     and _PATH.search(strip_quotes(sentence)))
                else "a creation verb and the whole the tool's part goes in" if creates and w in lex["creation_verbs"]
                and whole in nouns and _adds_part(sentence, w) else "",) if how), None)
            if why is not None:
                out.append(Grant(self.action(t.name), why, sentence.strip()))
                continue
            for p, phrases in t.optional.items():
                hit = self._param(p, phrases, imp, stems, sentence)
                if hit is not None:
                    # a closed-set parameter whose value the sentence states is in scope too: its value is
                    # bound to the request (closed_value) ("stage evidence ..., but don't submit it")
                    also = {c for c, ch in t.closed.items() if c != p and (
                        _wanted_flag(sentence, c, t.name) if ch == BOOLEAN else _said(sentence, ch, t.name)[1])}
                    out.append(Grant(self.action(t.name), f"{hit} ... {obj} (parameter {p!r})", sentence.strip(),
                                     t.required | {p} | also, p))
        return out

    @staticmethod
    def _param(p: str, phrases: tuple[tuple[str, ...], ...], imp: list[tuple[str, str]], stems: list[str],
               sentence: str) -> str | None:
        """The imperative naming optional parameter ``p`` (its name or an enum value), or a change verb or a
        supply verb (``stage``, ``attach``, ``include``) with ``p``'s name in the sentence; ``None`` when none."""
        singles = {stem(ph[-1]) for ph in phrases if ph}
        hit = next((said for (said, _), s in zip(imp, stems) if s in singles), None)
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
