"""The audit store's group-commit writer thread (and SQLite's background WAL checkpointer).

One writer per process takes every record waiting in its queue (up to ``max_batch``), inserts them in
one transaction, commits (one fsync for the whole batch) and only then wakes the requests whose records
were in it (:mod:`.audit` states the guarantee). Under load the batches grow: :mod:`.groupcommit`.

The hash chain (:mod:`.chain`) is linked here, in the writer thread, in one pass over the batch: each
decision row gets its ``seq``, ``chain_hash`` and ``run_hash`` inside the batch's transaction, under the
chain lock (PostgreSQL: an advisory transaction lock; SQLite: the kernel file lock every writer of the
file holds around its write). What it costs is what issue 28 bounds (at most 10% of ``/v1/check``
throughput), so the writer does not read the store per batch when it need not:

- the chain's tail ``(seq, chain_hash)`` and every run's head ``run_hash`` are kept in memory, as of the
  last batch this writer committed;
- on SQLite the write lock file also holds a stamp of the tail the last writer committed (any process,
  written after its commit, under the lock; read and written through a shared mapping of its first bytes): a writer whose own tail equals the stamp knows no other
  writer wrote since and reads nothing; otherwise it reads the tail and the records written since its
  own (one indexed query over ``seq``) and updates the heads of those runs; on PostgreSQL (no file to
  share) the tail is read each batch after taking the lock (one indexed row);
- a run this writer has not seen costs one lookup of its last record (batched per batch);
- on SQLite the writer keeps one connection of the engine's pool for its life and talks to the driver
  directly (``BEGIN IMMEDIATE``, its reads and multi-row inserts, ``COMMIT``): SQLAlchemy's statement
  building and connection bookkeeping cost more than the batch's own SQL; a failed batch rolls back and
  drops that connection (the next batch takes a fresh one), and a driver error is raised as SQLAlchemy's
  (an ``IntegrityError`` stays one);
- run slots (SQLite file only, :class:`RunSlots`): after each commit, still under the write lock, the
  writer writes the shared slot of every run the batch stored an input of (its version, stored count, last
  time, kinds, whether its enforcement state is the initial one) and hands each request the version after
  its own write; a process that holds a run and finds its version unchanged knows no process stored an
  input of it since, and one that finds only inputs its guards keep no memory of can catch up from the
  slot (the service then skips its per-request read of the run's tail).
- the ``seq`` column is unique, so even a stale view (a writer killed between its commit and its stamp)
  cannot fork the chain: the insert conflicts, the writer re-reads the store and links the batch again.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import mmap
import operator
import os
import threading
import time
from typing import Any, Iterator

import sqlalchemy as sa

from . import schema
from .chain import GENESIS, chain_hash, record_hash, run_hash
from .groupcommit import Batches
from .runslots import RunSlots

__all__: list[str] = []

_TABLES = (schema.decisions, schema.steps, schema.inputs, schema.idempotency_keys,
           schema.audit_checkpoints)  # in this order, one transaction
_CHAIN_LOCK = 727276  # PostgreSQL advisory lock: one chain writer at a time across replicas
_CATCH_UP_MAX = 10_000  # more records written by others than this since our tail: forget the heads instead
_HEADS_MAX = 200_000  # runs whose heads are kept (cleared beyond: they are read again on a miss)
_STAMP_BYTES = 96

_SQLITE_VARS = 32766  # bound parameters in one statement (SQLite's default limit since 3.32)

Batch = list[tuple[list[tuple[str, dict[str, Any]]], Any]]

def _tuple_marks(n: int) -> str:
    return "(" + ",".join("?" * n) + ")"


@functools.lru_cache(maxsize=512)
def _values_sql(head: str, width: int, n: int) -> str:
    """``head`` followed by ``n`` row tuples of ``width`` marks (the same text for the same batch size: the
    driver's statement cache then prepares it once)."""
    return head + ",".join([_tuple_marks(width)] * n)


def _version(rows: list[tuple[str, dict[str, Any]]]) -> int | None:
    """The version the writer gave the batch's input row after committing it (None without counters)."""
    for name, row in rows:
        if name == "inputs":
            v = row.get("version")
            return int(v) if v is not None else None
    return None


def _resolve(fut: Any, err: BaseException | None) -> None:
    if fut.done():
        return
    if err is None:
        fut.set_result(None)
    else:
        fut.set_exception(err)


def _resolve_all(done: list[tuple[Any, BaseException | None]]) -> None:
    for fut, err in done:
        _resolve(fut, err)


class Wake:
    """How an ``arecord`` waits: its future on its event loop. The writer wakes each loop once per batch
    (one ``call_soon_threadsafe``, one write to the loop's wake-up pipe) for all the batch's futures of it."""

    __slots__ = ("loop", "fut")

    def __init__(self, loop: Any, fut: Any) -> None:
        self.loop, self.fut = loop, fut

    def __call__(self, err: BaseException | None) -> None:
        self.loop.call_soon_threadsafe(_resolve, self.fut, err)


def _wake(batch: Batch, errors: list[BaseException | None]) -> None:
    """Tell every request of the batch how its write went (after the commit)."""
    loops: dict[Any, list[tuple[Any, BaseException | None]]] = {}
    for (_rows, done), error in zip(batch, errors):
        if isinstance(done, Wake):
            loops.setdefault(done.loop, []).append((done.fut, error))
            continue
        try:
            done(error)
        except Exception:  # a callback must never kill the writer
            pass
    for loop, futs in loops.items():
        try:
            loop.call_soon_threadsafe(_resolve_all, futs)
        except Exception:  # a closed loop: nobody waits there any more
            pass


class _Checkpointer(threading.Thread):
    """SQLite only: checkpoint the WAL in the background (PASSIVE: never blocks writers or readers).

    Durability does not depend on it: a committed transaction is already durable in the WAL (fsynced
    with synchronous=FULL); the checkpoint only moves pages into the main file and lets the WAL be reused.
    """

    def __init__(self, engine: sa.Engine, interval_s: float = 1.0) -> None:
        super().__init__(name="agentguard-audit-checkpoint", daemon=True)
        self.engine = engine
        self.interval_s = interval_s
        self.stop = threading.Event()
        self.runs = 0

    def run(self) -> None:
        while not self.stop.wait(self.interval_s):
            try:
                with self.engine.connect() as c:
                    c.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                self.runs += 1
            except Exception:  # busy or closed: try again next time
                pass


class _Writer(threading.Thread):
    """The group-commit writer: batches queued inserts into one durable transaction."""

    def __init__(self, engine: sa.Engine, max_batch: int, *, chain: bool = True, signer: Any = None,
                 checkpoint_every: int = 1000, commit_delay_s: float | None = None) -> None:
        super().__init__(name="agentguard-audit-writer", daemon=True)
        self.engine = engine
        self.chain = chain
        self.signer = signer
        self.checkpoint_every = max(1, int(checkpoint_every))
        self._tail: tuple[int, str] | None = None  # (seq, chain_hash) of the chain's last record, as last known
        self._heads: dict[str, str] = {}  # run id -> run_hash of its last record (valid as of _tail)
        self._stale = True  # read the tail from the store before the next link
        self._sqlite = engine.dialect.name == "sqlite"
        self._dbapi: Any = None  # SQLite: the writer's own pooled connection (see the module docstring)
        self.store_reads = 0  # times the writer read the chain's tail or heads from the store (tests, benchmarks)
        self.failed: tuple[str, float] | None = None  # (error type, monotonic time) of the last batch, if it failed
        # On SQLite a batch's rows of one table go to the driver as ONE multi-row INSERT (the columns the
        # Core insert compiles to, without per-row Core bookkeeping): the driver lets go of the GIL around
        # every sqlite3_step, so executemany handed the GIL to the busy event loop and waited for it back
        # (up to the 5 ms switch interval) once per row; one statement per table waits once.
        self._raw: dict[str, tuple[str, list[str], Any]] = {}
        self._lockfile: Any = None
        self._stamp: Any = None  # SQLite file: the tail stamp, the lock file's first bytes, mapped
        self.slots: RunSlots | None = None  # SQLite file with the write lock: the run versions
        if engine.dialect.name == "sqlite" and engine.url.database not in (None, "", ":memory:") \
                and os.environ.get("AGENTGUARD_SQLITE_FLOCK", "1") != "0":  # "0": diagnostics only
            # Writers of several processes queue on a kernel file lock (woken at once on release)
            # instead of SQLite's busy handler, which polls with sleeps of up to 100 ms: tail latency.
            # The file's first bytes hold the tail stamp (see the module docstring); not append mode.
            fd = os.open(f"{engine.url.database}.writelock", os.O_RDWR | os.O_CREAT, 0o600)
            self._lockfile = os.fdopen(fd, "r+b", buffering=0)  # noqa: SIM115 - held for life
            with self._write_lock():
                self.slots = RunSlots(f"{engine.url.database}.runstate")
                if os.fstat(fd).st_size < _STAMP_BYTES:  # zeros: a stamp of no tail
                    os.ftruncate(fd, _STAMP_BYTES)
                # Read and written through a shared mapping (the same page cache as pread/pwrite): os.pread and
                # os.pwrite let go of the GIL, and under load each time the writer lets go it waits for the busy
                # event loop to hand it back (up to the 5 ms switch interval), twice a batch for 96 bytes.
                self._stamp = mmap.mmap(fd, _STAMP_BYTES)
        if engine.dialect.name == "sqlite":
            for t in _TABLES:
                cols = [c.name for c in t.columns if c.name != "id"]
                self._raw[t.name] = (f"INSERT INTO {t.name} ({', '.join(cols)}) VALUES ", cols,
                                     operator.itemgetter(*cols) if len(cols) > 1 else (lambda r, c=cols[0]: (r[c],)))
        self.max_batch = max_batch
        self.batching = Batches(max_batch, commit_delay_s)  # the queue, and the batches taken from it (.groupcommit)
        self.q = self.batching.q
        self.batches = 0
        self.records = 0
        self.last_batch = 0

    @contextlib.contextmanager
    def _write_lock(self) -> Iterator[None]:
        if self._lockfile is None:
            yield
            return
        import fcntl

        fcntl.flock(self._lockfile.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._lockfile.fileno(), fcntl.LOCK_UN)

    # -- the chain's view: tail stamp, tail and heads ----------------------------------------------
    @staticmethod
    def _stamp_of(tail: tuple[int, str] | None) -> bytes:
        return (b"" if tail is None else f"agentguard-tail {tail[0]} {tail[1]}".encode()).ljust(_STAMP_BYTES)

    def _others_wrote(self) -> bool:
        """Whether the store may hold chained records this writer has not seen (then it reads them)."""
        if self._stale or self._tail is None or self._stamp is None:
            return True
        return self._stamp[:_STAMP_BYTES] != self._stamp_of(self._tail)

    def _sync(self, conn: Any) -> None:
        """Read the chain's tail; when other writers extended it, the heads of the runs they wrote."""
        d = schema.decisions
        self.store_reads += 1
        if self._sqlite:
            row = conn.execute("SELECT seq, chain_hash FROM decisions WHERE seq IS NOT NULL "
                               "ORDER BY seq DESC LIMIT 1").fetchone()
        else:
            row = conn.execute(sa.select(d.c.seq, d.c.chain_hash).where(d.c.seq.is_not(None))
                               .order_by(d.c.seq.desc()).limit(1)).first()
        tail = (int(row[0]), str(row[1])) if row is not None else None
        old = self._tail
        if tail != old:
            if old is not None and tail is not None and 0 < tail[0] - old[0] <= _CATCH_UP_MAX:
                since = conn.execute("SELECT run_id, run_hash FROM decisions WHERE seq > ? ORDER BY seq",
                                     (old[0],)) if self._sqlite else \
                    conn.execute(sa.select(d.c.run_id, d.c.run_hash).where(d.c.seq > old[0]).order_by(d.c.seq))
                for run, h in since:
                    self._heads[run] = h
            else:
                self._heads.clear()
        self._tail = tail
        self._stale = False

    def _missing_heads(self, conn: Any, runs: set[str]) -> dict[str, str]:
        """The heads of runs this writer has not seen (one query per 500 runs; GENESIS when none)."""
        d = schema.decisions
        need = sorted(runs - self._heads.keys())
        if not need:
            return {}
        heads = dict.fromkeys(need, GENESIS)
        self.store_reads += 1
        for i in range(0, len(need), 500):
            part = need[i:i + 500]
            if self._sqlite:
                got = conn.execute("SELECT run_id, run_hash FROM decisions WHERE seq IN (SELECT max(seq) FROM "
                                   f"decisions WHERE run_id IN ({','.join('?' * len(part))}) AND seq IS NOT NULL "
                                   "GROUP BY run_id)", part)
            else:
                last = (sa.select(sa.func.max(d.c.seq)).where(d.c.run_id.in_(part), d.c.seq.is_not(None))
                        .group_by(d.c.run_id).scalar_subquery())
                got = conn.execute(sa.select(d.c.run_id, d.c.run_hash).where(d.c.seq.in_(last)))
            for run, h in got:
                heads[run] = h
        return heads

    def _link(self, conn: Any, rows: dict[str, list[dict[str, Any]]]) -> tuple[tuple[int, str], dict[str, str]]:
        """Give the batch's decision rows their place in the chain (:mod:`.chain`): ``seq``, ``chain_hash``,
        ``run_hash``, and the signed checkpoints the batch reaches, in one pass. Runs inside the batch's
        transaction after taking the chain lock; reads the store only as the module docstring says."""
        if not self._sqlite and conn.dialect.name == "postgresql":
            conn.execute(sa.text(f"SELECT pg_advisory_xact_lock({_CHAIN_LOCK})"))
            self._stale = True  # no shared stamp: read the tail under the lock
        if self._others_wrote():
            self._sync(conn)
        seq, prev = self._tail or (0, GENESIS)
        drows = rows["decisions"]
        known = self._heads
        heads = self._missing_heads(conn, {r["run_id"] for r in drows})
        rows["audit_checkpoints"] = []
        for r in drows:
            seq += 1
            r["seq"] = seq
            rec = record_hash(r)
            prev = chain_hash(seq, prev, rec)
            r["chain_hash"] = prev
            run = r["run_id"]
            rh = run_hash(heads[run] if run in heads else known[run], rec)
            r["run_hash"] = heads[run] = rh
            if self.signer is not None and seq % self.checkpoint_every == 0:
                rows["audit_checkpoints"].append(self.signer.sign(seq, prev, time.time()))
        return (seq, prev), heads

    def _linked(self, linked: tuple[tuple[int, str], dict[str, str]]) -> None:
        """The batch committed: the chain's tail and the runs' heads move on, and the stamp says so."""
        self._tail, heads = linked
        if len(self._heads) + len(heads) > _HEADS_MAX:
            self._heads.clear()
        self._heads.update(heads)
        if self._stamp is not None:
            stamp = self._stamp_of(self._tail)  # longer than the stamp (a seq of 16 digits): one that matches none
            try:
                self._stamp[:_STAMP_BYTES] = stamp if len(stamp) == _STAMP_BYTES else bytes(_STAMP_BYTES)
            except (OSError, ValueError):  # closed: others will read the store instead
                pass

    # -- writes -----------------------------------------------------------------------------------
    def _insert(self, conn: Any, rows: dict[str, list[dict[str, Any]]]) -> None:
        for table in (t for t in _TABLES if rows[t.name]):
            batch_rows = rows[table.name]
            raw = self._raw.get(table.name)
            if raw is not None:
                sql, cols, get = raw
                per = max(1, _SQLITE_VARS // len(cols))
                for i in range(0, len(batch_rows), per):
                    part = batch_rows[i:i + per] if len(batch_rows) > per else batch_rows
                    conn.execute(_values_sql(sql, len(cols), len(part)),
                                 tuple(itertools.chain.from_iterable(map(get, part))))
            else:
                conn.execute(table.insert(), batch_rows)

    def failing(self, window_s: float = 30.0) -> str | None:
        """The error type of the last batch when it did not commit (a full disk) within ``window_s`` seconds; None
        once a batch commits, or after ``window_s`` (a replica taken out of a load balancer then gets a new try)."""
        f = self.failed
        return f[0] if f is not None and time.monotonic() - f[1] <= window_s else None

    def _write(self, batch: Batch) -> BaseException | None:
        """Insert the rows of ``batch`` in one transaction (retried briefly on a transient error, and
        linked again when another writer extended the chain meanwhile)."""
        rows: dict[str, list[dict[str, Any]]] = {t.name: [] for t in _TABLES}
        for name, row in (r for table_rows, _done in batch for r in table_rows):
            rows[name].append(row)
        chained = self.chain and bool(rows["decisions"])
        error: BaseException | None = None
        attempt = relinks = 0
        while attempt < 3:
            linked = None
            try:
                with self._write_lock():
                    if self._sqlite:
                        linked = self._write_sqlite(rows, chained)
                    else:
                        with self.engine.begin() as conn:
                            linked = self._link(conn, rows) if chained else None
                            self._insert(conn, rows)
                    if linked is not None:
                        self._linked(linked)
                    slots = self.slots
                    if slots is not None:
                        for row in rows["inputs"]:  # the request reads its version from its input row
                            row["version"] = slots.write(row["run_id"], row["idx"], row["kind"], row["ts"],
                                                         row.get("trivial", False))
                self.failed = None
                return None
            except sa.exc.IntegrityError as exc:  # not transient, unless the chain moved under a stale view
                if chained and relinks < 5 and self._chain_moved():
                    relinks += 1
                    continue
                return exc
            except Exception as exc:  # busy database, dropped connection: retry briefly
                error = exc
                self._stale = True
                attempt += 1
                time.sleep(0.05 * attempt)
        self.failed = (type(error).__name__, time.monotonic()) if error is not None else None
        return error

    def _write_sqlite(self, rows: dict[str, list[dict[str, Any]]], chained: bool) -> Any:
        """One SQLite transaction on the writer's own connection: ``BEGIN IMMEDIATE`` (the database's write
        lock, so the chain's tail read next cannot move before the commit), link, insert, commit. On any
        error it rolls back, drops the connection and raises the driver's error as SQLAlchemy's."""
        import sqlite3

        if self._dbapi is None:
            self._dbapi = self.engine.raw_connection()  # pooled: the engine's pragmas (WAL, synchronous) apply
        db = self._dbapi.driver_connection
        try:
            db.execute("BEGIN IMMEDIATE")
            linked = self._link(db, rows) if chained else None
            self._insert(db, rows)
            db.commit()
            return linked
        except BaseException as exc:
            keep = isinstance(exc, sqlite3.IntegrityError)  # a taken key: the connection itself is fine
            dbapi = self._dbapi
            if not keep:
                self._dbapi = None
            with contextlib.suppress(Exception):
                db.rollback()
            if not keep:
                with contextlib.suppress(Exception):
                    dbapi.invalidate()  # a fresh connection next batch
            if isinstance(exc, sqlite3.Error):
                raise sa.exc.DBAPIError.instance("audit batch", None, exc, sqlite3.Error) from exc
            raise

    def close(self) -> None:
        """Give the writer's connection back (after the thread ended)."""
        if self.slots is not None:
            with contextlib.suppress(Exception):
                self.slots.close()
            self.slots = None
        stamp, self._stamp = self._stamp, None
        if stamp is not None:
            with contextlib.suppress(Exception):
                stamp.close()
        dbapi, self._dbapi = self._dbapi, None
        if dbapi is not None:
            with contextlib.suppress(Exception):
                dbapi.close()

    def _chain_moved(self) -> bool:
        """After a conflict: whether the chain's tail is not what this writer linked the batch to (then
        the view is refreshed and the batch is linked again)."""
        before = self._tail
        try:
            with self._write_lock(), self.engine.connect() as conn:
                self._sync(conn.connection.driver_connection if self._sqlite else conn)
        except Exception:
            self._stale = True
            return False
        return self._tail != before

    def _commit(self, batch: Batch) -> list[BaseException | None]:
        """One error (or None) per item. A batch refused for a uniqueness conflict fails only for the requests
        whose rows conflict (another worker or replica decided that input first): on SQLite one read finds
        the items whose unique keys are taken (:meth:`_taken`) and the others are written in one
        transaction; where that is not possible, or that transaction fails too, every item is written in
        its own transaction, as before."""
        error = self._write(batch)
        if not isinstance(error, sa.exc.IntegrityError) or len(batch) < 2:
            return [error] * len(batch)
        taken = self._taken(batch)
        if taken:
            rest = [item for i, item in enumerate(batch) if i not in taken]
            if not rest or self._write(rest) is None:
                return [error if i in taken else None for i in range(len(batch))]
        return [self._write([item]) for item in batch]

    def _taken(self, batch: Batch) -> set[int] | None:
        """SQLite only: the positions of the batch's items with a row whose unique key is already stored (an
        input or step ``(run_id, idx)``, an idempotency ``scope``, a ``decision_id``) or held by an earlier
        item of the batch; None where it cannot tell (another database, a failed read): the caller then
        writes item by item. Reading outside the write lock is safe: a key stored meanwhile makes the
        remaining items' transaction fail, and the caller falls back to one transaction per item."""
        if not self._sqlite or self._dbapi is None:
            return None
        keys = {"inputs": ("run_id", "idx"), "steps": ("run_id", "idx"), "idempotency_keys": ("scope",),
                "decisions": ("decision_id",)}
        wanted: dict[str, dict[tuple[Any, ...], int]] = {t: {} for t in keys}
        taken: set[int] = set()
        for i, (rows, _done) in enumerate(batch):
            for name, row in rows:
                cols = keys.get(name)
                if cols is None:
                    continue
                k = tuple(row[c] for c in cols)
                if k in wanted[name]:
                    taken.add(i)  # the same key twice in one batch: the later item conflicts
                else:
                    wanted[name][k] = i
        db = self._dbapi.driver_connection
        try:
            for name, want in wanted.items():
                cols = keys[name]
                items = list(want)
                for j in range(0, len(items), 400):
                    part = items[j:j + 400]
                    marks = ",".join([_tuple_marks(len(cols))] * len(part))
                    sql = (f"SELECT {', '.join(cols)} FROM {name} WHERE ({', '.join(cols)}) IN (VALUES {marks})"
                           if len(cols) > 1 else f"SELECT {cols[0]} FROM {name} WHERE {cols[0]} IN ({marks})")
                    for found in db.execute(sql, tuple(x for k in part for x in k)).fetchall():
                        taken.add(want[tuple(found)])
        except Exception:  # noqa: BLE001 - unreadable: item by item instead
            return None
        return taken

    def run(self) -> None:
        while (batch := self.batching.next()) is not None:
            errors = self._commit(batch)
            self.batching.done(len(batch))
            self.batches += 1
            self.records += len(batch)
            self.last_batch = len(batch)
            _wake(batch, errors)
