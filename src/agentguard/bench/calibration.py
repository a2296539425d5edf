"""The evaluation protocol of Figures 1, 2 and 4 of the online-safety-monitoring paper (a paper
evaluation: it uses :mod:`agentguard.calibration`, which never imports it).

For each of ``splits`` random calibration/test splits (``cal_frac`` of the sequences for
calibration, 0.2 as in the authors' notebook), every method is calibrated on the calibration part at
every ``alpha`` and evaluated on the test part (false alarm rate, power, detection delay, missed
detection rate). All methods see the same splits. A method that cannot certify any threshold at some
alpha uses the trivially safe monitor (``on_infeasible="trivial"``) and the split is counted in
``trivial``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from collections.abc import Sequence as Seq
from typing import Any

import numpy as np

from ..calibration.calibrate import ThresholdCalibrator
from ..calibration.data import Sequences, check_alpha, check_delta
from ..calibration.evaluator import EValuator
from ..calibration.metrics import METRICS, monitor_metrics
from ..calibration.monitor import first_alarm_steps
from ..calibration.risks import check_risk
from ..core.errors import GuaranteeError, InputError

__all__ = ["ALL_METHODS", "run_protocol", "summarise"]

ALL_METHODS = ("crc", "ucb", "evaluator-anytime", "evaluator-pac")


def run_protocol(data: Sequences, *, methods: Seq[str] = ALL_METHODS, risk: str = "false_alarm",
                 alphas: Seq[float] = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3), delta: float = 0.1,
                 splits: int = 10, seed: int = 0, cal_frac: float = 0.2, bound: str = "hb",
                 on_infeasible: str = "trivial",
                 progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run the protocol; returns ``{"config", "results": {method: {...per split and summary...}}}``.

    ``on_infeasible="trivial"`` (default, as the authors' notebook) evaluates the trivially safe monitor
    when a split's calibration set is too small for the guarantee; ``"raise"`` raises GuaranteeError.
    """
    if on_infeasible not in ("raise", "trivial"):
        raise InputError("on_infeasible must be 'raise' or 'trivial'")
    check_risk(risk)
    alphas = [check_alpha(a) for a in alphas]
    delta = check_delta(delta)
    for m in methods:
        if m not in ALL_METHODS:
            raise InputError(f"unknown method {m!r}; expected one of {', '.join(ALL_METHODS)}")
        if risk == "missed_detection" and m.startswith("evaluator"):
            raise InputError("the e-valuator controls only the false alarm risk (no missed_detection variant)")
    if int(splits) < 1:
        raise InputError("splits must be >= 1")
    if not 0 < cal_frac < 1:
        raise InputError("cal_frac must be in (0, 1)")
    n_cal = int(cal_frac * data.n)
    if n_cal < 1 or n_cal >= data.n:
        raise InputError(f"{data.n} sequences are too few to split with cal_frac={cal_frac}")
    rng = np.random.default_rng(seed)
    per: dict[str, dict[str, list]] = {m: {k: [] for k in (*METRICS, "threshold", "trivial", "seconds")}
                                       for m in methods}
    for s in range(int(splits)):
        cal, test = data.split(n_cal, rng)
        for m in methods:
            t0 = time.perf_counter()
            rows = _one_method(m, cal, test, risk, alphas, delta, bound, seed + s, on_infeasible)
            dt = time.perf_counter() - t0
            for k in per[m]:
                if k == "seconds":
                    per[m][k].append(dt)
                else:
                    per[m][k].append([r[k] for r in rows])
        if progress:
            progress(f"split {s + 1}/{splits} done")
    results = {m: summarise(per[m], alphas, risk, delta) for m in methods}
    return {"config": {"risk": risk, "alphas": alphas, "delta": delta, "splits": int(splits), "seed": seed,
                       "cal_frac": cal_frac, "bound": bound, "n_sequences": data.n,
                       "n_safe": int((data.labels == 1).sum()), "n_unsafe": int((data.labels == 0).sum()),
                       "on_infeasible": on_infeasible},
            "results": results}


def _one_method(m: str, cal: Sequences, test: Sequences, risk: str, alphas: list[float], delta: float,
                bound: str, seed: int, on_infeasible: str) -> list[dict[str, Any]]:
    rows = []
    if m in ("crc", "ucb"):
        for a in alphas:
            c = ThresholdCalibrator(risk, m, a, delta, bound=bound, on_infeasible=on_infeasible).calibrate(cal)
            steps = first_alarm_steps(test.scores, test.starts, test.lengths, c.threshold_)
            r = monitor_metrics(steps, test.lengths, test.labels)
            r["threshold"], r["trivial"] = float(c.threshold_), bool(c.trivial_)
            rows.append(r)
        return rows
    variant = "anytime" if m == "evaluator-anytime" else "pac"
    base = EValuator(variant, alphas[0], delta, random_state=seed, on_infeasible="trivial").calibrate(cal)
    ev = base.e_values(test)
    for a in alphas:
        e = base.with_alpha(a)
        if e.trivial_ and on_infeasible == "raise":
            need = math.ceil(math.log(delta) / math.log(1.0 - a))
            raise GuaranteeError(f"too few held-out safe sequences for the e-valuator PAC threshold at "
                                 f"alpha={a:g}, delta={delta:g}: need at least {need}")
        steps = e.alarm_steps(test, ev)
        r = monitor_metrics(steps, test.lengths, test.labels)
        r["threshold"], r["trivial"] = float(e.threshold_), bool(e.trivial_)
        rows.append(r)
    return rows


def _finite(x: float) -> float | None:
    return None if (x is None or (isinstance(x, float) and not math.isfinite(x))) else float(x)


def summarise(per: dict[str, list], alphas: list[float], risk: str, delta: float) -> dict[str, Any]:
    """Means, std, 10/90 % quantiles over splits; violation counts of the controlled risk."""
    out: dict[str, Any] = {"alphas": alphas, "per_split": {}, "mean": {}, "std": {}, "q10": {}, "q90": {}}
    for k in METRICS:
        arr = np.array(per[k], dtype=float)          # splits x alphas
        out["per_split"][k] = [[_finite(v) for v in row] for row in arr]
        with np.errstate(all="ignore"):
            import warnings
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                out["mean"][k] = [_finite(v) for v in np.nanmean(arr, axis=0)]
                out["std"][k] = [_finite(v) for v in np.nanstd(arr, axis=0)]
                out["q10"][k] = [_finite(v) for v in np.nanpercentile(arr, 10, axis=0)]
                out["q90"][k] = [_finite(v) for v in np.nanpercentile(arr, 90, axis=0)]
    out["per_split"]["threshold"] = [[_finite(v) if math.isfinite(v) else str(v) for v in row]
                                     for row in per["threshold"]]
    out["trivial_splits"] = np.array(per["trivial"], dtype=int).sum(axis=0).tolist()
    key = "false_alarm_rate" if risk == "false_alarm" else "missed_detection_rate"
    arr = np.array(per[key], dtype=float)
    viol = (arr > np.array(alphas)[None, :]).sum(axis=0)
    out["controlled_metric"] = key
    out["violating_splits"] = viol.tolist()
    out["violation_frequency"] = (viol / arr.shape[0]).tolist()
    out["seconds_per_split"] = float(np.mean(per["seconds"]))
    return out
