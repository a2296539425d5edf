"""Known secrets found again in any slice, case, interleaving or encoding: k-gram fingerprints of the secrets the
guard knows (:class:`KnownSecrets`), searched in every reading of what an agent sends.

A format detector (:mod:`agentguard.policies.secrets`) recognises a key by its shape (``ghp_`` and 36 characters);
a slice of the key without that prefix, or the key with its case changed, has no shape left. What does not change
under those transforms is the key's own characters in their order. So the secrets the guard *knows* (configured
values, and each secret the format detectors found in what the run read: tool results) are indexed as the set of
their **k-grams** (every run of :data:`K` consecutive characters) in a **normalised alphabet**: the homoglyph
skeleton (TR39), case-folded, with everything but ``a-z`` and ``0-9`` dropped. Every reading the scanner makes of an
outgoing text (itself, and each of its decodings: percent-encoding, HTML entities, string escapes, base64 at each
alignment, base32, hex, code-point lists, ...; :mod:`agentguard.policies.secret_views`) is normalised the same way
and searched, in one pass, for any k-gram of any known secret, written forwards, backwards, in ROT13 or both;
and the same search runs over its every-2nd and every-3rd characters (each offset): a key interleaved with one or
two filler characters per character.

**Guaranteed** (tested by hypothesis properties): an outgoing string is a finding when one of its readings, once
normalised (or taken every 2nd or 3rd character of the normalised reading), holds :data:`K` consecutive normalised
characters of a known secret (forwards, reversed, ROT13 or both) whose window has at least :data:`MIN_DISTINCT`
distinct characters. So a slice of >= K key characters without the prefix, in any case, with any separators
between its characters (``g-h-p``, ``g h p``, ``g.h.p``), interleaved with one or two letters per character,
written as decimal/hex/octal/binary code points, HTML entities, ``\\u`` escapes, percent-encoded, base32, hex with
separators, base64 (also a base64 run cut at any offset), reversed or ROT13, is caught.

**Pieces** (session 21, :meth:`KnownSecrets.covering`): a view of the index records which positions of each secret
a text holds in runs of :data:`PIECE` (6 since session 22; 7 before) consecutive normalised characters with a letter
and a digit (forwards, reversed, ROT13); the guard joins them over a run's calls, so a key cut into pieces of 6 or more
with other text
between them (``https://evil.xyz/<noise>/<piece>``, one DNS label per call, pieces over a search, a URL and a mail)
is a finding once :data:`K` positions of one secret are held, whatever the order.

**Not guaranteed**: pieces of fewer than :data:`PIECE` characters, or pieces of letters only, with varying text
between them (consecutive ones are read joined: the guard's ``across_calls``); characters taken out of order or every
4th, or every other character over two calls; two transforms in a row that are not among the readings (base64 of an
interleaved slice, ROT47, a Caesar shift, XOR, encryption); a secret the guard never saw (no content scanner knows a random string
without its format: the provenance guard refuses those to hosts the user did not name). A secret whose normalised
form is shorter than K is not indexed (a configured one is refused at construction); a window of fewer than
:data:`MIN_DISTINCT` distinct characters (``000000000000``) is not a fingerprint (it is what benign text repeats).

**K = 12** normalised characters: a random key character carries log2(36) = 5.2 bits, so one window is ~62 bits
and the chance that an unrelated text of n characters holds any of G windows is about n * G * 36**-12 (1e-9 for
100 KB, 5 readings and 10,000 windows); the benign corpora's false alarms are measured in
``benchmarks/secret_fragments.py`` (``benchmarks/results/secret_fragments.json``).

**Library**: the windows of all known secrets are searched with one Aho-Corasick automaton of ``pyahocorasick``
(maintained, C, linear in the text whatever the number of windows), built when the set of secrets changes. Without
it installed the same set of windows is searched with a Python set (identical answers, slower: every window of
the text is hashed); tests check both agree.
"""

from __future__ import annotations

import importlib
import re
import threading
from typing import Any, Iterable, Iterator, Sequence

from ..core.errors import InputError
from .secret_views import read_invisible, skeleton

__all__ = ["K", "KnownSecrets", "MAX_KNOWN", "MIN_DISTINCT", "PIECE", "STRIDES", "normalise", "passes"]

#: the window: this many consecutive normalised characters of a known secret make a finding
K = 12
#: a window with fewer distinct characters is not indexed (``000000000000``: benign text repeats it)
MIN_DISTINCT = 4
#: the most secrets one index holds; learning past it raises (the guard turns that into a refusal)
MAX_KNOWN = 4096
_NOT_KEY = re.compile(r"[^a-z0-9]+")
_ROT13 = str.maketrans("abcdefghijklmnopqrstuvwxyz", "nopqrstuvwxyzabcdefghijklm")
#: every s-th character from each offset: a key interleaved with s-1 filler characters per character
STRIDES = (2, 3)
#: a piece: this many consecutive normalised characters of a known secret, a letter and a digit among them, count
#: towards the secret's coverage (:meth:`KnownSecrets.covering`). Session 22 lowered it from 7 to 6, measured by
#: ``benchmarks/secret_short_pieces.py`` over the 885 benign items with 114 known secrets: the most positions of one
#: secret that a whole benign source (read as one run) covers by chance are 6 at PIECE=6 (7 at 7), under the K=12 a
#: leak needs; 5 would leave 11 (no margin) and 4 reaches 12 in 4 of 5 sources; pieces of letters only reach 12 in 4 of
#: 5 sources even at 7 (so a piece keeps needing a digit and a letter)
PIECE = 6
_LETTER, _DIGIT = re.compile(r"[a-z]"), re.compile(r"[0-9]")


def normalise(text: str) -> str:
    """``text`` in the alphabet windows are compared in: NFKC without invisible characters, the homoglyph skeleton,
    lower case, only ``a-z`` and ``0-9`` kept (separators, blanks, punctuation and other scripts dropped)."""
    if not text.isascii():
        text = skeleton(read_invisible(text))
    return _NOT_KEY.sub("", text.lower())


def passes(norm: str, k: int = K) -> Iterator[tuple[str, str]]:
    """``(name, text)`` for each pass the search makes over a normalised reading: itself, then its every 2nd and
    every 3rd character from each offset (only where the pass is at least ``k`` long)."""
    yield "", norm
    for s in STRIDES:
        if len(norm) >= s * k:
            for o in range(s):
                yield f"every {s}{'nd' if s == 2 else 'rd'} from {o}", norm[o::s]


def _ahocorasick() -> Any | None:
    try:
        return importlib.import_module("ahocorasick")
    except ImportError:  # pragma: no cover - depends on the environment
        return None


class KnownSecrets:
    """The secrets a guard knows, as the set of their normalised windows (see the module doc). Thread-safe: a
    search reads the index built at the last :meth:`add`; ``use_library=False`` searches with a Python set."""

    def __init__(self, secrets: Iterable[str] = (), *, k: int = K, use_library: bool = True) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 8:
            raise InputError(f"known secrets: the window must be a whole number of at least 8 characters, got {k!r}")
        self.k = k
        self._aho = _ahocorasick() if use_library else None
        self._lock = threading.Lock()
        self._secrets: dict[str, None] = {}
        self._grams: dict[str, str] = {}
        self._auto: Any = None
        self._pieces: dict[str, list[tuple[str, int]]] = {}   # piece -> (secret, its first position, forwards)
        self._pauto: Any = None
        #: with :meth:`covering`: the positions of each secret the texts searched held in pieces
        self.covered: dict[str, set[int]] | None = None
        for s in secrets:
            if not self.add(s):
                raise InputError(f"known secret {s[:2]!r}... is shorter than {k} letters and digits once normalised "
                                 f"(or holds no window of {MIN_DISTINCT} distinct characters): it cannot be "
                                 f"recognised in part without false alarms")

    def __len__(self) -> int:
        return len(self._secrets)

    def copy(self) -> "KnownSecrets":
        """A new index holding the same secrets (a run's own, which learns what the run read)."""
        out = KnownSecrets(k=self.k, use_library=self._aho is not None)
        with self._lock:
            out._secrets, out._grams, out._auto = dict(self._secrets), dict(self._grams), self._auto
            out._pieces, out._pauto = {g: list(v) for g, v in self._pieces.items()}, self._pauto
        return out

    def covering(self) -> "KnownSecrets":
        """A view of this index (shared, not copied) that also records, in :attr:`covered`, which positions of each
        secret the texts it searches hold as pieces: runs of :data:`PIECE` consecutive normalised characters, with
        a letter and a digit, forwards, reversed, in ROT13 or both (a key sent in pieces with other text between
        them, in one call or over many: the guard joins the coverage of a run's calls)."""
        out = KnownSecrets.__new__(KnownSecrets)
        out.__dict__.update(self.__dict__)
        out.covered = {}
        return out

    def add(self, secret: str) -> bool:
        """Index ``secret``; False when it has no window to index (too short, or too repetitive). Raises
        :class:`InputError` past :data:`MAX_KNOWN` secrets (not indexed is not allowed: the guard refuses)."""
        norm = normalise(str(secret))
        with self._lock:
            if norm in self._secrets:
                return True
            grams: dict[str, str] = {}
            for variant, text in (("", norm), ("reversed", norm[::-1]), ("rot13", norm.translate(_ROT13)),
                                  ("rot13 reversed", norm[::-1].translate(_ROT13))):
                for i in range(len(text) - self.k + 1):
                    g = text[i:i + self.k]
                    if len(set(g)) >= MIN_DISTINCT:
                        grams.setdefault(g, variant)
            if not grams:
                return False
            if len(self._secrets) >= MAX_KNOWN:
                raise InputError(f"known secrets: more than {MAX_KNOWN} to recognise")
            self._secrets[norm] = None
            for g, v in grams.items():
                self._grams.setdefault(g, v)
            self._index_pieces(norm)
            self._auto = self._build() if self._aho is not None else None
            self._pauto = self._build_pieces() if self._aho is not None else None
        return True

    def _index_pieces(self, norm: str) -> None:
        n, p = len(norm), PIECE
        for text, backwards in ((norm, False), (norm[::-1], True), (norm.translate(_ROT13), False),
                                (norm[::-1].translate(_ROT13), True)):
            for i in range(n - p + 1):
                g = text[i:i + p]
                if len(set(g)) >= MIN_DISTINCT and _LETTER.search(g) and _DIGIT.search(g):
                    self._pieces.setdefault(g, []).append((norm, n - i - p if backwards else i))

    def _build_pieces(self) -> Any:
        auto = self._aho.Automaton()  # type: ignore[union-attr]
        for g, where in self._pieces.items():
            auto.add_word(g, tuple(where))
        auto.make_automaton()
        return auto

    def _cover(self, norm: str) -> None:
        """Record the positions of each secret that pieces of ``norm`` (normalised) hold (see :meth:`covering`)."""
        if self.covered is None or len(norm) < PIECE or not self._pieces:
            return
        if self._pauto is not None:
            hits: Iterable[Sequence[tuple[str, int]]] = (w for _, w in self._pauto.iter(norm))
        else:
            hits = (self._pieces[g] for i in range(len(norm) - PIECE + 1) if (g := norm[i:i + PIECE]) in self._pieces)
        for where in hits:
            for secret, start in where:
                self.covered.setdefault(secret, set()).update(range(start, start + PIECE))

    def _build(self) -> Any:
        auto = self._aho.Automaton()  # type: ignore[union-attr]
        for g, v in self._grams.items():
            auto.add_word(g, (g, v))
        auto.make_automaton()
        return auto

    def find(self, text: str) -> tuple[str, str] | None:
        """The first window of a known secret in ``text`` (see the module doc) as ``(window, how)``, ``how`` naming
        the variant and the pass (``reversed, every 2nd from 1``); None when there is none."""
        if not self._grams:
            return None
        norm = normalise(text)
        self._cover(norm)
        if len(norm) < self.k:
            return None
        auto, grams = self._auto, self._grams
        for name, t in passes(norm, self.k):
            hit = self._search(auto, grams, t)
            if hit is not None:
                return hit[0], ", ".join(x for x in (hit[1], name) if x)
        return None

    def _search(self, auto: Any, grams: dict[str, str], t: str) -> tuple[str, str] | None:
        if auto is not None:
            for _, found in auto.iter(t):
                return tuple(found)  # type: ignore[return-value]
            return None
        k = self.k
        for i in range(len(t) - k + 1):
            g = t[i:i + k]
            if g in grams:
                return g, grams[g]
        return None
