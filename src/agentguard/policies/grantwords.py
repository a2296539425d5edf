"""The words of a request as the schema grants read them (issue 27; split from
:mod:`agentguard.policies.schemagrants`, which documents the rules): the declared lexicon
(``library/schema_grants_en.json``) and its morphology (:func:`stem`), clause-initial imperatives, whether a
phrase is stated or negated within its sentence (:func:`stated`), a boolean stated by its name or by its
opposite (:func:`opposites`), and the level of a closed-set value (:func:`closed_value`) or of a value left out
(:func:`omitted_values`)."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping

from .capabilities import omitted_amount, strip_quotes
from .toolinfer import tokens
from .toolset import BOOLEAN, ToolDecl

__all__ = ["closed_value", "imperatives", "omitted_values", "opposites", "stated", "stem"]

#: prepositions and conjunctions: they end a noun phrase
_STOPS = frozenset({"to", "from", "by", "in", "for", "of", "on", "at", "with", "and", "or", "about"})


#: words that may follow an idiom's object noun without making it a modifier ("send an invoice due in 14 days")
_POST = frozenset({"due", "now", "today", "tomorrow", "immediately", "asap", "again", "please", "too", "as", "so"})

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
    starts, modals = set(_lexicon()["clause_starts"]), set(_lexicon()["polite_modals"])
    out: list[str] = []
    prev = prev2 = ""
    for w in _WORD.findall(strip_quotes(sentence).casefold()):
        if w[0].isalpha() and (not prev or prev in starts or not prev[0].isalpha() or prev == "you" and prev2 in modals):
            out.extend(p for p in w.split("-") if p)
        prev2, prev = prev, w
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
