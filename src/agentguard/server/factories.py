"""Guard factories for guard-stack files (``type = "python"``, ``factory = "agentguard.server.factories:..."``).

They build the project's real guards from plain values a TOML file can hold (paths, numbers):

- :func:`proactive_guard`: :class:`agentguard.predictive.guard.ProactiveGuard` over a DTMC file
  (``DTMC.save`` JSON, a PRISM ``.prism`` file, or a Pro2Guard release folder);
- :func:`threshold_monitor`: :class:`agentguard.calibration.ThresholdMonitor` with a threshold given
  directly or read from a calibration JSON file (``{"threshold": ..., "curves": {...}}``).

Model files are data (JSON / PRISM text), parsed, never executed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..core.errors import InputError

__all__ = ["load_dtmc", "proactive_guard", "read_calibration", "threshold_monitor"]


def load_dtmc(path: str | Path) -> Any:
    """A DTMC from ``path``: JSON (``DTMC.save``), PRISM (``.prism``) or a Pro2Guard model folder."""
    from ..predictive.dtmc import DTMC

    p = Path(path)
    if p.is_dir():
        from ..predictive.prism import read_pro2guard

        return read_pro2guard(p)
    if p.suffix == ".prism":
        from ..predictive.prism import read_prism

        return read_prism(p)
    if not p.exists():
        raise InputError(f"no such model file: {p}")
    return DTMC.load(p)


def proactive_guard(*, model: str, property: str = "G !unsafe", threshold: float = 0.5, unseen: str = "nearest",
                    decision: str = "REJECT", name: str = "proactive") -> Any:
    """Pro2Guard's runtime guard (alarm when the predicted P_safe < threshold) over the DTMC at ``model``."""
    from ..predictive.guard import ProactiveGuard

    g = ProactiveGuard(load_dtmc(model), property, threshold, unseen=unseen, decision=decision, name=name)
    g.model_path = str(model)
    return g


def read_calibration(path: str | Path) -> dict[str, Any]:
    """A calibration file: ``{"threshold": float, "curves": {...}, ...}`` (JSON)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read calibration file {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise InputError(f"calibration file {path} is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InputError(f"calibration file {path}: expected an object")
    return data


def threshold_monitor(*, threshold: float | None = None, calibration: str | None = None, signal: str = "score",
                      decision: str = "HALT", name: str = "threshold-monitor") -> Any:
    """Eq. 1 threshold monitor; the threshold is ``threshold`` or ``calibration``'s ``"threshold"``.

    The service keeps one copy per run (the monitor latches its alarm within a run).
    """
    from ..calibration import ThresholdMonitor

    info: dict[str, Any] = {}
    curves: dict[str, Any] = {}
    if calibration is not None:
        data = read_calibration(calibration)
        if threshold is None:
            if "threshold" not in data:
                raise InputError(f"calibration file {calibration} has no 'threshold'")
            threshold = float(data["threshold"])
        info = {k: v for k, v in data.items() if k not in ("curves", "threshold") and isinstance(v, (int, float, str))}
        curves = data.get("curves") or {}
    if threshold is None:
        raise InputError("threshold_monitor needs 'threshold' or 'calibration'")
    m = ThresholdMonitor(float(threshold), decision=decision, name=name, signal=signal, info=info)
    m.curves = curves
    return m
