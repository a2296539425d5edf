"""Reading traces at volume for the DTMC learner: streamed JSONL and Parquet, DuckDB counting.

Memory does not grow with the file: each reader yields one run at a time (JSONL: one line; Parquet:
one record batch of at most ``batch_rows`` rows of one row group, runs cut at batch boundaries are carried over),
and :meth:`~agentguard.predictive.learn.DTMCLearner.add_file` abstracts each run as it comes and
counts transitions in vectorised batches. No list of :class:`~agentguard.core.types.Trace` objects
is ever built.

* :func:`iter_jsonl_runs`: the documented trace format (README "Trace format": one object a line,
  ``{"run_id", "labels", "steps": [{"state": ...}, ...]}``), parsed with orjson when installed;
  errors name the file and line, as :func:`~agentguard.core.types.read_traces` does.
* :func:`iter_parquet_runs`: the service's trace store (``agentguard.server.traces``: one row per
  step, ``run_id``, ``step``, ``state`` as JSON text; ``step = -1`` marks a run without steps), a
  file or a folder of ``*.parquet`` files read in name order (= ingest order), with PyArrow. Within
  a batch, identical state texts are parsed and abstracted once (dictionary encoding), so the cost
  follows the distinct states, not the rows. A file with a typed ``state_typed`` column
  (:mod:`.typed_state`) gives its typed rows' states from that column. The rows of a run must be one
  block numbered 0, 1, 2, ... in file order (:data:`STEP_RULE`; the store writes each finished run so);
  anything else is an InputError naming the run and step, in this reader and in the columnar engine.
  The same ``run_id`` again in a later block, numbered from 0, is another trace. Column types are
  checked per file and cast alike for every engine (``run_id`` text or integers, never null; ``step``
  integers or whole floats; ``state`` JSON text): one model or one InputError, whatever engine.
* :func:`abstract_parquet` and :func:`duckdb_counts`: when the data outgrows one process. The
  abstraction is a per-row map (any engine can run it per file: Spark ``mapInPandas``, Ray Data
  ``map_batches``, or this function per file on several machines), writing ``run_id, step, state``
  with the abstract state; the transition counts are then one SQL aggregation with a window
  (``lead(state) OVER (PARTITION BY run_id ORDER BY step)``) that DuckDB runs out of core over a
  Parquet folder on one machine, and that runs unchanged as Spark SQL over a distributed folder.
  The counts go into the learner with :meth:`~agentguard.predictive.learn.DTMCLearner.add_counts`.

PyArrow and DuckDB are imported on first use (the ``server`` extra).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..core.errors import InputError, require
from ..spec.history import NO_STATE_HINT
from .typed_state import STATE_TYPED, infer_state_type, type_table, typed_values

__all__ = ["abstract_parquet", "add_jsonl_runs", "duckdb_counts", "iter_jsonl_runs", "iter_parquet_runs",
           "parquet_files", "write_typed_parquet"]

Run = tuple[str, list[Any]]

#: the one rule every engine applies to Parquet trace rows (row engines in row order, window engines
#: by ``ORDER BY step``): a run is one block of rows numbered 0, 1, 2, ... in order, or one row with
#: step -1 (or null) for a run without steps. Out-of-order, duplicated or missing steps, or a run
#: continued in a later block, are refused: the row engines (file order) and the window engines
#: (step order) would otherwise count different transitions from the same file.
STEP_RULE = "the rows of a run must be one block numbered 0, 1, 2, ... in order"


def step_error(rid: Any, step: Any, prev: Any) -> InputError:
    """The one message for a row that breaks :data:`STEP_RULE`."""
    after = "at the start of the run" if prev is None else f"after step {prev}"
    return InputError(f"trace {rid}: step {step} {after}: {STEP_RULE}")


def _loads() -> Callable[[bytes], Any]:
    try:
        import orjson

        return orjson.loads
    except ImportError:  # pragma: no cover - orjson is in the server extra
        return json.loads


def iter_jsonl_runs(path: str | os.PathLike[str], where: list[str] | None = None) -> Iterator[Run]:
    """Yield ``(run_id, states)`` for each line of a JSONL trace file, one line in memory at a time.

    Same checks and messages as :func:`agentguard.core.types.read_traces` and ``Trace.from_dict``
    (``run_id`` defaults to the line number here, not a random id, so errors are reproducible); each
    message of this reader starts with ``FILE:LINE:``. ``where``: a list this reader keeps holding
    ``["FILE:LINE", run_id]`` of the run last yielded, so a consumer can say where a run it refuses is.
    """
    loads = _loads()
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise InputError(f"cannot read trace file {path}: {exc.strerror}") from None
    seen = False
    with fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                d = loads(line)
            except ValueError as exc:
                msg = getattr(exc, "msg", None) or str(exc).split(":")[0]
                raise InputError(f"{path}:{lineno}: not valid JSON ({msg})") from None
            if not isinstance(d, dict) or not isinstance(d.get("steps"), list):
                raise InputError(f"{path}:{lineno}: a trace must be an object with a 'steps' list")
            # two scans of the line and a memchr-fast search (measured: about a quarter of orjson's time
            # on the 3.7 kB microwave lines); a run_id twice only renames the run, so it is checked
            # only on the lines that go to the slow path anyway
            if b"\\u" in line or line.count(b'"steps"') > 1 or line.count(b'"state"') > len(d["steps"]):
                twice = _keys_twice(line)  # rare: the parse above kept the last one silently
                if twice:
                    raise InputError(f"{path}:{lineno}: {twice} given twice")
            rid = str(d.get("run_id") or f"line-{lineno}")
            states = []
            for i, s in enumerate(d["steps"]):
                if not isinstance(s, dict):
                    raise InputError(f"{path}:{lineno}: step {i} of trace {d.get('run_id', '?')} is not an object")
                states.append(s.get("state"))
            seen = True
            if where is not None:
                where[:] = [f"{path}:{lineno}", rid]
            yield rid, states
    if not seen:
        raise InputError(f"trace file {path} is empty")


def add_jsonl_runs(add_runs: Callable[[Iterator[Run], Any], Any], path: str | os.PathLike[str],
                   batch_states: Any) -> Any:
    """``add_runs(iter_jsonl_runs(path), batch_states)``, where an :class:`InputError` about the run being added
    (``trace RUN_ID ...``: a step without a state, a state a predicate cannot read) names its line too:
    ``FILE:LINE: trace RUN_ID step 3: ...``, as this reader's own messages do."""
    where: list[str] = []
    try:
        return add_runs(iter_jsonl_runs(path, where), batch_states)
    except InputError as exc:
        if len(where) == 2 and str(exc).startswith(f"trace {where[1]} "):
            raise InputError(f"{where[0]}: {exc}") from None
        raise


def _keys_twice(line: bytes) -> str | None:
    """What a trace line gives twice, in the trace object or in one of its steps (``"steps"`` or a
    step's ``"state"`` twice: which was meant?), or None. Only lines that may have one get here: a key
    spelt more often than it can be, or spelt with an escape. Keys inside states keep the parser's
    rule (the last one wins), as every engine reads them."""
    built: dict[int, list[tuple[str, Any]]] = {}

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        d = dict(pairs)
        built[id(d)] = pairs
        return d

    top = json.loads(line, object_pairs_hook=hook)
    if not isinstance(top, dict):
        return None
    objs = [("the trace", top)] + [(f"step {i}", s) for i, s in enumerate(top.get("steps") or [])
                                   if isinstance(s, dict)]
    for where, o in objs:
        keys = [k for k, _ in built.get(id(o), [])]
        twice = sorted({k for k in keys if keys.count(k) > 1})
        if twice:
            return f"key {twice[0]!r} of {where} is"
    return None


def parquet_files(path: str | os.PathLike[str]) -> list[Path]:
    """The Parquet files at ``path`` (a file, or a folder's ``*.parquet`` in name order)."""
    p = Path(path)
    if p.is_dir():
        files = sorted(p.glob("*.parquet"))
        if not files:
            raise InputError(f"no *.parquet files in {path}")
        return files
    if not p.is_file():
        raise InputError(f"cannot read trace file {path}: not found")
    return [p]


def _batches(path: str | os.PathLike[str], columns: list[str], batch_rows: int,
             extra: Callable[[Any], list[str]] | None = None) -> Iterator[Any]:
    """Record batches of ``columns``, one row group at a time, with flat memory.

    Measured on the service schema (600-byte JSON states, 20,000-row groups): the default
    ``iter_batches`` over a whole file (pre-buffering, reader threads) let the peak RSS creep up
    with every row group (133 -> 209 MB over one 200,000-row file, Arrow's pool peaking at
    50-69 MB); reading each row group on its own, single-threaded, without pre-buffering, and
    returning the pool's freed pages after it keeps the pool under 12 MB and the RSS flat
    (112 MB after 10^5 or 2x10^5 rows). ``extra``: more (dotted, nested) columns to read, from a
    file's Parquet schema (the typed state leaves of :mod:`.columnar_typed`)."""
    pa = require("pyarrow", "server")
    pool = pa.default_memory_pool()
    for read, _ in _row_groups(path, columns, batch_rows, extra):
        yield from read()
        pool.release_unused()


def _row_groups(path: str | os.PathLike[str], columns: list[str], batch_rows: int,
                extra: Callable[[Any], list[str]] | None = None) -> Iterator[tuple[Callable[[], Iterator[Any]], int]]:
    """``(reader, rows)`` per row group (files in name order): a callable iterating over that row
    group's record batches, safe to call on another thread (each opens its file), and the group's
    row count. String leaves of ``extra`` are read dictionary-encoded (Parquet stores them so; half
    the decoding time of the typed leaves)."""
    pq = require("pyarrow.parquet", "server")
    for f in parquet_files(path):
        try:
            pf = pq.ParquetFile(f, pre_buffer=False)
        except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for a bad file
            raise InputError(f"{f}: not a readable Parquet file ({type(exc).__name__})") from None
        missing = [c for c in columns if c not in pf.schema_arrow.names]
        if missing:
            raise InputError(f"{f}: Parquet traces need columns {columns}; missing {missing}")
        _check_types(f, pf.schema_arrow)
        more = extra(pf.schema) if extra is not None else []
        kinds = {pf.schema.column(i).path: pf.schema.column(i).physical_type for i in range(len(pf.schema))}
        dict_cols = [c for c in more if kinds.get(c) == "BYTE_ARRAY"]
        sizes = [pf.metadata.row_group(g).num_rows for g in range(pf.metadata.num_row_groups)]
        pf.close()
        for g, rows in enumerate(sizes):
            yield _reader(f, columns + more, dict_cols, g, batch_rows), rows


def _reader(f: Path, cols: list[str], dict_cols: list[str], g: int, batch_rows: int) -> Callable[[], Iterator[Any]]:
    def read() -> Iterator[Any]:
        pq = require("pyarrow.parquet", "server")
        pf = pq.ParquetFile(f, pre_buffer=False, read_dictionary=dict_cols or None)
        try:
            for batch in pf.iter_batches(batch_size=batch_rows, columns=cols, row_groups=[g], use_threads=False):
                yield _normalize(f, batch)
        finally:
            pf.close()
    return read


def _base(t: Any) -> Any:
    pa = require("pyarrow", "server")
    return t.value_type if pa.types.is_dictionary(t) else t


def _check_types(f: Path, schema: Any) -> None:
    """The trace columns' types, per file (files may drift: one written by the service, the next by
    pandas): ``run_id`` text or integers, ``step`` integers (or floats, cast only where whole),
    ``state`` JSON text (UTF-8 bytes are read as text). Anything else is an InputError naming the
    file and the type, the same for every engine, never a crash of one engine or a guess."""
    pa = require("pyarrow", "server")
    t = pa.types
    text = (t.is_string, t.is_large_string, t.is_string_view)
    kinds = {"run_id": (*text, t.is_integer), "step": (t.is_integer, t.is_floating),
             "state": (*text, t.is_binary, t.is_large_binary, t.is_binary_view, t.is_null)}
    what = {"run_id": "text or integers", "step": "whole numbers", "state": "JSON text"}
    for col, ok in kinds.items():
        if col not in schema.names:
            continue
        typ = _base(schema.field(col).type)
        if not any(k(typ) for k in ok) or (col == "step" and t.is_boolean(typ)):
            raise InputError(f"{f}: column {col} must hold {what[col]}, not {typ}")


def _normalize(f: Path, batch: Any) -> Any:
    """One batch in the types every engine reads (see :func:`_check_types`): ``run_id`` as text,
    ``step`` as int64 (a float that is not whole, NaN or beyond int64 is refused), ``state`` as text.
    A row without a ``run_id`` is refused: its step belongs to no run, and dropping it would learn
    from less data than the file holds without a word (fail closed)."""
    pa = require("pyarrow", "server")
    pc = require("pyarrow.compute", "server")
    t = pa.types
    cols = list(batch.columns)
    names = batch.schema.names
    for k, name in enumerate(names):
        a = cols[k]
        typ = _base(a.type)
        try:
            if name == "run_id":
                if a.null_count:
                    raise InputError(f"{f}: {a.null_count} row(s) without a run_id: every step must name its run")
                if t.is_dictionary(a.type) or not t.is_string(typ):
                    cols[k] = pc.cast(a, pa.string())
            elif name == "step" and a.type != pa.int64():
                cols[k] = pc.cast(a, pa.int64())
            elif name == "state" and (t.is_dictionary(a.type) and not t.is_string(typ) or
                                      t.is_binary(typ) or t.is_large_binary(typ) or t.is_binary_view(typ)
                                      or t.is_string_view(typ) or t.is_null(typ)):
                cols[k] = pc.cast(a, pa.string())
        except pa.ArrowInvalid as exc:
            raise InputError(f"{f}: column {name}: {str(exc).splitlines()[0]}") from None
    return pa.RecordBatch.from_arrays(cols, names=names)


def iter_parquet_runs(path: str | os.PathLike[str], abstract: Callable[[Any], str] | None = None,
                      batch_rows: int = 8_192) -> Iterator[Run]:
    """Yield ``(run_id, states)`` per run from Parquet traces (see the module docstring).

    With ``abstract`` (a state -> bit string function such as ``Abstraction.abstractor()``), the
    states come back already abstracted, each distinct state text of a batch parsed and abstracted
    once; errors name the run and step.
    """
    pc = require("pyarrow.compute", "server")
    loads = _loads()
    cur_id: str | None = None
    cur: list[Any] = []
    prev: int | None = None
    seen = 0  # rows before this batch
    for batch in _batches(path, ["run_id", "step", "state"], batch_rows, _typed_leaf):
        ids = batch.column(0).to_pylist()
        steps = batch.column(1).to_pylist()
        enc = pc.dictionary_encode(batch.column(2))
        texts = enc.dictionary.to_pylist()
        codes = enc.indices.to_pylist()
        typed = _typed(batch)
        values: list[Any] = [None] * len(texts)
        done = [False] * len(texts)
        for i, (rid, step, code) in enumerate(zip(ids, steps, codes)):
            if rid != cur_id or i + seen == 0:
                if cur_id is not None:
                    yield cur_id, cur
                cur_id, cur = rid, []
                if rid is not None and step is not None and step not in (0, -1):
                    raise step_error(rid, step, None)
            elif rid is not None and (prev is None or prev < 0 or step != prev + 1):
                raise step_error(rid, step, prev)
            prev = step
            if step is None or step < 0:
                continue
            if code is None:
                state = typed[i] if typed is not None else None
                if abstract is not None and state is not None:
                    try:
                        state = abstract(state)
                    except InputError as exc:
                        raise InputError(f"trace {rid} step {step}: {exc}") from None
                cur.append(state)
                continue
            if not done[code]:
                try:
                    state = loads(texts[code])
                except ValueError:
                    raise InputError(f"trace {rid} step {step}: state is not valid JSON") from None
                if abstract is not None and state is not None:
                    try:
                        state = abstract(state)
                    except InputError as exc:
                        raise InputError(f"trace {rid} step {step}: {exc}") from None
                values[code], done[code] = state, True
            cur.append(values[code])
        seen += len(ids)
    if cur_id is not None:
        yield cur_id, cur


def _typed_leaf(schema: Any) -> list[str]:
    """``state_typed`` when a file has the typed state column (:mod:`.typed_state`)."""
    return [STATE_TYPED] if STATE_TYPED in schema.to_arrow_schema().names else []


def _typed(batch: Any) -> list[Any] | None:
    if STATE_TYPED not in batch.schema.names:
        return None
    return typed_values(batch.column(STATE_TYPED))


def abstract_parquet(src: str | os.PathLike[str], dst: str | os.PathLike[str],
                     abstract: Callable[[Any], str], batch_rows: int = 8_192) -> int:
    """The map step: write ``run_id, step, state`` (the abstract state) for every step in ``src``.

    ``dst`` is a Parquet file; run it per input file (on as many processes or machines as you like)
    to fill a folder for :func:`duckdb_counts`. Returns the number of rows written.
    """
    pa = require("pyarrow", "server")
    pq = require("pyarrow.parquet", "server")
    schema = pa.schema([("run_id", pa.string()), ("step", pa.int64()), ("state", pa.string())])
    rows = 0
    with pq.ParquetWriter(str(dst), schema, compression="zstd") as w:
        ids: list[str] = []
        steps: list[int] = []
        states: list[str] = []
        for rid, bits in iter_parquet_runs(src, abstract, batch_rows):
            for k, b in enumerate(bits):
                if b is None:
                    raise InputError(f"trace {rid} step {k} has no 'state'{NO_STATE_HINT}")
                ids.append(rid)
                steps.append(k)
                states.append(b)
            if len(ids) >= batch_rows:
                w.write_table(pa.table([ids, steps, states], schema=schema))
                rows += len(ids)
                ids, steps, states = [], [], []
        if ids:
            w.write_table(pa.table([ids, steps, states], schema=schema))
            rows += len(ids)
    return rows


def duckdb_counts(path: str | os.PathLike[str], terminal: str | None = None,
                  memory_limit: str = "512MB") -> dict[str, Any]:
    """Transition and initial-state counts of abstract paths stored as Parquet, computed by DuckDB.

    ``path``: a Parquet file or folder with columns ``run_id, step, state`` (abstract states, as
    :func:`abstract_parquet` writes). ``terminal``: a state appended after each run's last step (as
    the learner does). DuckDB runs with ``memory_limit`` and spills to disk beyond it. Returns
    ``{"src": [...], "dst": [...], "count": [...], "initial": {state: n}, "runs": n}``.
    """
    duckdb = require("duckdb", "server")
    files = [str(f).replace("'", "''") for f in parquet_files(path)]
    src = "read_parquet([" + ", ".join(f"'{f}'" for f in files) + "])"
    con = duckdb.connect(":memory:")
    try:
        con.execute(f"SET memory_limit = '{memory_limit}'")
        con.execute("SET preserve_insertion_order = false")
        # the last step of a run goes to the terminal state, unless it is the terminal state
        dst = "nxt" if terminal is None else "coalesce(nxt, CASE WHEN state <> $t THEN $t END)"
        params = {} if terminal is None else {"t": terminal}
        sql = (f"SELECT src, dst, count(*) AS n FROM (SELECT state AS src, {dst} AS dst FROM (SELECT state, "
               f"lead(state) OVER (PARTITION BY run_id ORDER BY step) AS nxt FROM {src})) "
               "WHERE dst IS NOT NULL GROUP BY ALL")
        bad = con.execute(f"SELECT run_id, count(*), count(DISTINCT step), min(step), max(step) FROM {src} "
                          "WHERE step >= 0 GROUP BY run_id HAVING count(*) <> count(DISTINCT step) "
                          "OR min(step) <> 0 OR max(step) <> count(*) - 1 LIMIT 1").fetchall()
        nulls = con.execute(f"SELECT count(*) FROM {src} WHERE run_id IS NULL").fetchone()
        if nulls and nulls[0]:
            raise InputError(f"{path}: {nulls[0]} row(s) without a run_id: every step must name its run")
        if bad:
            rid, n, distinct, lo, hi = bad[0]
            raise InputError(f"trace {rid}: {n} rows with {distinct} distinct steps from {lo} to {hi}: {STEP_RULE}")
        pairs = con.execute(sql, params).fetchall()
        first = con.execute(f"SELECT state, count(*) FROM (SELECT arg_min(state, step) AS state FROM {src} "
                            "GROUP BY run_id) GROUP BY ALL").fetchall()
    except duckdb.Error as exc:
        raise InputError(f"DuckDB could not count transitions in {path}: {exc}") from None
    finally:
        con.close()
    return {"src": [p[0] for p in pairs], "dst": [p[1] for p in pairs], "count": [int(p[2]) for p in pairs],
            "initial": {s: int(n) for s, n in first}, "runs": int(sum(n for _, n in first))}


def write_typed_parquet(src: str | os.PathLike[str], dst: str | os.PathLike[str], sample: int = 10_000,
                        row_group: int = 20_000) -> dict[str, Any]:
    """Convert JSON-text Parquet traces (a file or a folder, the service's schema) to typed ones.

    The struct type is inferred from the first ``sample`` parseable states; ``dst`` is a folder that
    gets one file per input file, every column kept and ``state_typed`` added (``state`` is null
    where the state is typed; no typed column when no state gives a type). Returns
    ``{"rows", "typed", "text"}``."""
    pq = require("pyarrow.parquet", "server")
    loads = _loads()
    files = parquet_files(src)
    seen: list[Any] = []
    for f in files:
        for b in pq.ParquetFile(f).iter_batches(columns=["state"], batch_size=sample):
            for text in b.column(0).to_pylist():
                try:
                    seen.append(loads(text) if text is not None else None)
                except ValueError:
                    continue
            if len(seen) >= sample:
                break
        if len(seen) >= sample:
            break
    typ = infer_state_type(seen[:sample])
    out = Path(dst)
    out.mkdir(parents=True, exist_ok=True)
    stats = {"rows": 0, "typed": 0, "text": 0}
    for f in files:
        table = pq.read_table(f)
        n = table.num_rows
        if typ is not None:  # else no state to infer a type from: all text, as before
            table, typed = type_table(table, typ)
            stats["typed"] += typed
        stats["rows"] += n
        pq.write_table(table, out / f.name, compression="zstd", row_group_size=row_group)
    stats["text"] = stats["rows"] - stats["typed"]
    return stats
