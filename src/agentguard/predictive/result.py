"""The result of checking a PCTL property on a model, shared by the native and the Storm engines."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["CheckResult", "compare", "filter_value"]


@dataclass
class CheckResult:
    """The result of checking a property on every state of a model.

    ``values[i]`` is the probability from state i (state-index order); ``initial`` the value at the
    model's initial state; ``satisfied`` the Boolean verdict per state for ``P~p`` properties.
    """

    values: np.ndarray
    initial: float
    seconds: float
    property: str
    engine: str = "native"
    satisfied: np.ndarray | None = None
    info: dict[str, Any] = field(default_factory=dict)

    def to_json_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "property": self.property,
            "engine": self.engine,
            "initial": float(self.initial) if np.isfinite(self.initial) else None,
            "values": [float(v) if np.isfinite(v) else None for v in self.values],
            "seconds": self.seconds,
        }
        if self.satisfied is not None:
            d["satisfied"] = [bool(v) for v in self.satisfied]
            d["initial_satisfied"] = bool(self.satisfied[self._initial_index])
        if self.info:
            d["info"] = self.info
        return d

    _initial_index: int = 0



def compare(values: np.ndarray, comparison: str, threshold: float) -> np.ndarray:
    """The Boolean verdict per state of a ``P~p`` property: ``values ~ threshold``."""
    return {"<": values < threshold, "<=": values <= threshold,
            ">": values > threshold, ">=": values >= threshold}[comparison]


def filter_value(op: str, values: np.ndarray, sat: np.ndarray | None, sel: np.ndarray, what: str) -> float:
    """PRISM's ``filter(op, prop, states)`` over the selected states ``sel`` (Boolean vector)."""
    from ..core.errors import InputError, ModelError

    if not sel.any():
        raise ModelError(f"the filter states of {what} are empty")
    v = values[sel]
    if op in ("count", "forall", "exists"):
        if sat is None:
            raise InputError(f"filter {op} needs a P~p property (a Boolean result)")
        b = sat[sel]
        return float(b.sum()) if op == "count" else float(b.all() if op == "forall" else b.any())
    return float({"min": np.min, "max": np.max, "avg": np.mean, "sum": np.sum}.get(op, lambda a: a[0])(v))
