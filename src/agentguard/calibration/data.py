"""Score sequences with sequence-level labels, stored flat for vectorised work.

A :class:`Sequences` holds ``n`` variable-length score sequences concatenated into one float array
``scores`` with ``starts`` (offset of each sequence) and ``lengths``; ``labels[i]`` is 1 for a safe
(correct) sequence and 0 for an unsafe one, the convention of the online-safety-monitoring paper
(Y = 1 safe). Per-sequence reductions use ``np.minimum.reduceat`` over ``starts``.

:meth:`Sequences.from_traces` reads recorded traces (a signal and an outcome label per run);
:func:`load_signals` reads the e-valuator CSVs (columns ``uq_problem_idx, num_steps,
judge_probability, solved``) or any file with those columns.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Sequence as Seq
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import InputError
from ..core.types import Trace

__all__ = ["Sequences", "load_signals", "numbers"]

REQUIRED_COLUMNS = ("uq_problem_idx", "num_steps", "judge_probability", "solved")


def check_alpha(alpha: float, name: str = "alpha") -> float:
    """``alpha`` as a float in the open interval (0, 1), or InputError: the one check of a level
    (alpha, delta) in this package. Text (``"0.1"``), a Boolean, None, an array, NaN, 0 and 1 are
    refused, as a score in text is (a level is a number the guarantee is stated at)."""
    if isinstance(alpha, (bool, np.bool_, str, bytes)) or not isinstance(alpha, (int, float, np.integer, np.floating)):
        raise InputError(f"{name} must be a number in (0, 1), got {alpha!r}")
    a = float(alpha)
    if not (0.0 < a < 1.0):
        raise InputError(f"{name} must be in (0, 1), got {alpha!r}")
    return a


def check_delta(delta: float) -> float:
    return check_alpha(delta, "delta")


def _labels(y: np.ndarray) -> np.ndarray:
    """Labels as int8 0/1 (1 = safe): Booleans, or numbers equal to 0 or 1; text (``"1"``), None,
    2, 0.5 or -1 are an InputError (a label neither safe nor unsafe would silently drop its
    sequence from both risks' calibration sets)."""
    y = np.asarray(y)
    if y.dtype == bool:
        return y.astype(np.int8)
    if y.size and y.dtype.kind in "USc":
        kind = "complex" if y.dtype.kind == "c" else "text"
        raise InputError(f"labels must be 0/1 or Booleans (1 = safe), got {kind} values such as "
                         f"{str(y.ravel()[0])[:40]!r}")
    try:
        yf = y.astype(float)
    except (TypeError, ValueError):
        raise InputError("labels must be 0/1 (1 = safe), got non-numeric values") from None
    bad = ~((yf == 0) | (yf == 1))
    if bad.any():
        raise InputError(f"labels must be 0 or 1 (1 = safe); got {y[bad][:3].tolist()} ...")
    return yf.astype(np.int8)


def numbers(values: Any, what: str) -> np.ndarray:
    """``values`` as a 1-d float array of numbers (integers or floats): text, Booleans, None, objects
    or complex numbers are an InputError naming ``what``, as the monitor refuses them at run time
    (``np.asarray(["0.5"], dtype=float)`` would read text; ``float(1j)`` would crash)."""
    try:
        a = np.asarray(values)
    except (TypeError, ValueError) as exc:  # ragged nesting
        raise InputError(f"{what} must be numbers: {exc}") from None
    if a.size and a.dtype.kind not in "iuf":
        kind = {"b": "Boolean", "U": "text", "S": "bytes", "c": "complex"}.get(a.dtype.kind, "non-numeric")
        raise InputError(f"{what} must be numbers, got {kind} values such as {str(a.ravel()[0])[:40]!r}")
    return a.astype(float, copy=False).ravel()


def _one_d(values: Any, what: str) -> np.ndarray:
    try:
        a = np.asarray(values)
    except (TypeError, ValueError) as exc:  # ragged nesting
        raise InputError(f"{what} must be a 1-d array: {exc}") from None
    if a.ndim != 1:
        raise InputError(f"scores, starts, lengths and labels must be 1-d arrays ({what} has shape {a.shape})")
    return a


def _index(values: np.ndarray, what: str) -> np.ndarray:
    """Offsets/lengths as int64; a float (1.5), Boolean or text entry is an InputError."""
    if values.size and values.dtype.kind not in "iu":
        raise InputError(f"{what} must be integers, got {values.dtype} values such as {str(values[0])[:40]!r}")
    return values.astype(np.int64, copy=False)


def _py(x: Any) -> Any:
    """A numpy scalar as the Python value it holds (messages print ``1``, not ``np.int64(1)``)."""
    return x.item() if isinstance(x, np.generic) else x


def _steps(steps: Any) -> np.ndarray:
    """Step indices as finite whole numbers (floats), or InputError."""
    raw = np.asarray(steps)
    if raw.dtype == bool:
        raise InputError("step indices must be integers, got Booleans")
    try:
        st = raw.astype(float)
    except (TypeError, ValueError):
        raise InputError("step indices must be integers, got non-numeric values") from None
    bad = ~np.isfinite(st) | (st != np.round(st))
    if bad.any():
        raise InputError(f"step indices must be integers; got {raw[bad][:3].tolist()} ...")
    return st


@dataclass(frozen=True)
class Sequences:
    """``n`` score sequences, flat: ``scores[starts[i]:starts[i]+lengths[i]]`` is sequence ``i``.

    However built (the constructors below or the four arrays directly), a ``Sequences`` holds float
    ``scores`` (no NaN, no +inf, no text), int64 ``starts``/``lengths`` that tile them, and int8
    ``labels`` in {0, 1}: anything else is an InputError here, never a sequence that silently falls
    out of the calibration set of both risks (a label 2 or 0.5 used to be neither safe nor unsafe).
    """

    scores: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray
    labels: np.ndarray
    ids: np.ndarray | None = None

    def __post_init__(self) -> None:
        # the one entry point of every calibration set: the arrays are read here, whoever built them
        # (lists, another dtype), so a label 2 or 0.5 or a text score is refused, not silently dropped
        s, st, ln, y = (_one_d(v, k) for v, k in ((self.scores, "scores"), (self.starts, "starts"),
                                                    (self.lengths, "lengths"), (self.labels, "labels")))
        s = numbers(s, "scores")
        st, ln, y = _index(st, "starts"), _index(ln, "lengths"), _labels(y)
        for k, v in (("scores", s), ("starts", st), ("lengths", ln), ("labels", y)):
            object.__setattr__(self, k, v)
        if not (len(st) == len(ln) == len(y)):
            raise InputError("starts, lengths and labels must have one entry per sequence")
        if len(st) == 0:
            raise InputError("no sequences given")
        if (ln <= 0).any():
            i = int(np.flatnonzero(ln <= 0)[0])
            raise InputError(f"sequence {self._name(i)} is empty: every sequence needs at least one score")
        if np.isnan(s).any():
            i = int(np.searchsorted(st, int(np.flatnonzero(np.isnan(s))[0]), side="right") - 1)
            raise InputError(f"sequence {self._name(i)} has a NaN score")
        if np.isposinf(s).any():  # see monitor._score: +inf is below no threshold, not a score
            i = int(np.searchsorted(st, int(np.flatnonzero(np.isposinf(s))[0]), side="right") - 1)
            raise InputError(f"sequence {self._name(i)} has a +inf score (scores are numbers below +inf)")
        if int(ln.sum()) != len(s) or st[0] != 0 or (len(st) > 1 and (np.diff(st) != ln[:-1]).any()):
            raise InputError("starts/lengths do not tile the score array")
        if self.ids is not None:
            if len(self.ids) != len(st):
                raise InputError(f"{len(self.ids)} ids for {len(st)} sequences")
            seen: set = set()
            for x in self.ids.tolist():  # a trajectory counted twice inflates n and breaks exchangeability
                if x in seen:
                    raise InputError(f"sequence id {x!r} appears twice: a duplicated trajectory would be counted "
                                     "twice, and the calibration guarantee assumes distinct exchangeable sequences")
                seen.add(x)

    def _name(self, i: int) -> str:
        return repr(_py(self.ids[i])) if self.ids is not None else f"#{i}"

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_lists(cls, scores: Seq[Seq[float]], labels: Seq[int], ids: Seq | None = None) -> Sequences:
        """Build from a list of per-sequence score lists and one 0/1 label per sequence."""
        seqs = [numbers(x, f"the scores of sequence #{i}") for i, x in enumerate(scores)]
        if len(seqs) != len(labels):
            raise InputError(f"{len(seqs)} score sequences but {len(labels)} labels")
        lengths = np.array([len(x) for x in seqs], dtype=np.int64)
        starts = np.zeros(len(seqs), dtype=np.int64)
        if len(seqs) > 1:
            starts[1:] = np.cumsum(lengths)[:-1]
        flat = np.concatenate(seqs) if seqs else np.zeros(0)
        return cls(flat, starts, lengths, _labels(np.asarray(labels)),
                   None if ids is None else np.asarray(ids))

    @classmethod
    def from_flat(cls, seq_ids: np.ndarray, steps: np.ndarray, scores: np.ndarray,
                  labels: np.ndarray) -> Sequences:
        """Build from long-format rows (one row per step): sequence id, step index, score, label.

        Rows are sorted by (sequence id, step). The label must be constant within a sequence. The
        steps of a sequence must be distinct consecutive integers (any start): a duplicated row
        (the same trajectory read from two files) would count a step twice and a gap is a missing
        score, and either breaks the per-step e-valuator and the exchangeability the guarantees
        rest on, so both are InputError naming the sequence and step.
        """
        seq_ids = np.asarray(seq_ids)
        steps = _steps(steps)
        scores = np.asarray(scores, dtype=float)
        y = _labels(np.asarray(labels))
        if not (len(seq_ids) == len(steps) == len(scores) == len(y)):
            raise InputError("columns have different lengths")
        if len(seq_ids) == 0:
            raise InputError("no rows: no sequences to calibrate on")
        uniq, inv = np.unique(seq_ids, return_inverse=True)
        order = np.lexsort((steps, inv))
        inv, scores, y = inv[order], scores[order], y[order]
        lengths = np.bincount(inv, minlength=len(uniq)).astype(np.int64)
        starts = np.zeros(len(uniq), dtype=np.int64)
        starts[1:] = np.cumsum(lengths)[:-1]
        st_sorted = steps[order]
        jump = np.diff(st_sorted) != 1
        jump[starts[1:] - 1] = False  # a new sequence may start anywhere
        if jump.any():
            j = int(np.flatnonzero(jump)[0])
            what = "twice" if st_sorted[j + 1] == st_sorted[j] else f"after step {st_sorted[j]:g} (a gap)"
            raise InputError(f"sequence {_py(uniq[inv[j]])!r} has step {st_sorted[j + 1]:g} {what}: the steps of a "
                             "sequence must be distinct consecutive integers")
        ymin, ymax = np.minimum.reduceat(y, starts), np.maximum.reduceat(y, starts)
        if (ymin != ymax).any():
            i = int(np.flatnonzero(ymin != ymax)[0])
            raise InputError(f"sequence {_py(uniq[i])!r} has different labels on different steps")
        return cls(scores, starts, lengths, ymin.astype(np.int8), uniq)

    @classmethod
    def from_traces(cls, traces: Iterable[Trace], signal: str = "score", label: str = "unsafe", *,
                    unsafe_when: bool = True) -> Sequences:
        """Build from finished :class:`~agentguard.core.Trace` records (a trace store, a JSONL file).

        Each trace gives one sequence: the values of ``signals[signal]`` over its steps, in step
        order (steps without the signal are skipped); its label is read from ``trace.labels[label]``:
        the run is unsafe (0) when ``labels[label] == unsafe_when``, else safe (1). The default
        reads ``{"unsafe": true}`` as unsafe. Traces without the label or without the signal are left
        out (they cannot calibrate anything); the sequence ids are the traces' ``run_id``. InputError
        when no trace is left.

        Fail closed: a label must be a Boolean (or the integer 0 or 1) and a signal a number, read as
        the monitor reads it at run time (:func:`.monitor._score`: no text, no Boolean, no NaN, no
        +inf); anything else is an InputError naming the run. (Before, ``bool()`` read a null label as
        safe and the text ``"false"`` as unsafe, and text scores the monitor refuses were calibrated on.)
        """
        from .monitor import _score

        scores: list[list[float]] = []
        labels: list[int] = []
        ids: list[str] = []
        for t in traces:
            if label not in t.labels:
                continue
            y = t.labels[label]
            if not (isinstance(y, (bool, np.bool_)) or (type(y) is int and y in (0, 1))):
                raise InputError(f"run {t.run_id!r}: label {label!r} is {str(y)[:40]!r} ({type(y).__name__}), "
                                 "not true/false: a run whose outcome cannot be read is neither safe nor unsafe")
            seq = []
            for k, s in enumerate(t.steps):
                if signal in s.signals:
                    try:
                        seq.append(_score(s.signals[signal]))
                    except InputError as exc:
                        raise InputError(f"run {t.run_id!r} step {k}: signal {signal!r}: {exc}") from None
            if not seq:
                continue
            scores.append(seq)
            labels.append(0 if bool(y) == unsafe_when else 1)
            ids.append(t.run_id)
        if not scores:
            raise InputError(f"no trace has both the label {label!r} and the signal {signal!r}")
        return cls.from_lists(scores, labels, ids)

    # ------------------------------------------------------------------ views
    @property
    def n(self) -> int:
        return len(self.lengths)

    def minima(self) -> np.ndarray:
        """Per-sequence minimum score ``min_t s_t`` (Eq. 1 alarms iff this is below the threshold)."""
        return np.minimum.reduceat(self.scores, self.starts)

    def seq_index(self) -> np.ndarray:
        """For each flat score, the index of its sequence."""
        return np.repeat(np.arange(self.n), self.lengths)

    def step_index(self) -> np.ndarray:
        """For each flat score, its 1-based step number within its sequence."""
        return np.arange(len(self.scores)) - np.repeat(self.starts, self.lengths) + 1

    def sequence(self, i: int) -> np.ndarray:
        return self.scores[self.starts[i]:self.starts[i] + self.lengths[i]]

    def subset(self, idx: np.ndarray) -> Sequences:
        """The sequences at positions ``idx`` (in that order)."""
        idx = np.asarray(idx, dtype=np.int64)
        lengths = self.lengths[idx]
        starts = np.zeros(len(idx), dtype=np.int64)
        if len(idx) > 1:
            starts[1:] = np.cumsum(lengths)[:-1]
        # gather the flat scores of the chosen sequences
        src = np.repeat(self.starts[idx] - starts, lengths) + np.arange(int(lengths.sum()))
        return Sequences(self.scores[src], starts, lengths, self.labels[idx],
                         None if self.ids is None else self.ids[idx])

    def split(self, n_cal: int, rng: np.random.Generator) -> tuple[Sequences, Sequences]:
        """A random (calibration, test) split with ``n_cal`` calibration sequences."""
        perm = rng.permutation(self.n)
        return self.subset(np.sort(perm[:n_cal])), self.subset(np.sort(perm[n_cal:]))


def load_signals(path: str | Path, *, id_col: str = "uq_problem_idx", step_col: str = "num_steps",
                 score_col: str = "judge_probability", label_col: str = "solved") -> Sequences:
    """Read a long-format CSV (optionally .gz) of per-step scores into :class:`Sequences`.

    Defaults match the e-valuator release: ``uq_problem_idx, num_steps (1-based), judge_probability,
    solved (1 = correct/safe)``. Raises InputError naming a missing column, a NaN score or a bad label.
    """
    p = Path(path)
    if not p.exists():
        raise InputError(f"signals file not found: {p}")
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover
        from ..core.errors import DependencyError
        raise DependencyError("reading signal files needs pandas: pip install 'agentguard[calibration]'") from None
    cols = [id_col, step_col, score_col, label_col]
    try:
        df = pd.read_csv(p, usecols=lambda c: c in cols)
    except Exception as exc:  # noqa: BLE001 - any parse failure becomes one clear line
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc  # "Is a directory", no errno
        raise InputError(f"cannot read {p}: {why}") from None
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise InputError(f"{p.name} lacks column(s) {', '.join(missing)} (needs {', '.join(cols)})")
    header = [str(c) for c in pd.read_csv(p, header=None, nrows=1).iloc[0].tolist()]
    twice = sorted({c for c in cols if header.count(c) > 1})
    if twice:  # pandas would read the first and rename the other "solved.1": which one is meant?
        raise InputError(f"{p.name} has column(s) {', '.join(twice)} twice")
    if df[id_col].isna().any():
        row = int(df.index[df[id_col].isna()][0]) + 2
        raise InputError(f"{p.name}: line {row} has no {id_col}: a step must name its sequence")
    if df[score_col].isna().any():
        bad = _py(df.loc[df[score_col].isna(), id_col].iloc[0])
        raise InputError(f"{p.name}: sequence {bad!r} has a missing/NaN score")
    scores = pd.to_numeric(df[score_col], errors="coerce")
    if scores.isna().any():
        bad = _py(df.loc[scores.isna(), id_col].iloc[0])
        raise InputError(f"{p.name}: sequence {bad!r} has a non-numeric score")
    if len(df) == 0:
        raise InputError(f"{p.name} has a header but no rows: no sequences to calibrate on")
    return Sequences.from_flat(df[id_col].to_numpy(), df[step_col].to_numpy(),
                               scores.to_numpy(dtype=float), df[label_col].to_numpy())
