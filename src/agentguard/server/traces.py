"""Finished traces kept for learning, in Parquet (pyarrow), queried with DuckDB.

Layout: one Parquet file per ingest batch under ``<dir>``, written to a temporary name and renamed
into place (atomic on POSIX), so a reader never sees half a file. One row per step:

    run_id, labels (JSON), step (int), time (float), state, action, observation (JSON), output (str),
    signals (JSON), unsafe (bool: labels["unsafe"] when given)

A run with no steps is kept as one row with ``step = -1`` so its labels are not lost.

Each file records who uploaded it: the identity of the credential that sent the batch, in the Parquet file's
key-value metadata (``agentguard.identity``; :func:`upload_identity`). Any credential with the ``agent`` role may
upload, and what is uploaded is what the proactive guard's model is learned from, so an agent (or whoever holds
its token) could otherwise pull the learned risk of a dangerous state down with made-up traces. Learn from the
identities you trust: ``load_traces(d, identities=[...])``, ``agentguard learn --from-identity NAME``
(:func:`select_uploads`); a file written before identities were recorded, or by :func:`write_parquet` without
one, has none and is never selected by identity.

:func:`load_traces` gives the rows back as a list of :class:`agentguard.core.Trace` (the DTMC
learner and the calibrator read them directly); :func:`query` runs any DuckDB SQL over them with
the view ``traces``.
"""

from __future__ import annotations

import hashlib
import os
import time
import uuid
from pathlib import Path
from typing import Any, Iterable, Sequence

from ..core.errors import InputError, require
from ..core.types import Step, ToolCall, Trace
from .jsonutil import dumps, loads
from .trace_ledger import FileLedger, Ledger, identity_key

__all__ = ["IDENTITY_KEY", "MARKER_BYTES", "TraceConflict", "TraceQuota", "TraceStore", "load_traces", "query", "select_uploads", "upload_identity",
           "write_parquet"]

#: the Parquet file metadata key holding the identity of the credential that uploaded the file
IDENTITY_KEY = b"agentguard.identity"

COLUMNS = ("run_id", "labels", "step", "time", "state", "action", "observation", "output", "signals", "unsafe")


def _schema():
    pa = require("pyarrow", "server")
    return pa.schema([
        ("run_id", pa.string()), ("labels", pa.string()), ("step", pa.int32()), ("time", pa.float64()),
        ("state", pa.string()), ("action", pa.string()), ("observation", pa.string()),
        ("output", pa.string()), ("signals", pa.string()), ("unsafe", pa.bool_()),
    ])


def _j(v: Any) -> str | None:
    return None if v is None else dumps(v).decode()


def write_parquet(path: str | os.PathLike[str], traces: Iterable[Trace], typed: bool = False,
                  identity: str | None = None) -> int:
    """Write traces to one Parquet file at ``path`` (atomically); returns the number of rows.

    ``typed``: also store the states as a typed struct column ``state_typed`` (``state`` then null
    where a state fits; see :mod:`agentguard.predictive.typed_state`), which the columnar learner
    reads without parsing JSON. ``identity``: who uploaded them (the file's ``agentguard.identity``
    metadata, :func:`upload_identity`)."""
    pa = require("pyarrow", "server")
    pq = require("pyarrow.parquet", "server")
    cols: dict[str, list[Any]] = {c: [] for c in COLUMNS}
    for t in traces:
        labels = _j(dict(t.labels))
        unsafe = t.labels.get("unsafe")
        unsafe = None if unsafe is None else bool(unsafe)
        rows: list[tuple[int, Step | None]] = list(enumerate(t.steps)) or [(-1, None)]
        for i, s in rows:
            cols["run_id"].append(t.run_id)
            cols["labels"].append(labels)
            cols["step"].append(i)
            cols["unsafe"].append(unsafe)
            if s is None:
                for c in ("time", "state", "action", "observation", "output", "signals"):
                    cols[c].append(None)
                continue
            action = s.action.to_dict() if isinstance(s.action, ToolCall) else s.action
            cols["time"].append(float(s.time))
            cols["state"].append(_j(s.state))
            cols["action"].append(_j(action))
            cols["observation"].append(_j(s.observation))
            cols["output"].append(s.output)
            cols["signals"].append(_j({k: float(v) for k, v in s.signals.items()}))
    table = pa.Table.from_pydict(cols, schema=_schema())
    if identity is not None:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                               IDENTITY_KEY: identity.encode("utf-8", "surrogatepass")})
    if typed:
        from ..predictive.typed_state import type_table

        table = type_table(table)[0]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{uuid.uuid4().hex}")
    pq.write_table(table, tmp, compression="zstd")
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return table.num_rows


def _glob(directory: str | os.PathLike[str]) -> str:
    return str(Path(directory) / "*.parquet")


def upload_identity(path: str | os.PathLike[str]) -> str | None:
    """The identity of the credential that uploaded the Parquet file ``path`` (None: not recorded)."""
    pq = require("pyarrow.parquet", "server")
    raw = (pq.read_schema(path).metadata or {}).get(IDENTITY_KEY)
    return None if raw is None else raw.decode("utf-8", "surrogatepass")


def select_uploads(directory: str | os.PathLike[str], identities: Iterable[str]) -> list[Path]:
    """The Parquet files under ``directory`` (its ``*.parquet``, in name order = ingest order) uploaded by one of
    ``identities``; a file without a recorded identity is never selected."""
    want = set(identities)
    return [f for f in sorted(Path(directory).glob("*.parquet")) if upload_identity(f) in want]


def _files_sql(files: Sequence[Path]) -> str:
    """A DuckDB list literal of file paths (ours, not client text; quotes escaped)."""
    return "[" + ", ".join("'" + str(f).replace("'", "''") + "'" for f in files) + "]"


def _connect(directory: str | os.PathLike[str]):
    duckdb = require("duckdb", "server")
    con = duckdb.connect(":memory:")
    d = Path(directory)
    if any(d.glob("*.parquet")):
        # DuckDB does not take parameters in DDL; the path is ours (not client input), quotes escaped.
        con.execute("CREATE VIEW traces AS SELECT * FROM read_parquet('"
                    + _glob(d).replace("'", "''") + "', union_by_name=true)")
    else:
        cols = ", ".join(
            f"CAST(NULL AS {t}) AS {c}" for c, t in zip(
                COLUMNS, ("VARCHAR", "VARCHAR", "INTEGER", "DOUBLE", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR",
                          "VARCHAR", "BOOLEAN")))
        con.execute(f"CREATE VIEW traces AS SELECT {cols} WHERE false")
    return con


def query(directory: str | os.PathLike[str], sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
    """Run DuckDB ``sql`` over the traces in ``directory`` (as the view ``traces``); rows as dicts.

    Only for operators and the learner: the HTTP service never passes client text to this function.
    """
    con = _connect(directory)
    try:
        cur = con.execute(sql, list(params or []))
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]
    finally:
        con.close()


def _load_json(v: str | None) -> Any:
    return None if v is None else loads(v)


def load_traces(directory: str | os.PathLike[str], *, run_ids: Sequence[str] | None = None,
                unsafe: bool | None = None, limit: int | None = None,
                identities: Iterable[str] | None = None) -> list[Trace]:
    """Read the stored traces back as :class:`~agentguard.core.Trace` objects, in ingest order.

    Filters: ``run_ids`` (only those runs), ``unsafe`` (only runs with that label), ``limit`` (first n
    runs), ``identities`` (only files uploaded by those credentials' identities: :func:`select_uploads`).
    Tool-call actions come back as :class:`~agentguard.core.ToolCall`.
    """
    where: list[str] = []
    params: list[Any] = []
    if run_ids is not None:
        if not run_ids:
            return []
        where.append("run_id IN (" + ", ".join("?" * len(run_ids)) + ")")
        params += list(run_ids)
    if unsafe is not None:
        where.append("unsafe = ?")
        params.append(bool(unsafe))
    sql = ("SELECT run_id, labels, step, time, state, action, observation, output, signals, filename "
           "FROM read_parquet({files}, union_by_name=true, filename=true, file_row_number=true)")
    d = Path(directory)
    files = sorted(d.glob("*.parquet")) if identities is None else select_uploads(d, identities)
    if not files:
        return []
    pq = require("pyarrow.parquet", "server")
    typed = [f.name for f in files if "state_typed" in pq.read_schema(f).names]
    if typed:  # their states are not in the JSON column: refuse rather than give steps without a state
        raise InputError(f"{typed[0]} holds typed states (write_parquet(typed=True)); load_traces reads "
                         "JSON-text stores only: learn from it with 'agentguard learn --engine columnar'")
    sql = sql.format(files=_files_sql(files))
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY filename, file_row_number"
    duckdb = require("duckdb", "server")
    con = duckdb.connect(":memory:")
    try:
        rows = con.execute(sql, params).fetchall()
    finally:
        con.close()
    traces: dict[str, Trace] = {}
    order: list[str] = []
    for run_id, labels, step, t, state, action, obs, output, signals, _fn in rows:
        tr = traces.get(run_id)
        if tr is None:
            tr = traces[run_id] = Trace(run_id=run_id, labels=_load_json(labels) or {})
            order.append(run_id)
        if step is None or step < 0:
            continue
        a = _load_json(action)
        if isinstance(a, dict) and "name" in a and isinstance(a.get("arguments", {}), dict):
            a = ToolCall.from_dict(a)
        tr.steps.append(Step(state=_load_json(state), action=a, observation=_load_json(obs), output=output,
                             signals=_load_json(signals) or {}, time=float(t or 0.0)))
    out = [traces[r] for r in order]
    return out[:limit] if limit is not None else out


def _slot(run_id: str, owner: str | None = None) -> str:
    """A slot's key: SHA-256 of the run id (the markers' name since session 21), or of the owner's identity key and
    the run id for a namespaced slot."""
    text = run_id if owner is None else f"own\x00{owner}\x00{run_id}"
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class TraceConflict(InputError):
    """A run id this store already holds (or one repeated in a batch): a finished trace is ingested once."""


class TraceQuota(InputError):
    """A batch the uploading identity's trace quota does not hold (nothing of it is kept): ``status`` 413 when the
    batch alone is larger than the whole quota (it can never be stored), 429 when the identity's stored traces and
    this batch together would exceed it."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


#: what a stored run id costs an identity's quota besides its rows: its claim marker (a file: one inode and, on
#: most file systems, one block), so a batch of many empty traces is not free
MARKER_BYTES = 4096


class TraceStore:
    """Append-only Parquet trace store in one directory (several processes may write at once).

    A run id is stored once: :func:`load_traces` joins a run's rows by its id, so a second batch naming a
    stored run (another client, a replayed request) would graft its steps onto that run, inventing the
    transition from its last state to the new first one (a client poisoning what the DTMC learns). Each
    run id is claimed before its batch is written (a slot in the ledger, :mod:`.trace_ledger`: the audit
    database's ``trace_claims`` for the service, shared by its replicas; ``O_EXCL`` markers under ``.runs/``
    without one; released if the write fails), and a batch naming a claimed id, or one id twice, is refused whole
    (:class:`TraceConflict`). Runs written before the markers existed are not claimed.

    ``namespaced`` (the service under ``run_binding = "identity"``, session 23): a slot is the identity's own, so
    no identity can take a run id ahead of another (before, any agent could upload first under a guessable run id
    and its owner's true trace was refused, 409). A batch claims ``(identity, run id)`` (a second upload of it by
    the same identity is the 409) and, when nobody holds it yet, the plain run id too: the trace is stored under
    its run id then, else under ``<run id>@<16 hex digits of SHA-256(identity)>`` (``@`` is in no client run id),
    so two identities' traces of one run id are two runs to every reader and never grafted. :meth:`add` sets each
    trace's ``run_id`` to the id it was stored under."""

    def __init__(self, directory: str | os.PathLike[str], quota_bytes: int | None = None, *,
                 ledger: Ledger | None = None, namespaced: bool = False) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._legacy = self.directory / ".runs"  # a database ledger still honours the markers written before it
        self.ledger: Ledger = ledger if ledger is not None else FileLedger(self.directory)
        self.quota_bytes = quota_bytes
        self.namespaced = namespaced
        self._sweep_pending()

    @classmethod
    def for_service(cls, settings: Any, engine: Any) -> "TraceStore":
        """The service's store: its state folder's traces, the ledger in the audit database ``engine`` (shared by
        the replicas), the identity's quota, slots namespaced under ``run_binding = "identity"``."""
        from .trace_ledger import DbLedger

        return cls(settings.traces_dir, settings.trace_quota_bytes, ledger=DbLedger(engine),
                   namespaced=settings.run_binding == "identity")

    #: a batch still pending after this long was left by a process that died between writing and charging it
    PENDING_MAX_AGE_S = 3600.0

    def _sweep_pending(self) -> None:
        """Delete batches left in ``.pending/`` by a process killed before it charged them (never charged, never
        visible: only disk). Only files older than :attr:`PENDING_MAX_AGE_S`, so another process's batch being
        written now is never touched."""
        now = time.time()
        for f in (self.directory / ".pending").glob("*"):
            try:
                if now - f.stat().st_mtime > self.PENDING_MAX_AGE_S:
                    f.unlink()
            except OSError:
                continue

    def _claim(self, traces: Sequence[Trace], identity: str | None) -> list[str]:
        """Claim the batch's slots; returns the keys claimed (to release if the batch is not kept) and sets each
        trace's ``run_id`` to the id it is stored under."""
        run_ids = [str(t.run_id) for t in traces]
        if len(set(run_ids)) != len(run_ids):
            dup = next(r for r in run_ids if run_ids.count(r) > 1)
            raise TraceConflict(f"run id {dup[:80]!r} appears twice in this batch: one trace per run")
        plain = [_slot(r) for r in run_ids]
        no_legacy = isinstance(self.ledger, FileLedger) or not self._legacy.is_dir()
        old = [not no_legacy and (self._legacy / k).exists() for k in plain]
        if self.namespaced:
            who = identity_key(identity)
            keys = [_slot(r, who) for r in run_ids]
            free = [k for k, o in zip(plain, old) if not o]
            got = self.ledger.claim(keys, free, identity)
        else:
            if any(old):
                got = old.index(True)
            else:
                keys, free = plain, []
                got = self.ledger.claim(keys, [], identity)
        if isinstance(got, int):
            raise TraceConflict(f"run {run_ids[got][:80]!r} is already stored: a finished trace is ingested once "
                                "(send a new run id)")
        won = dict(zip(free, got))
        for t, k in zip(traces, plain):
            if self.namespaced and not won.get(k, False):
                t.run_id = f"{t.run_id}@{identity_key(identity)[:16]}"
        return list(keys) + [k for k, g in won.items() if g]

    def add(self, traces: Sequence[Trace], identity: str | None = None) -> tuple[str, int]:
        """Write one batch, uploaded by ``identity`` (recorded in the file: :func:`upload_identity`); returns (file
        name, rows). Raises :class:`TraceConflict` for a run id already stored or repeated (nothing of the batch
        is written), :class:`TraceQuota` for a batch over the identity's quota."""
        if not traces:
            raise InputError("no traces to store")
        if self.quota_bytes is not None and self.used(identity) >= self.quota_bytes:  # cheap: before any work
            raise self._over(identity, 0)
        claimed = self._claim(traces, identity)
        # Nanosecond time first, so file-name order is ingest order (what load_traces returns).
        name = f"{time.time_ns():020d}-{uuid.uuid4().hex[:12]}.parquet"
        pending = self.directory / ".pending" / name  # not a *.parquet of the store until it is charged
        try:
            rows = write_parquet(pending if self.quota_bytes is not None else self.directory / name, traces,
                                 identity=identity)
            if self.quota_bytes is not None:
                cost = pending.stat().st_size + MARKER_BYTES * len(traces)
                if cost > self.quota_bytes or not self.ledger.charge(
                        identity, cost, self.quota_bytes, lambda: os.replace(pending, self.directory / name)):
                    raise self._over(identity, cost)
        except BaseException:
            pending.unlink(missing_ok=True)
            self.ledger.release(claimed)
            raise
        return name, rows

    # -- the per-identity quota ------------------------------------------------------------------------
    # Guaranteed (quota_bytes set; session 22, shared by replicas since session 23): the bytes an identity's kept
    # batches cost (each Parquet file's size plus MARKER_BYTES per run id) never exceed quota_bytes, whatever
    # processes write at once: the ledger's charge is one atomic check-and-add (.trace_ledger), and a batch becomes
    # visible (renamed from .pending/) only after it was charged. With the service's database ledger the count is
    # the deployment's, not a replica's: before, each replica's state folder counted its own, so N replicas on one
    # PostgreSQL allowed N quotas. The count only grows (a crash between the charge and the rename over-charges,
    # never under-charges).

    def used(self, identity: str | None) -> int:
        """The bytes ``identity``'s kept batches cost so far (0 when it has none)."""
        return self.ledger.used(identity)

    def _over(self, identity: str | None, cost: int) -> TraceQuota:
        q = int(self.quota_bytes or 0)
        if cost > q:
            return TraceQuota(f"this batch costs {cost} bytes of trace storage, more than the whole quota of an "
                              f"identity ({q} bytes, trace_quota_bytes): send it in smaller batches", 413)
        return TraceQuota(f"trace quota reached: this identity's stored traces and this batch exceed "
                          f"{q} bytes (trace_quota_bytes); ask the operator to archive them", 429)

    def load(self, **kw: Any) -> list[Trace]:
        return load_traces(self.directory, **kw)

    def query(self, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        return query(self.directory, sql, params)

    def summary(self) -> dict[str, Any]:
        """Runs, steps and unsafe runs stored, and the uploads (files) of each identity (``""``: not recorded)."""
        rows = self.query("SELECT count(DISTINCT run_id) AS runs, count(*) FILTER (WHERE step >= 0) AS steps, "
                          "count(DISTINCT run_id) FILTER (WHERE unsafe) AS unsafe_runs FROM traces")
        out: dict[str, Any] = {k: int(v or 0) for k, v in rows[0].items()}
        uploads: dict[str, int] = {}
        for f in sorted(self.directory.glob("*.parquet")):
            who = upload_identity(f) or ""
            uploads[who] = uploads.get(who, 0) + 1
        out["uploads_by_identity"] = uploads
        return out
