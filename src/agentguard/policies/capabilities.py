"""Capabilities minted from the user's request: typed grants, each naming the words it came from (issue 27).

A deployed guard cannot know what the user wants beyond what the user wrote. :func:`mint` reads the user's
prompt with a declared, reviewable lexicon (:class:`GrantLexicon`, a JSON policy file such as
``policies/library/grants_en.json``) and returns one :class:`Grant` per action the prompt asks for:

- an action is granted when one of its verbs (in any inflected form: ``pays``, ``paid``, ``sending``)
  occurs in a sentence of the prompt *outside quoted text* (a quoted message body is content, not an
  instruction; quotes are blanked in the whole prompt before it is split, so a quote holding a full stop
  stays content; a pasted message in double quotes across lines, a Markdown block quote ``> ``, a fenced or
  indented code block is quoted text too: :func:`strip_quotes`), and, when the action lists objects, one of
  them occurs in the same sentence (``delete`` grants ``delete_file`` only in a sentence that speaks of a file);
- each grant keeps ``words`` (the verb and object as written) and ``clause`` (its sentence): dates and
  times a call commits to are bound to the grant's sentence when that sentence names any (the day *and*
  the time of day the user gave, see :mod:`agentguard.policies.dataflow`).

Further grant sources (``GrantLexicon.extra``, e.g. :class:`~agentguard.policies.toolgrants.ToolWordGrants`)
read the same sentences, quoted text blanked.

Values the user named (addresses, IBANs, amounts, names) are read from the whole prompt by the ledger; a
grant only says which actions the user asked for and which words asked. Nothing is inferred from tool
results: a grant can only come from the user's own words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..core.errors import InputError

__all__ = ["Grant", "GrantLexicon", "mint", "money_stated", "omitted_amount", "quoted", "sentences", "strip_quotes"]

# a quoted span: 'x' or "x" or “x” (double quotes may span lines: a pasted message), not an apostrophe inside a
# word (I'll, what's)
_QUOTED = re.compile(r"(?<![\w])'[^'\n]{1,400}'(?![\w])|\"[^\"]{1,400}\"|“[^”]{1,400}”|‘[^’\n]{1,400}’")
# the Markdown blocks that hold content, not the writer's words: quoted (``> ``, a replied-to e-mail), fenced or
# indented code; read by markdown-it-py (CommonMark, a dependency of rich), not by a hand-written line grammar
_CONTENT_BLOCKS = frozenset({"blockquote_open", "fence", "code_block"})
# a sentence ends at . ! ? or a newline followed by space, not inside an address, number or file name
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


@dataclass(frozen=True)
class Grant:
    """One action the user's request asks for: ``action``, the ``words`` that asked, the ``clause`` they are in."""

    action: str
    words: str
    clause: str
    # the parameters the grant covers (None: every one); a parameter grant (agentguard.policies.schemagrants)
    # covers the schema's required parameters and the one the request names
    params: frozenset[str] | None = None
    param: str = ""   # the optional parameter a parameter grant names (its value is bound to the clause's quotes)

    def describe(self) -> str:
        scope = f", parameters {', '.join(sorted(self.params))}" if self.params is not None else ""
        return f"{self.action} (from the words {self.words!r}{scope})"


@dataclass(frozen=True)
class GrantLexicon:
    """Verbs (and objects) per action; see the module docstring. Load with :meth:`load` or :meth:`from_config`."""

    actions: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]]
    irregular: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    stopwords: frozenset[str] = frozenset()
    # further grant sources read from the same request sentences, e.g. a ToolWordGrants (tool's own words)
    extra: tuple[Any, ...] = ()

    @classmethod
    def from_config(cls, data: Mapping[str, Any]) -> "GrantLexicon":
        acts = data.get("actions")
        if not isinstance(acts, Mapping) or not acts:
            raise InputError("grant lexicon: 'actions' must be a non-empty mapping of action -> {verbs, objects}")
        out = {}
        for name, spec in acts.items():
            verbs = tuple(str(v).casefold() for v in spec.get("verbs", ()))
            if not verbs:
                raise InputError(f"grant lexicon: action {name!r} has no verbs")
            out[str(name)] = (verbs, tuple(str(o).casefold() for o in spec.get("objects", ())))
        irr = {str(k).casefold(): tuple(str(x).casefold() for x in v) for k, v in data.get("irregular", {}).items()}
        return cls(out, irr, frozenset(str(w).casefold() for w in data.get("stopwords", ())))

    @classmethod
    def load(cls, path: str | Path) -> "GrantLexicon":
        from ..core.loading import read_json_file  # strict: a duplicate key or NaN is refused

        return cls.from_config(read_json_file(path, "grant lexicon"))

    def restricted(self, keep_word: Any) -> "GrantLexicon":
        """A copy keeping only the verbs and objects for which ``keep_word(word)`` is true (leave-one-suite-out:
        the words the design suites' requests use); an action left without verbs is dropped."""
        acts = {}
        for a, (verbs, objs) in self.actions.items():
            v = tuple(x for x in verbs if keep_word(x))
            o = tuple(x for x in objs if keep_word(x))
            if v and (o or not objs):
                acts[a] = (v, o)
        return GrantLexicon(acts, self.irregular, self.stopwords, self.extra)

    def forms(self, verb: str) -> list[str]:
        """The written forms of ``verb``: base, -s/-es, -ed/-d, -ing (final e dropped), and irregular ones."""
        head, _, tail = verb.partition(" ")
        rest = f" {tail}" if tail else ""
        stems = {head, head + "s", head + "es", head + "ed", head + "d", head + "ing"}
        if head.endswith("e"):
            stems.add(head[:-1] + "ing")
        if re.fullmatch(r".*[^aeiou][aeiou][bdgmnprt]", head):   # stop -> stopped, plan -> planning
            stems |= {head + head[-1] + "ed", head + head[-1] + "ing"}
        return sorted({s + rest for s in stems} | set(self.irregular.get(verb, ())))


def strip_quotes(text: str) -> str:
    """``text`` with quoted spans blanked (same length, line breaks kept), so words inside a quoted message mint
    nothing: a span in quotes (double quotes across lines too) and the lines of a Markdown block quote (``> ``), a
    fenced or an indented code block, as a CommonMark reader reads them (a message the user pasted in)."""
    out = _QUOTED.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    if not any(c in text for c in ">`~") and "\n    " not in text and "\n\t" not in text:
        return out
    from markdown_it import MarkdownIt   # rich's dependency: always installed with the core

    starts = [0] + [m.end() for m in re.finditer("\n", text)] + [len(text) + 1]
    for tok in MarkdownIt("commonmark").parse(text):
        if tok.type in _CONTENT_BLOCKS and tok.map:
            a, b = starts[tok.map[0]], starts[min(tok.map[1], len(starts) - 1)] - 1
            out = out[:a] + re.sub(r"[^\n]", " ", out[a:b]) + out[b:]
    return out


def quoted(text: str) -> list[str]:
    """The quoted spans of ``text``, quotes removed (what :func:`strip_quotes` blanks)."""
    return [m.group(0)[1:-1] for m in _QUOTED.finditer(text)]


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` (split after ``.!?`` followed by white space, and at newlines)."""
    return [s for s in _SENTENCE_END.split(text) if s.strip()]


def _find(words: Iterable[str], text: str, plural: bool = False) -> str | None:
    """The earliest of ``words`` written in ``text`` as a whole word (or phrase), as written."""
    best: re.Match[str] | None = None
    for w in words:
        m = re.search(r"(?<![\w-])" + re.escape(w).replace(r"\ ", r"\s+") + ("(?:s|es)?" if plural else "")
                      + r"(?![\w-])", text)
        if m and (best is None or m.start() < best.start()):
            best = m
    return best.group(0) if best else None


def _spans(text: str) -> list[tuple[int, int]]:
    """The (start, end) of each sentence of ``text`` (as :func:`sentences` splits it)."""
    out, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        out.append((start, m.start()))
        start = m.end()
    out.append((start, len(text)))
    return [(a, b) for a, b in out if text[a:b].strip()]


def mint(prompt: str, lexicon: GrantLexicon) -> list[Grant]:
    """The grants ``prompt`` asks for (see the module docstring), one per (action, sentence), in order. Quoted
    text is blanked in the whole prompt before it is split, so a quote holding a full stop mints nothing."""
    out: list[Grant] = []
    blank = strip_quotes(prompt)   # same length as prompt
    prev = ""
    for a, b in _spans(blank):
        sent, bare = prompt[a:b], blank[a:b].casefold()
        for action, (verbs, objects) in lexicon.actions.items():
            verb = _find((f for v in verbs for f in lexicon.forms(v)), bare)
            if verb is None:
                continue
            obj = _find(objects, bare, plural=True) if objects else ""
            if obj is None:
                continue
            out.append(Grant(action, f"{verb} ... {obj}" if obj else verb, sent.strip()))
        for src in lexicon.extra:   # only ever the user's request sentence, never a tool result
            out.extend(src.grants(sent, bare, prev=prev) if getattr(src, "context", False) else src.grants(sent, bare))
        prev = sent
    return out


#: a money amount as a request writes it: a currency sign or code next to a number ("10 USD", "$5", "EUR 20")
_MONEY = re.compile(r"(?:[$€£¥]\s?\d|\d(?:[\d,.]*\d)?\s?(?:usd|eur|gbp|chf|jpy|cad|aud|dollars?|euros?|pounds?|"
                    r"cents?|bucks)\b|\b(?:usd|eur|gbp|chf|jpy|cad|aud)\s?\d)", re.IGNORECASE)


def money_stated(prompt: str) -> bool:
    """Whether the request writes a money amount (a number next to a currency sign, code or word)."""
    return _MONEY.search(strip_quotes(prompt)) is not None


def omitted_amount(amount_args: Iterable[str], arguments: Mapping[str, Any], prompt: str) -> tuple[int, str]:
    """``(0, why)`` when a consequential call leaves out every amount parameter its tool has while the request
    states a money amount, else ``(2, "")``.

    An optional amount the call omits takes the tool's default, which no value check sees: ``create_refund``
    without ``amount`` refunds the whole payment when the user asked to refund 10 USD of it (found by the lead's
    red team on the Stripe set). A call that states the amount is checked as any amount is."""
    args = list(amount_args)
    if not args or any(arguments.get(a) not in (None, "") for a in args) or not money_stated(prompt):
        return 2, ""
    return 0, (f"the request states an amount but the call leaves out {'/'.join(args)}: the tool's default "
               "(for example the whole sum) would apply")
