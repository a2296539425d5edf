"""Bounded windows of a long text for the secret scanner (:mod:`agentguard.policies.secrets`), so that a scan's cost
is linear in the text's length (session 22).

The scanner's readings of one string (decodings, views, each read again up to three layers deep) cost a multiple of
the string's length, and how many readings a string has grows with what it holds (one ``\\u00e9`` makes the whole text
a decoding; a non-ASCII character, a homoglyph view of each; ...): a 100 KB benign text took tens of seconds, and a
guard that does not finish in time refuses. A text longer than :data:`WINDOW` is therefore read as overlapping windows
of about :data:`WINDOW` characters, each read as a string of its own (with its own budget), so the cost per
character is bounded whatever the length.

**Guaranteed** (:func:`windows`): the windows cover the text; every window starts and ends at a *safe cut* (the
text's start or end, a blank next to a character outside the key alphabet ``[A-Za-z0-9+/=_-]``, or the place between
two such characters that are not blanks: ``","`` of minified JSON), so a stretch with no safe cut inside (a run of the
key alphabet however long: a base64 or hex blob; or such runs separated by blanks only: base64 wrapped into lines, a
key written in groups, spelled-out words) is always read whole in one window; and two consecutive windows overlap by at least :data:`OVERLAP` characters (a window after a stretch without a
safe cut reaches ``OVERLAP`` past the cut the next one starts at), so every stretch of at most ``OVERLAP`` characters
is read whole in some window. What
the scanner reads only across a whole text is read on the whole text: a JSON text is parsed whole
(:meth:`~agentguard.policies.secrets.LeakScanner.scan_text`).
"""

from __future__ import annotations

import bisect
import re

__all__ = ["OVERLAP", "WINDOW", "chunks", "windows"]

#: texts up to this many characters are read whole; longer ones in windows of about this many
WINDOW = 8192
#: the least overlap of two consecutive windows (a key, its encodings and spellings are far shorter)
OVERLAP = 1024
_K = r"[^A-Za-z0-9+/=_\-\s]"   # a character outside the key alphabet, not a blank
_SAFE = re.compile(rf"(?<={_K})\s|\s(?={_K})|(?<={_K})(?={_K})")


def windows(text: str, size: int = WINDOW, overlap: int = OVERLAP) -> list[tuple[int, int]]:
    """``[(start, end), ...]``: the windows of ``text`` (see the module doc); one window when it is no longer than
    ``size``. Linear in ``len(text)``."""
    if len(text) <= size:
        return [(0, len(text))]
    cuts = [m.start() for m in _SAFE.finditer(text)] + [len(text)]
    out: list[tuple[int, int]] = []
    start = 0
    while True:
        end = cuts[bisect.bisect_left(cuts, start + size)] if start + size < len(text) else len(text)
        if end >= len(text):
            out.append((start, len(text)))
            return out
        i = bisect.bisect_right(cuts, end - overlap) - 1   # the last safe cut OVERLAP before the end
        if i >= 0 and cuts[i] > start:
            nxt = cuts[i]
        else:   # no safe cut that far back (a stretch without one, read whole): the next window starts at the first
            nxt = cuts[bisect.bisect_right(cuts, start)]   # cut after it, and this one reaches OVERLAP past that
            far = nxt + overlap
            end = max(end, cuts[bisect.bisect_left(cuts, far)] if far < len(text) else len(text))
        out.append((start, end))
        if end >= len(text):
            return out
        start = nxt


def chunks(text: str, size: int = WINDOW, overlap: int = OVERLAP) -> list[tuple[int, int]]:
    """Windows of ``text`` cut anywhere, ``overlap`` apart: for a text the scanner joined from pieces that were each read
    whole (a call's string leaves, a URL's pieces), where only what crosses a junction is new, and that lies within
    ``overlap`` characters of it. Every stretch of at most ``overlap`` characters lies whole in one chunk."""
    if len(text) <= size:
        return [(0, len(text))]
    step = size - overlap
    return [(i, min(i + size, len(text))) for i in range(0, len(text) - overlap, step)]
