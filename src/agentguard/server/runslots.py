"""The shared run slots of a SQLite audit file (:class:`RunSlots`), written by the audit writer (:mod:`.writer`)
after each commit and read by every worker of the file (:meth:`.audit.AuditStore.run_slot`).

A slot says, for the run that last wrote it, what a worker holding that run needs to know to catch up
without reading the store: how many inputs the run has stored, when the last one was, whether the
enforcement state after it is the initial one, and the stored count after the run's last input of each
guard kind (a worker whose guards of a kind keep no per-run memory needs no replay of that kind)."""

from __future__ import annotations

import functools
import hashlib
import os
import struct
from typing import NamedTuple

__all__ = ["KIND_MARKS", "RunSlots", "SlotView"]

_SLOTS = 1 << 16  # runs hash into them; a run sharing its slot with another only costs reads of the store
_SIZE = 64
#: ``seq, key, n, last, mark[step], mark[check], mark[signal], flags``
_LAYOUT = struct.Struct("<QQQdQQQQ")
_WORD = struct.Struct("<Q")
#: the kinds whose last stored input a slot marks (an input of another kind never needs a replay)
KIND_MARKS = ("step", "check", "signal")
_TRIVIAL = 1  # the enforcement state after the run's last input is the initial one (no latched HALT, ...)
_VALID = 2  # the marks cover the run's every input (the slot saw them all in order)


class SlotView(NamedTuple):
    """What a slot says of one run (:meth:`RunSlots.view`): ``n`` inputs stored, the last at ``last``; the
    stored count after its last input of each kind of :data:`KIND_MARKS` (``marks``); ``trivial`` when
    the enforcement state after the last input is the initial one."""

    n: int
    last: float
    marks: tuple[int, int, int]
    trivial: bool


class RunSlots:
    """The shared run slots of one SQLite audit file (``<file>.runstate``, 64 bytes each, mapped into every
    process that writes it). Written only by writers holding the write lock, after their commit; read by
    anyone without a lock or a system call (a memory read does not let go of the GIL).

    Each slot is a seqlock: its first word is odd while a writer rewrites the slot and moves on by 2 per
    write, so a reader that finds it odd, or changed across its read, knows it saw no consistent slot.
    :meth:`view` gives the run's version (the slot's word: unchanged since a value this process saw, no
    writer of this file committed an input of any run of that slot since) and the slot's content when it is
    this run's (a 64-bit hash of the run id) and complete.

    What a match cannot say: a writer killed between its commit and its slot write, or one that does not
    write slots (another version), leaves the slot as it was, which is why a stale view is still caught
    where it matters: ``(run_id, idx)`` is unique, so a decision taken on a stale state is never stored."""

    def __init__(self, path: str) -> None:
        import mmap

        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if os.fstat(fd).st_size < _SLOTS * _SIZE:
                os.ftruncate(fd, _SLOTS * _SIZE)  # zeros; never shrinks a file another process maps
            self._mm = mmap.mmap(fd, _SLOTS * _SIZE)
        finally:
            os.close(fd)

    @staticmethod
    @functools.lru_cache(maxsize=4096)  # the writer and the readers look up the same runs again and again
    def key(run_id: str) -> tuple[int, int]:
        """(slot offset, 64-bit key) of ``run_id``."""
        h = int.from_bytes(hashlib.blake2b(run_id.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
                           "little")
        return (h & (_SLOTS - 1)) * _SIZE, h

    def view(self, run_id: str) -> tuple[int, SlotView | None]:
        """(version, what the slot says of this run). The view is None when the slot is another run's (the
        version still says whether anyone wrote the slot since) or was being written (then the version is
        odd: it equals no version a write returned)."""
        o, k = self.key(run_id)
        seq, key, n, last, m0, m1, m2, flags = _LAYOUT.unpack(self._mm[o:o + _SIZE])
        if seq & 1 or int.from_bytes(self._mm[o:o + 8], "little") != seq:
            return seq | 1, None
        if key != k or not flags & _VALID:
            return seq, None
        return seq, SlotView(n, last, (m0, m1, m2), bool(flags & _TRIVIAL))

    def write(self, run_id: str, idx: int, kind: str, ts: float, trivial: bool) -> int:
        """The run stored its input ``idx`` of ``kind`` at ``ts`` (call holding the write lock, after the
        commit, in input order); returns the run's new version. The marks carry over only from a slot that
        was this run's with every input before ``idx``; otherwise every kind is marked at ``idx + 1`` (a
        reader behind it reads the store)."""
        o, k = self.key(run_id)
        mm = self._mm
        seq, key, n, _last, m0, m1, m2, flags = _LAYOUT.unpack_from(mm, o)
        seq += seq & 1  # a writer killed inside left it odd: the next write starts even again
        marks = [m0, m1, m2] if key == k and flags & _VALID and n == idx else [idx + 1] * 3
        if kind in KIND_MARKS:
            marks[KIND_MARKS.index(kind)] = idx + 1
        _WORD.pack_into(mm, o, seq + 1)
        _LAYOUT.pack_into(mm, o, seq + 1, k, idx + 1, float(ts), *marks, _VALID | (_TRIVIAL if trivial else 0))
        _WORD.pack_into(mm, o, seq + 2)
        return seq + 2

    def close(self) -> None:
        self._mm.close()
