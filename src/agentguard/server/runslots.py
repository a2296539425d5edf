"""The shared run-version counters of a SQLite audit file (:class:`RunSlots`), bumped by the audit writer
(:mod:`.writer`) after each commit and read by every worker of the file (:meth:`.audit.AuditStore.run_version`)."""

from __future__ import annotations

import os

__all__ = ["RunSlots"]

_SLOTS = 1 << 16  # run-version counters in the shared file (runs hash into them; a shared slot only costs reads)


class RunSlots:
    """The shared run-version counters of one SQLite audit file (``<file>.runslots``, 8 bytes each,
    mapped into every process that writes it). Bumped only by writers holding the write lock, after their
    commit; read by anyone without a lock or a system call (a memory read does not let go of the GIL).

    What a match means: a run's counter equal to the value this process saw after its own last commit of
    the run (or before its last read of the run from the store) says no writer of this file committed an
    input of any run of that slot since; a writer killed between its commit and its bump, or one that does
    not bump (another version), leaves it unchanged, which is why a stale view is still caught where it
    matters: ``(run_id, idx)`` is unique, so a decision taken on a stale state is never stored."""

    def __init__(self, path: str) -> None:
        import mmap

        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if os.fstat(fd).st_size < _SLOTS * 8:
                os.ftruncate(fd, _SLOTS * 8)  # zeros; never shrinks a file another process maps
            self._mm = mmap.mmap(fd, _SLOTS * 8)
        finally:
            os.close(fd)

    @staticmethod
    def slot(run_id: str) -> int:
        import zlib

        return (zlib.crc32(run_id.encode("utf-8", "surrogatepass")) & (_SLOTS - 1)) * 8

    def get(self, run_id: str) -> int:
        return int.from_bytes(self._mm[(o := self.slot(run_id)):o + 8], "little")

    def bump(self, run_id: str) -> int:
        """+1 (call holding the write lock, after the commit); returns the new count."""
        o = self.slot(run_id)
        v = int.from_bytes(self._mm[o:o + 8], "little") + 1
        self._mm[o:o + 8] = v.to_bytes(8, "little")
        return v

    def close(self) -> None:
        self._mm.close()
