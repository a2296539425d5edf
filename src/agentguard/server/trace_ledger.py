"""Who holds which trace slot and how many bytes each identity's traces cost: the trace store's ledger.

Two ledgers, one interface (:class:`TraceStore <.traces.TraceStore>` uses either):

- :class:`DbLedger` (what the service uses, session 23): the audit database's tables ``trace_claims`` (one row per
  claimed slot, its key unique) and ``trace_quota`` (one row per identity: the bytes its kept batches cost). Every
  replica of a deployment shares its database, so a slot is claimed once and an identity's quota is spent once
  across all of them. Before, both lived in each replica's state folder (files under ``traces/.runs`` and
  ``traces/.quota``): two replicas on one PostgreSQL each allowed an identity the whole quota, and each took the
  same run id once.
- :class:`FileLedger`: the same in files under the trace folder (``O_EXCL`` markers, ``flock``-ed counters), for a
  store used without a database (the library, ``agentguard learn`` on a folder); it holds across processes of one
  host only.

Guaranteed by both: a slot key is claimed at most once (the unique key; the ``O_EXCL`` create); ``charge`` adds a
batch's cost to an identity's count only when the sum stays within the quota, atomically (one conditional
``UPDATE ... WHERE used + cost <= quota``, which PostgreSQL re-checks on the row it waited for and SQLite runs
under its write lock; a ``flock`` for files), so concurrent batches of one identity on any replicas never exceed
it. The count only grows (freeing space is the operator's: delete the identity's row).

No library: SQLAlchemy Core (the audit store's own) is all this needs.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import time
from pathlib import Path
from typing import Any, Callable, Sequence

__all__ = ["DbLedger", "FileLedger", "Ledger", "identity_key"]

FULL = 2**62  # what a damaged count reads as (fail closed)


def identity_key(identity: str | None) -> str:
    """An identity's key in a ledger (32 hex digits of its SHA-256; ``None`` and ``""`` are one key)."""
    return hashlib.sha256((identity or "").encode("utf-8", "surrogatepass")).hexdigest()[:32]


class Ledger:
    """The interface (see the module docstring)."""

    def claim(self, keys: Sequence[str], optional: Sequence[str], identity: str | None) -> list[bool] | int:
        """Claim every key of ``keys`` and, of ``optional``, those still free, all or nothing: the index of the
        first of ``keys`` already claimed (nothing claimed then), else for each optional key whether it was got."""
        raise NotImplementedError

    def release(self, keys: Sequence[str]) -> None:
        """Free keys this process claimed (its batch was not kept)."""
        raise NotImplementedError

    def used(self, identity: str | None) -> int:
        raise NotImplementedError

    def charge(self, identity: str | None, cost: int, quota: int, keep: Callable[[], None]) -> bool:
        """Add ``cost`` to ``identity``'s count if it stays within ``quota`` and then call ``keep`` (makes the batch
        visible); False (nothing added, ``keep`` not called) when it would not fit."""
        raise NotImplementedError


class FileLedger(Ledger):
    """Markers (``<dir>/.runs/<key>``) and counts (``<dir>/.quota/<identity key>``) in files: one host only."""

    def __init__(self, directory: Path) -> None:
        self.claims = directory / ".runs"
        self.quota = directory / ".quota"

    def claim(self, keys: Sequence[str], optional: Sequence[str], identity: str | None) -> list[bool] | int:
        self.claims.mkdir(exist_ok=True)
        got: list[str] = []
        for i, k in enumerate(keys):
            try:
                os.close(os.open(self.claims / k, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            except FileExistsError:
                self.release(got)
                return i
            got.append(k)
        out = []
        for k in optional:
            try:
                os.close(os.open(self.claims / k, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
                out.append(True)
            except FileExistsError:
                out.append(False)
        return out

    def release(self, keys: Sequence[str]) -> None:
        for k in keys:
            (self.claims / k).unlink(missing_ok=True)

    @staticmethod
    def _read(fd: int) -> int:
        raw = os.pread(fd, 64, 0).strip()
        try:
            n = int(raw or b"0")
        except ValueError:  # a damaged count counts as full (fail closed)
            return FULL
        return n if n >= 0 else FULL

    def _path(self, identity: str | None) -> Path:
        self.quota.mkdir(exist_ok=True)
        return self.quota / identity_key(identity)

    def used(self, identity: str | None) -> int:
        try:
            fd = os.open(self._path(identity), os.O_RDONLY)
        except FileNotFoundError:
            return 0
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            return self._read(fd)
        finally:
            os.close(fd)

    def charge(self, identity: str | None, cost: int, quota: int, keep: Callable[[], None]) -> bool:
        fd = os.open(self._path(identity), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            used = self._read(fd)
            if used + cost > quota:
                return False
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(used + cost).encode(), 0)
            os.fsync(fd)
            keep()  # under the lock: visible only once charged (an error here leaves it charged: fail closed)
            return True
        finally:
            os.close(fd)


class DbLedger(Ledger):
    """The ledger in the audit database (``trace_claims``, ``trace_quota``; migration 0010): shared by replicas."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine  # a SQLAlchemy Engine (imported lazily: the library's file stores need none)

    def _insert(self, table: Any) -> Any:
        """The dialect's INSERT (both take ``on_conflict_do_nothing`` and ``returning``)."""
        from sqlalchemy.dialects import postgresql, sqlite

        return (postgresql if self.engine.dialect.name == "postgresql" else sqlite).insert(table)

    def _put(self, c: Any, keys: Sequence[str], who: str) -> set[str]:
        """Insert the free keys of ``keys`` (one ``INSERT ... ON CONFLICT DO NOTHING RETURNING`` per 1,000 keys:
        a key another transaction is inserting waits for it); the keys inserted."""
        from . import schema

        t, now, got = schema.trace_claims, time.time(), set()
        for i in range(0, len(keys), 1000):
            rows = [{"key": k, "identity_key": who, "ts": now} for k in keys[i:i + 1000]]
            got |= {r[0] for r in c.execute(self._insert(t).values(rows).on_conflict_do_nothing(
                index_elements=["key"]).returning(t.c.key))}
        return got

    def claim(self, keys: Sequence[str], optional: Sequence[str], identity: str | None) -> list[bool] | int:
        who = identity_key(identity)
        with self.engine.connect() as c:
            tx = c.begin()
            try:
                got = self._put(c, keys, who) if keys else set()
                if len(got) != len(set(keys)):
                    tx.rollback()
                    return next(i for i, k in enumerate(keys) if k not in got)
                extra = self._put(c, optional, who) if optional else set()
                tx.commit()
            except BaseException:
                if tx.is_active:
                    tx.rollback()
                raise
        return [k in extra for k in optional]

    def release(self, keys: Sequence[str]) -> None:
        import sqlalchemy as sa

        from . import schema

        if keys:
            with self.engine.begin() as c:
                c.execute(sa.delete(schema.trace_claims).where(schema.trace_claims.c.key.in_(list(keys))))

    def used(self, identity: str | None) -> int:
        import sqlalchemy as sa

        from . import schema

        q = schema.trace_quota
        with self.engine.connect() as c:
            n = c.execute(sa.select(q.c.used).where(q.c.identity_key == identity_key(identity))).scalar()
        return 0 if n is None else (int(n) if n >= 0 else FULL)

    def charge(self, identity: str | None, cost: int, quota: int, keep: Callable[[], None]) -> bool:
        import sqlalchemy as sa

        from . import schema

        q, who = schema.trace_quota, identity_key(identity)
        with self.engine.begin() as c:
            c.execute(self._insert(q).values(identity_key=who, used=0).on_conflict_do_nothing(
                index_elements=["identity_key"]))
            r = c.execute(sa.update(q).where(q.c.identity_key == who, q.c.used >= 0, q.c.used + cost <= quota)
                          .values(used=q.c.used + cost))
            if r.rowcount != 1:
                return False
        keep()  # after the commit: an error here leaves the batch charged and invisible (fail closed)
        return True
