"""The audit store: every decision the service answers is written durably *before* it is answered.

Guarantee (durability): :meth:`AuditStore.record` returns only after the transaction holding the
record has committed. On SQLite the store runs in WAL mode with ``synchronous=FULL`` by default, so
a commit has fsynced the write-ahead log: the record survives a killed process and a power loss.
(``synchronous=NORMAL`` in WAL mode survives a killed process, since the WAL pages are in the
operating system's cache once written, but not an OS crash; it is offered as a documented option.)
On PostgreSQL a commit is durable by PostgreSQL's own contract (``synchronous_commit=on``, the
default).

Group commit: concurrent requests are written by one writer thread per process in batches: it takes
every record waiting in its queue (up to ``max_batch``), inserts them in one transaction, commits
(one fsync for the whole batch) and only then wakes the requests whose records were in it. A request
is therefore never answered before its own record is durable, while the fsync cost is shared (under load
the writer waits a bounded moment for more: :mod:`.groupcommit`). If a write fails, every request in the
batch gets the error and the service answers 503 without a verdict (fail closed).

Schema and migrations: :mod:`agentguard.server.schema`; Alembic migrations ship inside the package
and run at start-up (:func:`migrate`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import os
import queue
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Mapping

import sqlalchemy as sa

from ..core.audit import AuditRecord
from ..core.errors import AgentGuardError, InputError
from . import schema
from .jsonutil import canonical, dumps, loads
from .runslots import SlotView
from .writer import Wake, _Checkpointer, _version, _Writer

__all__ = ["AuditRecord", "AuditStore", "MIGRATIONS_DIR", "decision_row", "input_digest", "migrate",
           "new_decision_id"]

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
_ID_PREFIX = uuid.uuid4().hex[:16]
_ID_COUNTER = itertools.count(1)


def _reseed_ids() -> None:
    """New id prefix in a forked child (uvicorn workers fork after import)."""
    global _ID_PREFIX, _ID_COUNTER
    _ID_PREFIX = uuid.uuid4().hex[:16]
    _ID_COUNTER = itertools.count(1)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reseed_ids)


def input_digest(obj: Any) -> str:
    """SHA-256 (hex) of :func:`~.jsonutil.canonical` ``obj``: the audit's input digest (what binds an
    approval to exactly the call it escalated). Distinct JSON values have distinct encodings, so a
    digest collision is a SHA-256 collision; a value that has no canonical encoding (``inf``, a lone
    surrogate) raises :class:`~.jsonutil.RequestJSONError` instead of sharing another value's digest."""
    return hashlib.sha256(canonical(obj)).hexdigest()


def new_decision_id() -> str:
    """A unique decision id: 16 hex digits random per process + 16 hex digits of a counter.

    Unique across processes and replicas (64 random bits per process start) and cheap on the hot
    path (no system call per id)."""
    return f"{_ID_PREFIX}{next(_ID_COUNTER):016x}"


def decision_row(record: AuditRecord) -> dict[str, Any]:
    """The ``decisions`` row of ``record`` (see :data:`agentguard.server.schema.decisions`).

    A record written by a library guard (no ``decision_id``/``kind``/``input_digest``) gets a fresh
    id, the kind ``check`` and the digest of its tool call."""
    digest = record.input_digest or input_digest({"run_id": record.run_id, "tool_call": record.call})
    return {"guard_version": record.guard_version,
            "decision_id": record.decision_id or new_decision_id(), "ts": record.time, "run_id": record.run_id,
            "kind": record.kind or "check", "guard": (record.guard or "?")[:128], "input_digest": digest,
            "decision": record.decision, "reason": record.reason,
            "numbers": dumps(dict(record.numbers)).decode(),
            "principal": (str(record.extra.get("principal"))[:100] if record.extra.get("principal") else None),
            "shadow": dumps(record.extra["shadow"]).decode() if record.extra.get("shadow") else None,
            "seq": None, "chain_hash": None, "run_hash": None}


def _sqlite_pragmas(synchronous: str) -> Callable[..., None]:
    def on_connect(dbapi_conn: Any, _record: Any) -> None:
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute(f"PRAGMA synchronous={synchronous}")
        cur.execute("PRAGMA busy_timeout=30000")
        # Commits only append to (and fsync) the WAL; copying it back into the database file is done by
        # the store's background checkpointer, so no answered request waits for a checkpoint.
        cur.execute("PRAGMA wal_autocheckpoint=0")
        cur.close()

    return on_connect


def make_engine(url: str, *, sqlite_synchronous: str = "FULL") -> sa.Engine:
    """An engine for ``url``; SQLite gets WAL + the chosen ``synchronous`` level on every connection."""
    try:
        u = sa.engine.make_url(url)
    except Exception as exc:  # sqlalchemy.exc.ArgumentError
        raise InputError(f"bad database URL: {exc}") from None
    if u.get_backend_name() == "sqlite":
        if u.database and u.database != ":memory:":
            Path(u.database).parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(u, connect_args={"check_same_thread": False, "timeout": 30})
        sa.event.listen(engine, "connect", _sqlite_pragmas(sqlite_synchronous.upper()))
        return engine
    if u.get_backend_name() == "postgresql":
        return sa.create_engine(u, pool_pre_ping=True, pool_size=5, max_overflow=5)
    raise InputError(f"unsupported audit database {u.get_backend_name()!r}: use sqlite:/// or postgresql+psycopg://")


def migrate(engine: sa.Engine) -> None:
    """Bring the database to the newest schema with the packaged Alembic migrations (idempotent)."""
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    # Concurrent starts (several workers or replicas) serialise on the migration transaction.
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(727274)"))
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")


class AuditStore:
    """Durable decision log over SQLAlchemy Core (SQLite WAL by default, PostgreSQL by URL).

    ``record``/``arecord`` return only once the record is committed (see the module docstring).
    Reads (``recent_runs``, ``decisions``, ``run_steps``) are ordinary queries.
    """

    def __init__(self, url: str, *, sqlite_synchronous: str = "FULL", max_batch: int = 1024,
                 run_migrations: bool = True, chain: bool = True, signer: Any = None,
                 checkpoint_every: int = 1000) -> None:
        self.url = url
        self.engine = make_engine(url, sqlite_synchronous=sqlite_synchronous)
        self.dialect = self.engine.dialect.name
        self._local_file = self.dialect == "sqlite" and self.engine.url.database not in (None, "", ":memory:")
        if run_migrations:
            try:
                migrate(self.engine)
            except AgentGuardError:
                raise
            except Exception as exc:
                raise AgentGuardError(f"cannot open audit store {self.safe_url}: {type(exc).__name__}: "
                                      f"{str(exc).splitlines()[0] if str(exc) else ''}") from None
        self.chain = chain
        self._writer = _Writer(self.engine, max_batch, chain=chain, signer=signer, checkpoint_every=checkpoint_every)
        self._writer.start()
        self._checkpointer = _Checkpointer(self.engine) if self.dialect == "sqlite" else None
        if self._checkpointer is not None:
            self._checkpointer.start()
        self._closed = False
        self._local = threading.local()
        self._local_conns: list[Any] = []

    safe_url = property(lambda self: sa.engine.make_url(self.url).render_as_string(hide_password=True),
                        doc="The URL with any password masked (for logs and errors).")

    @property
    def stats(self) -> dict[str, int]:
        return {"batches": self._writer.batches, "records": self._writer.records,
                "last_batch": self._writer.last_batch}

    # -- writes ---------------------------------------------------------------------------------
    @staticmethod
    def _rows(record: AuditRecord, step: Mapping[str, Any] | None, inp: Mapping[str, Any] | None = None,
              idem: Mapping[str, Any] | None = None) -> list[tuple[str, dict[str, Any]]]:
        row = decision_row(record)
        rows = [("decisions", row)]
        if step is not None:
            rows.append(("steps", {"run_id": record.run_id, "idx": int(step["idx"]), "ts": row["ts"],
                                   "decision_id": row["decision_id"], "payload": dumps(step["payload"]).decode()}))
        if inp is not None:
            state = inp["payload"].get("state") if isinstance(inp["payload"], Mapping) else None
            rows.append(("inputs", {"run_id": record.run_id, "idx": int(inp["idx"]), "kind": str(inp["kind"]),
                                    "ts": row["ts"], "decision_id": row["decision_id"],
                                    "payload": dumps(inp["payload"]).decode(),
                                    "trivial": isinstance(state, Mapping) and not any(state.values())}))
        if idem is not None:
            rows.append(("idempotency_keys", dict(idem)))
        return rows

    async def arecord(self, record: AuditRecord, step: Mapping[str, Any] | None = None,
                      inp: Mapping[str, Any] | None = None, idem: Mapping[str, Any] | None = None) -> int | None:
        """Write ``record`` (and a step row, the run's input row ``inp``: ``{idx, kind, payload}``, and the
        ``idempotency_keys`` row ``idem`` of a keyed request) durably, in one transaction; returns after the
        commit, with the run's version after it when ``inp`` was given on a SQLite file (:meth:`run_version`;
        else None). Raises on failure (``IntegrityError`` when the step or input index of the run, or the
        idempotency key, is taken)."""
        if self._closed:
            raise AgentGuardError("audit store is closed")
        fut = (loop := asyncio.get_running_loop()).create_future()
        rows = self._rows(record, step, inp, idem)
        self._writer.q.put((rows, Wake(loop, fut)))
        await fut
        return _version(rows)

    def record(self, record: AuditRecord, step: Mapping[str, Any] | None = None,
               inp: Mapping[str, Any] | None = None, idem: Mapping[str, Any] | None = None) -> int | None:
        """Blocking variant of :meth:`arecord`."""
        if self._closed:
            raise AgentGuardError("audit store is closed")
        ev = threading.Event()
        box: list[BaseException | None] = [None]

        def done(err: BaseException | None) -> None:
            box[0] = err
            ev.set()

        rows = self._rows(record, step, inp, idem)
        self._writer.q.put((rows, done))
        ev.wait()
        if box[0] is not None:
            raise box[0]
        return _version(rows)

    def run_version(self, run_id: str) -> int | None:
        """The run's version in this SQLite file's shared run slots (:class:`.runslots.RunSlots`): unchanged since a
        value this process saw, no writer committed an input of the run since; None without slots (PostgreSQL,
        memory, a closed store) and an odd number while a writer rewrites the slot. A memory read."""
        return self.run_slot(run_id)[0]

    def run_slot(self, run_id: str) -> tuple[int | None, SlotView | None]:
        """(:meth:`run_version`, what the run's slot says of it: a :class:`.runslots.SlotView`, None when the slot
        holds no consistent view of this run); (None, None) without slots."""
        slots = self._writer.slots
        if slots is None or self._closed:
            return None, None
        try:
            return slots.view(run_id)
        except (ValueError, OSError):  # closed meanwhile
            return None, None

    def write(self, record: AuditRecord) -> None:
        """:class:`~agentguard.core.AuditSink` protocol: a library guard (e.g. a ``ToolCallGuard`` with
        ``audit=store``) writes its records here; blocking, returns after the commit."""
        self.record(record)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._writer.q.put(None)
            self._writer.join(timeout=10)
            if not self._writer.is_alive():
                self._writer.close()
            for conn in self._local_conns:
                with contextlib.suppress(Exception):
                    conn.close()
            if self._writer._lockfile is not None:
                self._writer._lockfile.close()
            if self._checkpointer is not None:
                self._checkpointer.stop.set()
                self._checkpointer.join(timeout=10)
                try:  # leave a compact file behind
                    with self.engine.connect() as c:
                        c.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
                except Exception:
                    pass
            self.engine.dispose()

    def healthy(self) -> tuple[bool, str | None]:
        """(True, None) when the writer thread runs, its last batch committed (else, for 30 s, the error's type: reads
        may answer while writes fail, a full disk, and no verdict can be given) and the database answers a query."""
        if self._closed or not self._writer.is_alive():
            return False, "audit writer not running"
        if failing := self._writer.failing():
            return False, f"audit writes failing: {failing}"
        try:
            with self.engine.connect() as c:
                c.exec_driver_sql("SELECT 1").scalar()
        except Exception as exc:
            return False, f"{type(exc).__name__}"
        return True, None

    # -- reads ----------------------------------------------------------------------------------
    def count(self) -> int:
        with self.engine.connect() as c:
            return int(c.execute(sa.select(sa.func.count()).select_from(schema.decisions)).scalar_one())

    def decision_ids(self) -> set[str]:
        with self.engine.connect() as c:
            return {r[0] for r in c.execute(sa.select(schema.decisions.c.decision_id))}

    def decisions(self, run_id: str | None = None, limit: int = 200, kind: str | None = None,
                  since_id: int = 0) -> list[dict[str, Any]]:
        _check_limit(limit)
        d = schema.decisions
        q = sa.select(d).where(d.c.id > since_id)
        if run_id is not None:
            q = q.where(d.c.run_id == run_id)
        if kind is not None:
            q = q.where(d.c.kind == kind)
        q = q.order_by(d.c.id.desc()).limit(limit)
        with self.engine.connect() as c:
            rows = [dict(r._mapping) for r in c.execute(q)]
        for r in rows:
            r["numbers"] = loads(r["numbers"])
            r["shadow"] = loads(r["shadow"]) if r.get("shadow") else None
        rows.reverse()
        return rows

    def shadow_decisions(self, since: float | None = None, until: float | None = None) -> list[dict[str, Any]]:
        """The decisions in ``[since, until)`` (on the ``ts`` index) with their ``shadow`` entries decoded:
        what :func:`agentguard.core.shadow.shadow_report` reads for ``agentguard report shadow --db``."""
        d, i = schema.decisions, schema.inputs
        q = (sa.select(d.c.decision_id, d.c.ts, d.c.run_id, d.c.kind, d.c.decision, d.c.guard, d.c.shadow,
                       i.c.payload).select_from(d.outerjoin(i, i.c.decision_id == d.c.decision_id)))
        if since is not None:
            q = q.where(d.c.ts >= since)
        if until is not None:
            q = q.where(d.c.ts < until)
        with self.engine.connect() as c:
            rows = [dict(r._mapping) for r in c.execute(q.order_by(d.c.ts))]
        for r in rows:
            r["shadow"] = loads(r["shadow"]) if r["shadow"] else None
            payload = loads(r.pop("payload")) if r.get("payload") else {}
            tc = (payload.get("input") or {}).get("tool_call") if isinstance(payload, dict) else None
            r["call"] = {"name": tc.get("name")} if isinstance(tc, dict) else {}
        return rows

    def decision(self, decision_id: str) -> dict[str, Any] | None:
        """The decision row with this id (numbers decoded), or None."""
        d = schema.decisions
        with self.engine.connect() as c:
            row = c.execute(sa.select(d).where(d.c.decision_id == decision_id)).first()
        if row is None:
            return None
        out = dict(row._mapping)
        out["numbers"] = loads(out["numbers"])
        return out

    def recent_runs(self, limit: int = 50, window_s: float = 7 * 86400.0) -> list[dict[str, Any]]:
        """Runs active in the last ``window_s`` seconds, most recent first: id, first/last time, number
        of decisions and counts by decision (the time window keeps the query on the ``ts`` index)."""
        _check_limit(limit)
        d = schema.decisions
        q = (
            sa.select(d.c.run_id, sa.func.min(d.c.ts).label("first_ts"), sa.func.max(d.c.ts).label("last_ts"),
                      sa.func.count().label("n_decisions"))
            .where(d.c.ts >= time.time() - window_s)
            .group_by(d.c.run_id).order_by(sa.func.max(d.c.ts).desc()).limit(limit)
        )
        with self.engine.connect() as c:
            runs = [dict(r._mapping) for r in c.execute(q)]
            if runs:
                ids = [r["run_id"] for r in runs]
                counts = c.execute(
                    sa.select(d.c.run_id, d.c.decision, sa.func.count()).where(d.c.run_id.in_(ids))
                    .group_by(d.c.run_id, d.c.decision)
                ).all()
        by_run: dict[str, dict[str, int]] = {}
        for run_id, decision, n in (counts if runs else []):
            by_run.setdefault(run_id, {})[decision] = int(n)
        for r in runs:
            r["decisions"] = by_run.get(r["run_id"], {})
        return runs

    def run_steps(self, run_id: str) -> list[dict[str, Any]]:
        """The steps of a run in order: ``[{"idx", "ts", "decision_id", "payload"}]``."""
        s = schema.steps
        with self.engine.connect() as c:
            rows = c.execute(sa.select(s.c.idx, s.c.ts, s.c.decision_id, s.c.payload)
                             .where(s.c.run_id == run_id).order_by(s.c.idx)).all()
        return [{"idx": r[0], "ts": r[1], "decision_id": r[2], "payload": loads(r[3])} for r in rows]

    def run_inputs(self, run_id: str, since: int = 0, *, decode: bool = True) -> list[dict[str, Any]]:
        """The decided inputs of a run in order, from index ``since`` on:
        ``[{"idx", "kind", "ts", "decision_id", "payload"}]`` (with ``decode=False`` the payload as stored,
        JSON text under ``raw``, for a caller that reads only some of them)."""
        if self.local:
            rows = self._reader().execute("SELECT idx, kind, ts, decision_id, payload FROM inputs WHERE run_id = ? "
                                          "AND idx >= ? ORDER BY idx", (run_id, int(since))).fetchall()
        else:
            t = schema.inputs
            q = sa.select(t.c.idx, t.c.kind, t.c.ts, t.c.decision_id, t.c.payload).where(t.c.run_id == run_id)
            if since:
                q = q.where(t.c.idx >= since)
            with self.engine.connect() as c:
                rows = c.execute(q.order_by(t.c.idx)).all()
        if not decode:
            return [{"idx": r[0], "kind": r[1], "ts": r[2], "decision_id": r[3], "raw": r[4]} for r in rows]
        return [{"idx": r[0], "kind": r[1], "ts": r[2], "decision_id": r[3], "payload": loads(r[4])} for r in rows]

    def run_principals(self, run_id: str) -> set[str]:
        """The identities of every credential that asked for a decision of the run (who started it and
        who fed it since; answers to its escalations not counted)."""
        d = schema.decisions
        with self.engine.connect() as c:
            rows = c.execute(sa.select(d.c.principal).where(d.c.run_id == run_id, d.c.kind != "approval")
                             .distinct()).all()
        return {r[0] for r in rows if r[0]}

    def run_input_count(self, run_id: str) -> tuple[int, float | None]:
        """(number of inputs recorded for the run, time of the last one)."""
        t = schema.inputs
        with self.engine.connect() as c:
            n, last = c.execute(sa.select(sa.func.count(), sa.func.max(t.c.ts)).where(t.c.run_id == run_id)).one()
        return int(n), last

    @property
    def local(self) -> bool:
        """True for a SQLite file: a point read costs microseconds (no network), so the hot path may do it
        on the event loop instead of hopping to a worker thread (:meth:`run_last_input`, :meth:`run_inputs`)."""
        return self._local_file  # computed once: the engine's URL never changes

    def _reader(self) -> Any:
        """This thread's own SQLite connection, used only to read (no pool, no SQLAlchemy statement
        building: a point read costs microseconds). WAL readers do not wait for the writer."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            import sqlite3

            conn = sqlite3.connect(str(self.engine.url.database), timeout=30, isolation_level=None)
            conn.execute("PRAGMA busy_timeout=30000")
            self._local.conn = conn
            self._local_conns.append(conn)
        return conn

    def run_last_input(self, run_id: str) -> tuple[int, float | None]:
        """(number of inputs recorded for the run, time of the last one), from its last row alone: the
        indices of a run are 0, 1, 2, ... without gaps (each is written as the state's stored count, and
        ``(run_id, idx)`` is unique), so the count is the last index + 1. One lookup on the unique index,
        whatever the run's length (a ``count(*)`` reads every row of the run)."""
        if self.local:
            r = self._reader().execute("SELECT idx, ts FROM inputs WHERE run_id = ? ORDER BY idx DESC LIMIT 1",
                                       (run_id,)).fetchone()
            return (0, None) if r is None else (int(r[0]) + 1, float(r[1]))
        t = schema.inputs
        with self.engine.connect() as c:
            r = c.execute(sa.select(t.c.idx, t.c.ts).where(t.c.run_id == run_id)
                          .order_by(t.c.idx.desc()).limit(1)).first()
        return (0, None) if r is None else (int(r[0]) + 1, float(r[1]))

    def run_tail(self, run_id: str, since: int, limit: int = 66) -> list[dict[str, Any]] | None:
        """SQLite files only (None elsewhere): the run's first ``limit`` inputs from index ``since`` on, in one
        indexed read, payloads as stored (``raw``, JSON text: decoded by the caller where it needs one). What
        the service's hot path reads instead of :meth:`run_last_input` then :meth:`run_inputs`: its last known
        input and what other processes stored after it."""
        if not self.local:
            return None
        rows = self._reader().execute("SELECT idx, kind, ts, decision_id, payload FROM inputs WHERE run_id = ? "
                                      "AND idx >= ? ORDER BY idx LIMIT ?", (run_id, int(since), int(limit))).fetchall()
        return [{"idx": r[0], "kind": r[1], "ts": r[2], "decision_id": r[3], "raw": r[4]} for r in rows]

    def idempotent(self, scope: str) -> dict[str, Any] | None:
        """The stored answer of the request with this idempotency ``scope``
        (:mod:`.idempotency`): ``{"request_digest", "status", "response", "decision_id", "run_id"}``, or None."""
        t = schema.idempotency_keys
        with self.engine.connect() as c:
            r = c.execute(sa.select(t.c.request_digest, t.c.status, t.c.response, t.c.decision_id, t.c.run_id)
                          .where(t.c.scope == scope)).first()
        return None if r is None else dict(r._mapping)

    def run_input(self, decision_id: str) -> dict[str, Any] | None:
        """The input row whose decision is ``decision_id`` (payload decoded), or None."""
        t = schema.inputs
        with self.engine.connect() as c:
            r = c.execute(sa.select(t.c.run_id, t.c.idx, t.c.kind, t.c.payload)
                          .where(t.c.decision_id == decision_id)).first()
        return None if r is None else {"run_id": r[0], "idx": r[1], "kind": r[2], "payload": loads(r[3])}

    def count_decisions(self, run_id: str, kind: str | None = None) -> int:
        """Number of decisions recorded for a run (of one kind)."""
        d = schema.decisions
        q = sa.select(sa.func.count()).select_from(d).where(d.c.run_id == run_id)
        if kind is not None:
            q = q.where(d.c.kind == kind)
        with self.engine.connect() as c:
            return int(c.execute(q).scalar_one())

    def run_step_count(self, run_id: str) -> tuple[int, float | None]:
        """(number of steps recorded for the run, time of the last one)."""
        s = schema.steps
        with self.engine.connect() as c:
            n, last = c.execute(sa.select(sa.func.count(), sa.func.max(s.c.ts)).where(s.c.run_id == run_id)).one()
        return int(n), last


def _check_limit(limit: Any) -> None:
    """A listing's row limit must be a positive integer (SQLite reads ``LIMIT -1`` as no limit at all)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InputError(f"limit must be a positive integer, got {limit!r}")
