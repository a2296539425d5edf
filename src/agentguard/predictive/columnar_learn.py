"""The columnar learning path: Parquet traces -> abstract paths -> counts, without a Python call per step.

:func:`learn_parquet_columnar` is what ``DTMCLearner.add_file(path, engine="columnar")`` runs. A
small thread pool reads each row group (files in name order) and runs the DuckDB projection and
the column-wise predicates of :mod:`.columnar` on it, several row groups at once (Parquet, DuckDB
and Arrow release the GIL; at most twice as many row groups as threads in flight, so memory stays
flat), and the batches are consumed in order:
bit codes, run boundaries (a change of ``run_id`` between adjacent rows, carried across batches and
files, as :func:`~.trace_stream.iter_parquet_runs` cuts runs) and index paths for
:meth:`~.learn.DTMCLearner.add_index_paths`. States are registered in the order of their first
appearance, as the row path registers them, so the learned DTMC is the same object, not only the
same counts. (A first version let one DuckDB query scan all files; its streamed result was
buffered whole, 1 GB of RSS at 10^6 steps.)

Files with a typed state column (:mod:`.typed_state`) are read through :mod:`.columnar_typed`:
only the leaves the predicates name, each distinct projected state abstracted once by the row
path's abstractor; their rows stored as text (states that did not fit) take the DuckDB path below.

Rows the columnar plan is not certain about (see :mod:`.columnar`) go through the row path's
``Abstraction.abstractor()`` on ``orjson.loads(state)``, one at a time, and are counted in the
returned statistics (``fallback_rows``); a spec with predicates outside the vectorised subset sends
every row there (``fallback_predicates`` names them and why).

:class:`BatchAbstractor` is the per-batch step on its own (an Arrow table of ``run_id, step,
state`` -> bit codes); the Spark engine (:mod:`.spark`) runs it inside ``mapInArrow``.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.errors import InputError, require
from ..spec.predicates import Abstraction
from .columnar import ColumnarPlan, compile_columnar
from .columnar_typed import _valid, typed_codes, typed_columns
from .trace_stream import _loads, _row_groups, step_error
from .typed_state import STATE_TYPED, typed_values

__all__ = ["BatchAbstractor", "learn_parquet_columnar"]

TERM = -1  # the code of the terminal state in index paths


@dataclass
class BatchAbstractor:
    """Bit codes of a batch of steps, vectorised where certain and by the row path elsewhere."""

    abstraction: Abstraction
    plan: ColumnarPlan = field(init=False)
    fallback_rows: int = 0
    rows: int = 0

    def __post_init__(self) -> None:
        self.plan = compile_columnar(self.abstraction)
        self._row = self.abstraction.abstractor()
        self._loads = _loads()
        self._checked: set[int] = set()
        self._local = threading.local()

    def select(self, state: str = "state") -> str:
        return self.plan.sql(state)

    def project(self, table: Any) -> tuple[np.ndarray, np.ndarray]:
        """(codes, uncertain) of an Arrow table or record batch with a ``state`` column (and maybe a
        typed ``state_typed`` one: :mod:`.columnar_typed`, once per distinct state): the DuckDB
        projection of the JSON texts (a connection per thread) and the vectorised predicates; no
        Python per row, safe to run on several threads at once."""
        pa = require("pyarrow", "server")
        tbl = pa.Table.from_batches([table]) if isinstance(table, pa.RecordBatch) else table
        if STATE_TYPED not in tbl.schema.names:
            return self._project_text(tbl)
        codes, unc, typed = typed_codes(self.plan, self._row, tbl.column(STATE_TYPED))
        text = np.flatnonzero(~typed)
        if text.size:
            c2, u2 = self._project_text(tbl.take(pa.array(text)))
            codes[text], unc[text] = c2, u2
        return codes, unc

    def _project_text(self, tbl: Any) -> tuple[np.ndarray, np.ndarray]:
        duckdb = require("duckdb", "server")
        con = getattr(self._local, "con", None)
        if con is None:
            con = self._local.con = duckdb.connect(":memory:")
            con.execute("SET enable_progress_bar = false")
            con.execute("SET threads = 1")
        con.register("batch_in", tbl.select(["state"]))
        try:
            out = con.sql(f"SELECT {self.select()} FROM batch_in").to_arrow_table()
        finally:
            con.unregister("batch_in")
        return self.plan.evaluate(*(out.column(i).combine_chunks() for i in range(3)))

    def table_codes(self, table: Any) -> np.ndarray:
        """Codes of an Arrow table (or record batch) with columns ``run_id, step, state``: :meth:`project`
        then :meth:`finish` (what a Spark ``mapInArrow`` task runs)."""
        return self.finish(table, *self.project(table))

    def finish(self, table: Any, codes: np.ndarray, unc: np.ndarray) -> np.ndarray:
        """The row path for the uncertain rows of ``table``, then the feasibility checks (in order)."""
        pc = require("pyarrow.compute", "server")
        steps = np.asarray(pc.fill_null(table.column("step"), -1).to_numpy(zero_copy_only=False), np.int64)
        typed = _col(table, STATE_TYPED) if STATE_TYPED in table.schema.names else None
        return self.codes(_col(table, "run_id"), steps, _col(table, "state"), codes, unc, typed)

    def codes(self, ids: Any, steps: np.ndarray, states: Any, codes: np.ndarray, unc: np.ndarray,
              typed: Any = None) -> np.ndarray:
        """Codes of the rows (``states``: the JSON texts, ``typed``: the typed column if any, used for
        the rows that fall back).

        Rows whose step is negative or null carry no state (code 0, ignored by the caller). Raises
        the row path's InputError for a bad row (invalid JSON, a failing predicate, an infeasible
        state), naming the run and step as the row path does."""
        live = steps >= 0
        unc &= live
        self.rows += int(live.sum())
        idx = np.flatnonzero(unc)
        self.fallback_rows += idx.size
        self.last_fallback = idx
        w = self.abstraction.width
        for i in idx.tolist():
            text = states[i].as_py() if hasattr(states, "__getitem__") else None
            rid, step = _id(ids, i), int(steps[i])
            if text is None and typed is not None and typed[i].is_valid:
                state = typed_values(typed.slice(i, 1))[0]
            elif text is None:
                codes[i] = -2  # no state: the caller raises with the run's step number
                continue
            else:
                try:
                    state = self._loads(text)
                except ValueError:
                    raise InputError(f"trace {rid} step {step}: state is not valid JSON") from None
            if state is None:
                codes[i] = -2
                continue
            try:
                codes[i] = int(self._row(state), 2)
            except InputError as exc:
                raise InputError(f"trace {rid} step {step}: {exc}") from None
        for c in np.unique(codes[live & ~unc]).tolist():
            if c not in self._checked:
                try:
                    self.abstraction.check_state(format(c, f"0{w}b"))
                except InputError as exc:
                    i = int(np.flatnonzero(live & ~unc & (codes == c))[0])
                    raise InputError(f"trace {_id(ids, i)} step {int(steps[i])}: {exc}") from None
                self._checked.add(c)
        return codes


def _col(table: Any, name: str) -> Any:
    c = table.column(name)
    return c.combine_chunks() if hasattr(c, "combine_chunks") else c


def _id(ids: Any, i: int) -> Any:
    v = ids[i]
    return v.as_py() if hasattr(v, "as_py") else v


@dataclass
class _Runs:
    """Cuts a stream of (run id, step, code) batches into runs and feeds the learner: a run ends where
    ``run_id`` changes between adjacent rows (the reader refuses null ids: ``trace_stream._normalize``;
    were one to come, null ids compare equal to each other and their rows are dropped)."""

    learner: Any
    width: int
    carry_id: Any = None
    carry_null: bool = False
    carry_started: bool = False
    carry_step: int = -1
    carry_codes: list[np.ndarray] = field(default_factory=list)
    runs: int = 0
    lut: np.ndarray | None = None

    def feed(self, ids: Any, steps: np.ndarray, codes: np.ndarray, last: bool = False) -> None:
        n = len(codes)
        if n:
            pc = require("pyarrow.compute", "server")
            nulls = ~_valid(ids)
            filled = pc.fill_null(ids, "")
            new = np.zeros(n, bool)
            if n > 1:
                ne = pc.not_equal(filled.slice(1), filled.slice(0, n - 1)).to_numpy(zero_copy_only=False)
                new[1:] = np.asarray(ne, bool) | (nulls[1:] != nulls[:-1])
            first = ids[0].as_py()
            new[0] = (not self.carry_started or bool(nulls[0]) != self.carry_null
                      or (not nulls[0] and first != self.carry_id))
            _check_steps(ids, steps, new, nulls, self.carry_step)
            self.carry_step = int(steps[-1])
            live = steps >= 0
            starts = np.flatnonzero(new)
            head = int(starts[0]) if starts.size else n
            if head:
                self.carry_codes.append(codes[:head][live[:head]])
            if starts.size:
                self._flush_carry()
                lo, hi = int(starts[0]), int(starts[-1])
                run_no = np.cumsum(new[lo:hi]) - 1
                lv = live[lo:hi]
                k = starts.size - 1
                lengths = np.bincount(run_no[lv], minlength=k) if k else np.zeros(0, np.int64)
                self._add(codes[lo:hi][lv], lengths, _Ids(ids, starts[:-1]), nulls[starts[:-1]])
                self.carry_id, self.carry_null, self.carry_started = _id(ids, hi), bool(nulls[hi]), True
                self.carry_codes = [codes[hi:][live[hi:]]]
        if last:
            self._flush_carry()

    def _flush_carry(self) -> None:
        if not self.carry_started:
            return
        flat = np.concatenate(self.carry_codes) if self.carry_codes else np.zeros(0, np.int64)
        self._add(flat, np.array([flat.size]), _Ids([self.carry_id], np.zeros(1, np.int64)),
                  np.array([self.carry_null]))
        self.carry_started, self.carry_codes = False, []

    def _add(self, flat: np.ndarray, lengths: np.ndarray, r_ids: _Ids, r_null: np.ndarray) -> None:
        if not len(r_ids):
            return
        keep_run = ~np.asarray(r_null, bool)  # the row path drops rows without a run id
        if not keep_run.all():
            owner = np.repeat(np.arange(len(r_ids)), lengths)
            flat = flat[keep_run[owner]]
            lengths = lengths[keep_run]
            r_ids = r_ids.subset(keep_run)
        if not len(r_ids):
            return
        bad = np.flatnonzero(flat == -2)
        if bad.size:  # a step without a state: add_runs' message, with the step's place in its run
            offsets = np.concatenate([[0], np.cumsum(lengths)])
            run = int(np.searchsorted(offsets, bad[0], side="right") - 1)
            raise InputError(f"trace {r_ids[run]} step {int(bad[0] - offsets[run])} has no 'state'")
        if (lengths == 0).any():
            raise InputError(f"trace {r_ids[int(np.flatnonzero(lengths == 0)[0])]} has no steps")
        terminal = self.learner.terminal
        if terminal is not None:  # the terminal state after every run, as add_paths appends it
            out = np.empty(flat.size + lengths.size, np.int64)
            ends = np.cumsum(lengths + 1) - 1
            mask = np.ones(out.size, bool)
            mask[ends] = False
            out[mask] = flat
            out[ends] = TERM
            flat, lengths = out, lengths + 1
        self.learner.add_index_paths(self._indices(flat, terminal), lengths)
        self.runs += len(r_ids)

    def _indices(self, flat: np.ndarray, terminal: str | None) -> np.ndarray:
        """The learner's state indices of bit codes, states registered in order of first appearance
        (a lookup table over all codes for up to 20 predicates, else a sort)."""
        if self.width <= 20:
            if self.lut is None:
                self.lut = np.full((1 << self.width) + 1, -1, np.int64)  # slot 0: the terminal state
            new = self.lut[flat + 1] < 0
            if new.any():
                uniq, first = np.unique(flat[new], return_index=True)
                for c in uniq[np.argsort(first, kind="stable")].tolist():
                    self.lut[c + 1] = self.learner._register(terminal if c == TERM else format(c, f"0{self.width}b"))
            return self.lut[flat + 1]
        uniq, first, inv = np.unique(flat, return_index=True, return_inverse=True)
        idx = np.empty(uniq.size, np.int64)
        for k in np.argsort(first, kind="stable").tolist():
            c = int(uniq[k])
            idx[k] = self.learner._register(terminal if c == TERM else format(c, f"0{self.width}b"))
        return idx[inv.ravel()]


class _Ids:
    """The run ids at positions ``at`` of an id column, read only when a message needs one."""

    def __init__(self, ids: Any, at: np.ndarray) -> None:
        self.ids, self.at = ids, np.asarray(at, np.int64)

    def __len__(self) -> int:
        return int(self.at.size)

    def __getitem__(self, k: int) -> Any:
        return _id(self.ids, int(self.at[k]))

    def subset(self, keep: np.ndarray) -> _Ids:
        return _Ids(self.ids, self.at[keep])


def learn_parquet_columnar(learner: Any, path: str | os.PathLike[str], batch_rows: int = 1 << 16,
                           threads: int | None = None) -> dict[str, Any]:
    """Feed ``learner`` (a :class:`~.learn.DTMCLearner` with an abstraction) from Parquet traces.

    Each row group is read and projected by a task of a pool of ``threads`` (default: the CPU
    count; ``trace_stream._row_groups``: files in name order), at most ``2 * threads`` row groups in
    flight, consumed in order.
    Returns statistics: ``rows`` (steps abstracted), ``fallback_rows`` (steps the row path
    abstracted), ``fallback_predicates`` (predicate -> reason, when the spec cannot be vectorised),
    ``runs``."""
    if learner.abstraction is None:
        raise InputError("the columnar engine needs an abstraction")
    ab = BatchAbstractor(learner.abstraction)
    runs = _Runs(learner, learner.abstraction.width)
    n = max(1, threads or os.cpu_count() or 1)
    window: deque[Any] = deque()
    pending = None

    def task(read: Any) -> list[tuple[Any, tuple[np.ndarray, np.ndarray]]]:
        return [(b, ab.project(b)) for b in read()]

    def drain(fut: Any) -> None:
        nonlocal pending
        for batch, projected in fut.result():
            codes = ab.finish(batch, *projected)
            if pending is not None:
                runs.feed(*pending)
            pending = (_col(batch, "run_id"), np.asarray(_steps(batch)), codes)

    with ThreadPoolExecutor(n, thread_name_prefix="agentguard-columnar") as pool:
        extra = lambda schema: typed_columns(ab.plan, schema)  # noqa: E731 - typed leaves, per file
        for read, rows in _row_groups(path, ["run_id", "step", "state"], batch_rows, extra):
            # a small row group is read on the pool; a large one here, a batch at a time (memory)
            parts = iter([read]) if rows <= 2 * batch_rows else ((lambda b=b: iter([b])) for b in read())
            for part in parts:
                window.append(pool.submit(task, part))
                if len(window) > 2 * n:
                    drain(window.popleft())
        while window:
            drain(window.popleft())
    if pending is not None:
        runs.feed(*pending, last=True)
    learner._cache.clear()
    return {"rows": ab.rows, "fallback_rows": ab.fallback_rows, "runs": runs.runs,
            "fallback_predicates": dict(ab.plan.fallback)}


def _check_steps(ids: Any, steps: np.ndarray, new: np.ndarray, nulls: np.ndarray, carry: int) -> None:
    """:data:`~.trace_stream.STEP_RULE`, vectorised over one batch (``new``: a row starts a run;
    ``carry``: the step of the previous batch's last row); rows without a run id are not checked."""
    prev = np.empty_like(steps)
    prev[0] = carry
    prev[1:] = steps[:-1]
    ok = np.where(new, (steps == 0) | (steps == -1), (prev >= 0) & (steps == prev + 1)) | nulls
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        raise step_error(_id(ids, i), int(steps[i]), None if new[i] else int(prev[i]))


def _steps(batch: Any) -> np.ndarray:
    pc = require("pyarrow.compute", "server")
    return np.asarray(pc.fill_null(batch.column(1), -1).to_numpy(zero_copy_only=False), np.int64)
