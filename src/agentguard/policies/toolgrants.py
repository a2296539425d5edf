"""Grants from a tool's own words, and general-English verb synonymy, for tools no grant lexicon knows (issue 27).

The grant lexicon (:mod:`agentguard.policies.capabilities`) is hand-written vocabulary; a tool set it was
not written for ("post to the channel" when the lexicon knows "send") gets no grant and every call of it
escalates. :class:`ToolWordGrants` mints a grant for one tool from the words of that tool itself, read from
its schema (the name ``send_channel_message``: verb ``send``, objects ``channel``, ``message``):

- a sentence of the **user's request** (quoted text blanked, see :func:`~capabilities.strip_quotes`) grants
  the action ``tool:<name>`` when it writes one of the tool's object words (or its plural) *and* a verb for
  the tool's verb: the verb itself in any inflected form, or, when a :class:`WordSimilarity` is given, a
  word whose general-English similarity to the tool's verb is at least ``threshold`` (an object word of the
  tool never counts as its verb; stopwords never count);
- with a :class:`VerbRelations` (WordNet 3.1's verb hierarchy, a derived table in the library), a request word
  whose synset is the tool verb's or a hypernym of it counts as its verb ("post" for ``send``, "add" for
  ``append``); a noun of the tool set ("channel") and the English auxiliaries are never read as verbs;
- a value of the tool's target kind written in the sentence (``targets``: a URL, an e-mail address, an IBAN,
  recognised by :func:`~agentguard.policies.provenance.entities`) names its object as its noun would;
- the grant only authorises the action kind: every target and value of the call is still checked by the
  data-flow labels (:mod:`agentguard.policies.dataflow`), so a grant from similarity never supplies a
  recipient, an account or a file;
- the threshold is not a constant of this module: the leave-one-suite-out bench chooses it on the design
  suites only (:func:`choose_threshold`) and records it per fold.

:class:`WordSimilarity` is the cosine similarity of WordLlama's static token embeddings (the ``wordllama``
wheel ships its weights; loaded from the wheel's files, never from the network): a maintained, offline,
general-English embedding, not benchmark vocabulary. Only the request is read: tool results and injected text
never reach :meth:`ToolWordGrants.grants`.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..core.errors import DependencyError, InputError, require
from .capabilities import Grant, GrantLexicon, mint, strip_quotes
from .provenance import entities
from .toolinfer import InferenceLexicon, ToolSchema, infer, namespaced, tokens
from .toolset import ToolSet

__all__ = ["ToolWordGrants", "VerbRelations", "WordSimilarity", "choose_threshold", "object_head", "tool_words",
           "verb_use", "with_tool_word_grants"]

# words of a tool's name that are neither its verb nor an object (function words of an identifier)
_FUNCTION = frozenset({"to", "from", "by", "in", "for", "of", "the", "a", "an", "on", "at", "with", "all", "and",
                       "or", "new", "my"})


_FORMS = GrantLexicon({})


def object_head(schema: ToolSchema) -> str:
    """The head noun of a tool's object: the last word of its name before the first function word after the verb
    (``send_direct_message`` -> ``message``, ``invite_user_to_slack`` -> ``user``), or ``""``."""
    words = schema.words()
    head = ""
    for w in words[1:]:
        if w in _FUNCTION:
            break
        head = w if len(w) > 1 else head
    return head


def tool_words(schema: ToolSchema) -> tuple[str, tuple[str, ...]]:
    """``(verb, objects)`` of a tool: the first word of its name and the name's other content words."""
    words = schema.words()
    if not words:
        raise InputError("a tool needs a name to take grants from its words")
    return words[0], tuple(w for w in dict.fromkeys(words[1:]) if w not in _FUNCTION and len(w) > 1)


class WordSimilarity:
    """Cosine similarity of two words under WordLlama's static embeddings (offline, from the wheel's files)."""

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self._model: Any = None
        self._memo: dict[tuple[str, str], float] = {}

    def _load(self) -> Any:
        wl = require("wordllama", "policies")
        from safetensors import safe_open
        from tokenizers import Tokenizer
        from wordllama.inference import WordLlamaInference

        root = Path(wl.__file__).resolve().parent
        weights = root / "weights" / "l2_supercat_256.safetensors"
        tok = root / "tokenizers" / "l2_supercat_tokenizer_config.json"
        if not weights.exists() or not tok.exists():
            raise DependencyError(f"the wordllama wheel lacks its bundled files ({weights.name}, {tok.name})")
        with safe_open(str(weights), framework="np", device="cpu") as f:
            emb = f.get_tensor("embedding.weight")[:, :self.dim]
        return WordLlamaInference(emb, Tokenizer.from_file(str(tok)), binary=False)

    def __call__(self, a: str, b: str) -> float:
        key = (a, b) if a <= b else (b, a)
        if key not in self._memo:
            if self._model is None:
                self._model = self._load()
            s = float(self._model.similarity(a, b))
            self._memo[key] = s if math.isfinite(s) else -1.0
        return self._memo[key]


# English auxiliary and modal verbs: a closed grammatical class, not actions ("being" is not a way to "add")
_AUXILIARY = frozenset({"be", "have", "do", "can", "could", "will", "would", "shall", "should", "may", "might",
                        "must"})


class VerbRelations:
    """WordNet's verb hierarchy (``library/verbs_wordnet.json``, derived from WordNet 3.1 by
    ``scripts/derive_verb_relations.py``; Princeton's licence in the file): :meth:`covers` says whether a word
    of a request names the action of a tool's verb, the same synset or a more general one (the tool's verb is
    a hyponym: "post" covers ``send``, one synset "mail, post, send"; "add" covers ``append``). A published,
    general-English hierarchy, so a fold never drops it as "a rule only the left-out suite uses"."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path else Path(__file__).parent / "library" / "verbs_wordnet.json"
        self._lemmas: dict[str, list[int]] = {}
        self._hyper: list[list[int]] = []
        self._closure: dict[str, frozenset[int]] = {}
        self.source: dict[str, Any] = {}

    def _load(self) -> None:
        if not self._hyper:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            self._lemmas, self._hyper, self.source = data["lemmas"], data["hypernyms"], data["source"]

    def lemmas(self, word: str, irregular: Mapping[str, tuple[str, ...]] | None = None) -> list[str]:
        """The verb lemmas an inflected ``word`` may be (``posted`` -> ``post``), by English suffix rules and the
        ``irregular`` forms (base -> forms)."""
        self._load()
        w = word.casefold()
        cands = [w]
        for suf, add in (("s", ""), ("es", ""), ("ed", ""), ("d", ""), ("ing", ""), ("ing", "e")):
            if w.endswith(suf) and len(w) - len(suf) >= 2:
                stem = w[:-len(suf)]
                cands.append(stem + add)
                if suf in ("ed", "ing") and len(stem) > 2 and stem[-1] == stem[-2]:
                    cands.append(stem[:-1])   # stopped -> stop
        cands += [base for base, forms in (irregular or {}).items() if w in forms]
        return [c for c in dict.fromkeys(cands) if c in self._lemmas]

    def closure(self, verb: str) -> frozenset[int]:
        """Every synset of ``verb`` and all their hypernyms."""
        self._load()
        if verb not in self._closure:
            out: set[int] = set()
            stack = list(self._lemmas.get(verb, ()))
            while stack:
                x = stack.pop()
                if x not in out:
                    out.add(x)
                    stack.extend(self._hyper[x])
            self._closure[verb] = frozenset(out)
        return self._closure[verb]

    def covers(self, word: str, verb: str, irregular: Mapping[str, tuple[str, ...]] | None = None) -> bool:
        """Whether request ``word`` names ``verb``'s action or a more general one (see the class docstring). The
        auxiliary and modal verbs of English (closed-class words: be, have, do, can, will ...) name no action,
        and a top of WordNet's verb hierarchy (a synset with no hypernym: "change", "move", "act") names only
        its own synset: as the broader action of every verb below it, it would let "the changed files" grant
        ``merge_pull_request`` (GitHub MCP bench, after the tool-word grants: merge -> ... -> change)."""
        up = self.closure(verb)
        own = set(self._lemmas.get(verb, ()))
        return any(h in own or self._hyper[h] for lem in self.lemmas(word, irregular) if lem not in _AUXILIARY
                   for h in set(self._lemmas[lem]) & up)

    def denominal(self, noun: str, verb: str) -> bool:
        """Whether ``noun`` (a tool's object), used as a verb, names the action ``verb`` + ``noun``: a verb sense
        of the noun (English zero derivation: "to message", "to e-mail") is a kind of one of ``verb``'s senses'
        genus, its direct hypernym when that is not a top of the hierarchy ("to message" and "to send" are both
        ways "to transfer"; "to file" is no way "to create", a top)."""
        self._load()
        if noun in _AUXILIARY or noun not in self._lemmas:
            return False
        mine = self.closure(noun)
        return any(g in mine for s in self._lemmas.get(verb, ()) for g in (s, *self._hyper[s]) if self._hyper[g])


# words after which a word is a noun, not a verb: determiners, possessives, numerals ("the message", "her post")
_BEFORE_NOUN = frozenset({"a", "an", "the", "this", "that", "these", "those", "my", "your", "his", "its", "our",
                          "their", "each", "every", "any", "some", "no", "one", "which", "what", "whose", "following",
                          "same", "new", "last", "first", "next", "previous"})
_OBJECT_PRONOUN = frozenset({"me", "us", "him", "her", "them", "you"})


def verb_use(word: str, sentence: str, nouns: Iterable[str] = ()) -> bool:
    """Whether ``sentence`` (original case, quotes blanked) uses ``word`` as a transitive verb: the word or its
    -s/-ed/-ing form right before an object pronoun (me, us, him, her, them, you) or a capitalised name, and not
    right after a determiner, a possessive, an adjective of order or one of ``nouns`` (a compound's modifier:
    "channel message Alice posted") ("message them", "message Alice"; not "the message Bob sent", "Bob's
    message")."""
    nouns = frozenset(nouns)
    toks = re.findall(r"[\w'-]+", sentence)
    for i, t in enumerate(toks[:-1]):
        if t.casefold() not in {word, word + "s", word + "d", word + "ed", word + "ing"}:
            continue
        prev, nxt = (toks[i - 1].casefold() if i else ""), toks[i + 1]
        if prev in _BEFORE_NOUN or prev in nouns or prev.endswith("'s"):
            continue
        if nxt.casefold() in _OBJECT_PRONOUN or (nxt[:1].isupper() and nxt[1:].islower() and len(nxt) >= 2):
            return True
    return False


@lru_cache(maxsize=1)
def _shared_similarity() -> WordSimilarity:
    return WordSimilarity()


def _has(word: str, text_words: set[str]) -> str | None:
    for form in (word, word + "s", word + "es"):
        if form in text_words:
            return form
    return None


@dataclass(frozen=True)
class ToolWordGrants:
    """Grants ``tool:<name>`` from a tool's own words (see the module docstring)."""

    tools: dict[str, tuple[str, tuple[str, ...]]]
    similarity: Callable[[str, str], float] | None = None
    threshold: float = math.inf
    stopwords: frozenset[str] = frozenset()
    forms: GrantLexicon = _FORMS   # inflection (and the irregular forms of English verbs: sent, paid)
    relations: VerbRelations | None = None   # WordNet: a request word naming the tool verb's action or a broader one
    # per tool, the kinds of value its target arguments take ('url', 'email', 'iban'): a value of one of them
    # written in the sentence names the tool's object as its noun does ("post ... to www.example.com")
    targets: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # per tool, the head noun of its verb's object (English compounds are head-final: direct *message*): used as a
    # verb in the request ("message them"), it names the tool's verb and object at once (VerbRelations.denominal)
    heads: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def for_tools(cls, schemas: Iterable[ToolSchema], *, similarity: Callable[[str, str], float] | None = None,
                  threshold: float = math.inf, stopwords: Iterable[str] = (),
                  irregular: Mapping[str, tuple[str, ...]] | None = None,
                  relations: VerbRelations | None = None,
                  targets: Mapping[str, Iterable[str]] | None = None) -> "ToolWordGrants":
        schemas = list(schemas)
        return cls({s.name: tool_words(s) for s in schemas}, similarity, threshold, frozenset(stopwords),
                   GrantLexicon({}, dict(irregular or {})), relations,
                   {k: frozenset(v) for k, v in (targets or {}).items()}, {s.name: object_head(s) for s in schemas})

    @staticmethod
    def action(tool: str) -> str:
        return f"tool:{tool}"

    def score(self, tool: str, sentence: str, bare: str | None = None) -> tuple[float, str, str]:
        """``(score, verb word, object word)`` of one request sentence for ``tool``: 1.0 for the tool's own
        verb, else the best similarity of a word to it, ``-inf`` when the sentence names none of its objects.
        ``bare`` is the sentence with quoted text already blanked (by :func:`~capabilities.mint`)."""
        verb, objects = self.tools[tool]
        words = set(re.findall(r"[a-z][a-z-]*", (strip_quotes(sentence) if bare is None else bare).casefold()))
        obj = next((o for o in (_has(x, words) for x in objects) if o), None)
        if obj is None and self.targets.get(tool):
            text = strip_quotes(sentence) if bare is None else bare
            obj = next((f for k, f in entities(text) if k in self.targets[tool]), None)
        if obj is None:
            return -math.inf, "", ""
        own = set(self.forms.forms(verb))
        hit = next((w for w in sorted(words) if w in own), None)
        if hit is not None:
            return 1.0, hit, obj
        skip = {f for o in objects for f in (o, o + "s", o + "es")} | self.stopwords
        if self.relations is not None:   # a noun of this tool set (channel, user) is never read as a verb
            nouns = {f for _, objs in self.tools.values() for o in objs for f in (o, o + "s", o + "es")}
            rel = next((w for w in sorted(words - skip - nouns) if len(w) >= 3
                        and self.relations.covers(w, verb, self.forms.irregular)), None)
            if rel is not None:
                return 1.0, rel, obj
            text = strip_quotes(sentence)   # the object noun as the verb ("message them"): verb and object at once
            head = self.heads.get(tool, "")   # the head noun of the verb's object (send_direct_MESSAGE)
            if head and self.relations.denominal(head, verb) and verb_use(head, text, nouns):
                return 1.0, head, head
        if self.similarity is None:
            return -math.inf, "", obj
        best, bw = -math.inf, ""
        for w in sorted(words - skip):
            if len(w) >= 3:
                s = self.similarity(w, verb)
                if s > best:
                    best, bw = s, w
        return best, bw, obj

    def grants(self, sentence: str, bare: str | None = None) -> list[Grant]:
        """The ``tool:<name>`` grants one sentence of the user's request mints (``bare``: see :meth:`score`)."""
        out = []
        for tool in self.tools:
            s, w, o = self.score(tool, sentence, bare)
            if s >= 1.0 or s >= self.threshold:
                verb = self.tools[tool][0]
                how = (f"similar to {verb!r}: {s:.3f}" if s < 1.0 else "the tool's own verb"
                       if w in self.forms.forms(verb) else f"WordNet: to {w} is a way to {verb} a {w}" if w == o
                       else f"WordNet: {w!r} names {verb!r} or a broader action")
                out.append(Grant(self.action(tool), f"{w} ... {o} ({how})", sentence.strip()))
        return out

    def mint(self, prompt: str) -> list[Grant]:
        """The grants of a whole request: :func:`~capabilities.mint` with this source alone."""
        return mint(prompt, GrantLexicon({}, extra=(self,)))


def choose_threshold(scored: Sequence[tuple[float, bool]], floor: float = 0.0) -> dict[str, Any]:
    """The similarity threshold that maximises (true grants - false grants) over ``scored`` (score, whether
    the call was needed), ties to the higher threshold, never below ``floor``; with its counts. Only design
    examples may be passed (the leave-one-suite-out bench passes the design suites')."""
    cands = sorted({s for s, _ in scored if math.isfinite(s) and floor <= s < 1.0}, reverse=True)
    best = {"threshold": math.inf, "true_grants": 0, "false_grants": 0}
    best_gain = 0
    for t in cands:
        tp = sum(1 for s, y in scored if y and t <= s < 1.0)
        fp = sum(1 for s, y in scored if not y and t <= s < 1.0)
        if tp - fp > best_gain:
            best_gain, best = tp - fp, {"threshold": t, "true_grants": tp, "false_grants": fp}
    best["examples"] = len(scored)
    best["positives"] = sum(1 for _, y in scored if y)
    return best


# target roles whose values a request writes in a recognisable form (agentguard.policies.provenance.entities)
_ENTITY_KIND = {"url": "url", "email": "email", "account": "iban"}


def with_tool_word_grants(toolset: ToolSet, schemas: Iterable[ToolSchema], inference: InferenceLexicon,
                          relations: VerbRelations | None = None) -> ToolSet:
    """``toolset`` (its lexicon included) where every consequential tool its grant lexicon gives **no** action
    takes the tool-word grant ``tool:<name>`` (:class:`ToolWordGrants` with WordNet's verb hierarchy and no
    similarity, so there is no threshold to choose). Without it such a tool can never be granted, whatever
    the request says ("open an issue" for ``create_issue`` on a lexicon written for e-mail and banking). A
    ``send`` or ``delete`` with no recognised target stays ungrantable (``fail:no-target``), and the grant
    authorises only the action kind: every target and value is still checked by the data-flow labels."""
    lex = toolset.lexicon if toolset.lexicon is not None else GrantLexicon({})
    cover: list[ToolSchema] = []
    kinds: dict[str, set[str]] = {}
    for s in namespaced(schemas, inference):
        d, trace = toolset.decl(s.name, [p.name for p in s.params]), set[str]()
        infer(s, inference, lex, trace=trace)
        if d.kind != "read" and not d.actions and "fail:no-target" not in trace:
            cover.append(s)
            kinds[s.name] = {_ENTITY_KIND[r] for r in d.args.values() if r in _ENTITY_KIND}
    if not cover:
        return toolset
    src = ToolWordGrants.for_tools(cover, stopwords=lex.stopwords, irregular=lex.irregular,
                                   relations=relations or VerbRelations(), targets=kinds)
    tools = {n: replace(d, actions=(*d.actions, src.action(n))) if n in src.tools else d
             for n, d in toolset.tools.items()}
    return replace(toolset, tools=tools, lexicon=replace(lex, extra=(*lex.extra, src)))
