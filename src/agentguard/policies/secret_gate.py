"""Which detect-secrets plugins can match a text, found in one pass (session 22): the gate of the secret scanner
(:mod:`agentguard.policies.secrets`).

The scanner reads every string many ways (decodings, views), and each reading was searched with one regular
expression, the alternation of every format plugin's ``denylist``: an alternation of patterns has no literal
prefix for Python's regex engine to skip ahead by, so the search cost ~1.5 us a character, the largest single cost
of a scan. Here each denylist pattern is parsed (the ``re`` module's own parser) for a *required literal*: a set of
strings one of which every match contains (``ghp`` ... ``ghr`` of ``(ghp|gho|...)_``, ``AKC`` of
``(?:\\s|=|:|"|^)AKC[a-zA-Z0-9]{10,}``, ``aws`` case-folded of the case-insensitive AWS secret pattern). The literals
of all plugins are searched at once with an Aho-Corasick automaton (``pyahocorasick``, a maintained C library; the
same one :mod:`agentguard.policies.secret_fragments` uses), in the text and, for case-insensitive patterns, in its
case fold.

**Guaranteed**: :meth:`Gate.plugins` returns exactly the plugins with a denylist pattern that matches the text (what
searching the alternation answered): a pattern is searched wherever one of its literals occurs, and a pattern whose
literal does not occur cannot match (every match of it contains one of its literals, by construction from the parsed
pattern); a pattern without a literal of two characters or more (``[MNO][\\w-]{23,25}\\.``...) is searched on
every text. Without ``pyahocorasick`` the literals are
searched one by one (same answer, slower).
"""

from __future__ import annotations

import re
import threading
from operator import itemgetter
from typing import Any, Sequence

try:   # Python 3.11+: the parser is re._parser (sre_parse is its deprecated alias)
    from re import _parser as _sre  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    import sre_parse as _sre  # type: ignore[no-redef]

__all__ = ["Gate", "required_literals", "required_tail"]

_MIN_LITERAL = 2
#: how many texts' answers :meth:`Gate.plugins` keeps (a scan reads a window's ~25 readings; a window is 8 Ki)
_KEPT = 64
_KEPT_CHARS = 1 << 14   # longer texts (a decoding inflated) are not kept


def required_literals(pattern: str, flags: int = 0) -> set[str] | None:
    """A set of strings one of which every match of ``pattern`` contains (case-folded when the pattern ignores case),
    or None when no such set of strings of at least two characters is found."""
    try:
        parsed = _sre.parse(pattern, flags)
    except (re.error, RecursionError, OverflowError):
        return None
    fold = bool(parsed.state.flags & re.IGNORECASE)
    best = _seq(list(parsed.data))
    if not best or min(map(len, best)) < _MIN_LITERAL:
        return None
    return {s.casefold() for s in best} if fold else best


def required_tail(rx: re.Pattern[str]) -> re.Pattern[str] | None:
    """The pattern from its first top-level literal character on (``\\.[\\w-]{6}\\.[\\w-]{27}`` of Discord's
    ``[MNO][\\w-]{23,25}\\.[\\w-]{6}\\.[\\w-]{27}``, ``:[0-9A-Za-z_-]{35}`` of Telegram's ``\\d{8,10}:...``), or
    None. Every match of ``rx`` holds a match of it (the items after the literal match where they matched), and Python's
    engine skips ahead to a pattern's leading literal, where it tries a class at every character (session 23: the two
    patterns without a literal of two characters were searched on every reading, a class tried at every character). The
    tail is the pattern's own source from that character, kept only when it parses to the same items (no group or
    backreference renumbered, no flag lost)."""
    try:
        items = list(_sre.parse(rx.pattern, rx.flags).data)
    except (re.error, RecursionError, OverflowError):
        return None
    first = next((i for i, (op, _) in enumerate(items) if op is _sre.LITERAL and i > 0), None)
    if first is None or rx.groups:
        return None
    want = repr(items[first:])
    for j in range(1, len(rx.pattern)):
        try:
            if repr(list(_sre.parse(rx.pattern[j:], rx.flags).data)) == want:
                return re.compile(rx.pattern[j:], rx.flags)
        except (re.error, RecursionError, OverflowError):
            continue
    return None


def _score(s: set[str] | None) -> tuple[int, int]:
    return (min(map(len, s)), -len(s)) if s else (-1, 0)


def _seq(items: list[Any]) -> set[str] | None:
    """The best required set of a sequence of parsed items: a run of literals, or one item's own set."""
    best: set[str] | None = None
    run: list[str] = []
    for op, av in items + [(None, None)]:
        if op is _sre.LITERAL:
            run.append(chr(av))
            continue
        if run:
            cand = {"".join(run)}
            best = cand if _score(cand) > _score(best) else best
            run = []
        sub = _item(op, av)
        if sub is not None and _score(sub) > _score(best):
            best = sub
    return best


def _item(op: Any, av: Any) -> set[str] | None:
    if op is _sre.SUBPATTERN:
        if av[1] & re.IGNORECASE or av[2] & re.IGNORECASE:   # an inline flag changes case: not handled
            return None
        return _seq(list(av[-1].data))
    if op is _sre.BRANCH:
        alts = [_seq(list(b.data)) for b in av[1]]
        if any(not a for a in alts):
            return None
        return set().union(*alts)  # type: ignore[arg-type]
    if op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT) and av[0] >= 1:
        return _seq(list(av[2].data))
    return None


class Gate:
    """The plugins of ``plugins`` (each with a ``denylist`` of compiled patterns) whose patterns match a text: a
    pattern is searched only where its required literal occurs (or always, when it has none), so the answer is the
    same as searching every pattern."""

    def __init__(self, plugins: Sequence[Any]) -> None:
        self.plugins_all = list(plugins)
        self._patterns: list[tuple[int, re.Pattern[str]]] = []
        self._searched: list[int] = []   # patterns without a literal: searched on every text
        self._tails: dict[int, re.Pattern[str] | None] = {}   # ... after their tail (required_tail) is found
        self._exact: dict[str, set[int]] = {}
        self._folded: dict[str, set[int]] = {}
        for i, p in enumerate(self.plugins_all):
            for rx in p.denylist:
                k = len(self._patterns)
                self._patterns.append((i, rx))
                lits = required_literals(rx.pattern, rx.flags)
                if lits is None:
                    self._searched.append(k)
                    self._tails[k] = required_tail(rx)
                    continue
                table = self._folded if rx.flags & re.IGNORECASE else self._exact
                for s in lits:
                    table.setdefault(s, set()).add(k)
        self._auto = [self._automaton(t) for t in (self._exact, self._folded)]
        self._kept: dict[str, tuple[Any, ...]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _automaton(table: dict[str, set[int]]) -> Any | None:
        if not table:
            return None
        try:
            import ahocorasick
        except ImportError:
            return None
        a = ahocorasick.Automaton()
        for s in table:
            a.add_word(s, s)
        a.make_automaton()
        return a

    def _candidates(self, text: str) -> list[int]:
        """The patterns that may match ``text``: those whose literal occurs, and those without one, in order."""
        cand = {k for k in self._searched if (tail := self._tails[k]) is None or tail.search(text) is not None}
        for table, auto, folded in ((self._exact, self._auto[0], False), (self._folded, self._auto[1], True)):
            if not table:
                continue
            t = text.casefold() if folded else text
            found = set(map(itemgetter(1), auto.iter(t))) if auto is not None else {s for s in table if s in t}
            for s in found:
                cand |= table[s]
        return sorted(cand)

    def plugins(self, text: str) -> list[Any]:
        """The plugins with a pattern that matches ``text``, in their given order. The answers for the last
        :data:`_KEPT` texts are kept (session 23: a view is judged by :meth:`open` and then read, which asks again)."""
        kept = self._kept.get(text)
        if kept is not None:
            return list(kept)
        hit = {self._patterns[k][0] for k in self._candidates(text) if self._patterns[k][1].search(text)}
        found = tuple(self.plugins_all[i] for i in sorted(hit))
        if len(text) > _KEPT_CHARS:
            return list(found)
        with self._lock:
            if len(self._kept) >= _KEPT:
                self._kept.clear()
            self._kept[text] = found
        return list(found)

    def open(self, text: str) -> bool:
        """Whether a pattern of any plugin matches ``text`` (:meth:`plugins` is not empty)."""
        return bool(self.plugins(text))
