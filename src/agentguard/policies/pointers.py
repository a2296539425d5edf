"""Values the user's request points at by their source: "her e-mail is on her website www.x.com" (issue 27).

A request may name *where* a target value is rather than the value: "you can find her e-mail on her website:
www.dora-website.com", "visit Dora's site (www.dora-website.com) and invite her". The page the request names is
third-party text (its owner, or whoever injected text into it, wrote it), so nothing in it is trusted by itself;
what the user delegated is one value of one kind, and only that one is vouched for (level 1, never a grant):

- **A stated kind** (:data:`KIND_NOUNS`): a sentence of the request with a finding verb (:data:`FINDING`: find,
  look up, get ...) before the kind's noun ("e-mail", "IBAN") and a locative preposition (on, in, at, from)
  after it, and the first link the request writes after that, points at the value of that kind in the page
  of that link;
- **A named owner**: a link the request writes right after a name it writes ("Dora (www.x.com)", "Dora's
  website www.x.com", "Dora: www.x.com") points at the e-mail address or IBAN in that page *for calls that
  also name that person* (``invite(user='Dora', email=...)``, never another recipient);
- **a definite description names one value**: the pointed value is vouched for only while the pages fetched from
  that link hold exactly one distinct value of the kind; a second one (an injected address beside the owner's)
  makes the description ambiguous and vouches for none (fail closed);
- only the result of a read or fetch with an argument that *is* that very link counts as the page (the fetch of
  the address the request wrote; ``www.evil.com/?u=www.x.com`` is another page), and the pointer comes from the
  request alone: tool results never create one.

The phrase grammar is English closed-class words (prepositions, determiners, a few finding verbs), written for
any tool set: it names no tool, suite or benchmark value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from .capabilities import _spans, strip_quotes
from .links import links
from .provenance import _leaves, canonical, entities, word_form

__all__ = ["FINDING", "KIND_NOUNS", "Pointers", "ROLE_KINDS"]

#: the noun phrases that name a kind of target value -> the kind (:func:`~agentguard.policies.provenance.entities`)
KIND_NOUNS: Mapping[str, str] = {"e-mail address": "email", "email address": "email", "mail address": "email",
                                 "e-mail": "email", "email": "email", "iban": "iban", "account number": "iban"}
#: verbs that send the reader to a source for a value ("find her e-mail on ...")
FINDING: tuple[str, ...] = ("find", "finds", "found", "look up", "looked up", "get", "got", "locate", "locates",
                            "obtain", "take", "copy")
#: the target roles (:mod:`agentguard.policies.toolset`) whose values a pointer may vouch for -> their kind
ROLE_KINDS: Mapping[str, str] = {"email": "email", "account": "iban"}
_OWNER_KINDS = frozenset({"email", "iban"})
_NOUN = "|".join(re.escape(n) for n in sorted(KIND_NOUNS, key=len, reverse=True))
_STATED = re.compile(r"\b(?:" + "|".join(re.escape(v) for v in FINDING) + r")\b(?:\W+[\w']+){0,3}?\W+(" + _NOUN
                     + r")\b(?:\W+[\w']+){0,4}?\W+(?:on|in|at|from)\b", re.IGNORECASE)
# a name right before a link: "Dora (www.x)", "Dora's website www.x", "Dora: www.x", "Dora's blog: (www.x)"
_OWNER = re.compile(r"\b([A-Z][a-z]{2,})(?:'s(?:\s+(?:web\s?site|site|page|blog|homepage|profile))?\s*:?\s*\(?|\s*[:(])\s*$")


@dataclass
class Pointers:
    """One run's pointers (see the module docstring): link form -> (kind, owner or ``""``), and the values of
    each kind the pages fetched from a pointed link held."""

    _pointed: dict[str, set[tuple[str, str]]] = field(default_factory=dict)
    _seen: dict[tuple[str, str], set[str]] = field(default_factory=dict)   # (link, kind) -> canonical values
    call: frozenset[str] = frozenset()   # word forms of the proposed call's argument values (set by the ledger)

    def observe_prompt(self, prompt: str) -> None:
        """The pointers the request writes (quoted text blanked)."""
        self._pointed.clear()
        blank = strip_quotes(prompt)
        for a, b in _spans(blank):
            sent = blank[a:b]
            for m in _STATED.finditer(sent):   # the first link after the preposition is its object
                if lks := links(sent[m.end():]):
                    self._pointed.setdefault(lks[0].form, set()).add((KIND_NOUNS[m.group(1).casefold()], ""))
            for tok in re.finditer(r"[^\s@()]+(?=[\s),;]|$)", sent):   # a link token (an e-mail address is no page)
                if tok.start() > 0 and sent[tok.start() - 1] == "@" or not (lks := links(tok.group())):
                    continue
                if (o := _OWNER.search(sent[:tok.start()])) is not None:
                    for lk in lks:
                        self._pointed.setdefault(lk.form, set()).update((k, o.group(1).casefold()) for k in _OWNER_KINDS)

    def observe_result(self, result: Any, arguments: Mapping[str, Any] | None, kind: str = "fetch") -> None:
        """Record the values of the result of a read or fetch (``kind``) with an argument that is a pointed link
        (the page the request names)."""
        if kind not in ("read", "fetch"):
            return
        forms = {c[1] for s in _leaves(arguments or {}) if (c := canonical(s))[0] == "url"} & set(self._pointed)
        if not forms:
            return
        found = list(entities(" \n ".join(_leaves(result))))
        for form in forms:
            for want, _ in self._pointed[form]:
                self._seen.setdefault((form, want), set()).update(v for k, v in found if k == want)

    def source(self, value: tuple[str, str], role: str) -> str | None:
        """Where the request points at canonical ``value`` (``(kind, form)``) for a parameter of ``role`` (the
        kind's own: :data:`ROLE_KINDS`), if it does and it is the only value of its kind in that page; an
        owner-bound pointer needs the owner's name among :attr:`call`'s values."""
        kind, form = value
        if ROLE_KINDS.get(role) != kind:
            return None
        for lk, ptrs in self._pointed.items():
            if self._seen.get((lk, kind)) != {form}:
                continue
            for k, owner in ptrs:
                if k == kind and (not owner or owner in self.call):
                    return (f"the only {kind} of {lk}, where the request says to find it" if not owner else
                            f"the only {kind} of {lk}, which the request gives as {owner.title()}'s")
        return None

    def bind(self, values: Iterable[str]) -> None:
        """Set the proposed call's argument values (their word forms) for owner-bound pointers."""
        self.call = frozenset(word_form(v) for v in values)
