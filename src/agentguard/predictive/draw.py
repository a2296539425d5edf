"""Drawing a DTMC to a PNG: one function for every demo and report.

:func:`draw_dtmc` lays the states out in layers (x = BFS depth from the initial state, terminal
states last), colours each node by its risk ``P_s[F "unsafe"]`` (green -> red), gives unsafe states
a thick red border and labels the edges with their probabilities. matplotlib is imported inside the
function, so importing this module is cheap.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

__all__ = [
    "draw_dtmc",
]


def layered_layout(model: Any) -> np.ndarray:
    """Layered layout: x = BFS depth from the initial state, y = spread within the layer; states of
    the ``meta["terminal"]`` label go to a last layer. Returns an ``(n, 2)`` array of positions."""
    n = model.n
    P = model.matrix.tocsr()
    depth = np.full(n, -1)
    depth[model.initial] = 0
    frontier = [model.initial]
    while frontier:
        nxt = []
        for i in frontier:
            for j in P.indices[P.indptr[i]:P.indptr[i + 1]]:
                if depth[j] < 0:
                    depth[j] = depth[i] + 1
                    nxt.append(int(j))
        frontier = nxt
    depth[depth < 0] = depth.max() + 1
    term = model.labels.get(str(model.meta.get("terminal")), None) if model.meta.get("terminal") else None
    if term is not None and term.any():
        depth[term] = depth[~term].max() + 1
    pos = np.zeros((n, 2))
    for d in np.unique(depth):
        members = np.flatnonzero(depth == d)
        for r, i in enumerate(members):
            pos[i] = (d * 2.2, (r - (len(members) - 1) / 2) * 1.6)
    return pos


def _unsafe_mask(model: Any, unsafe: Any) -> np.ndarray:
    if unsafe is None:
        return np.asarray(model.labels.get("unsafe", np.zeros(model.n, bool)), dtype=bool)
    if isinstance(unsafe, str):
        return np.asarray(model.label(unsafe), dtype=bool)
    return np.asarray(unsafe, dtype=bool)


def _default_risk(model: Any, unsafe: np.ndarray) -> np.ndarray:
    from .checker import reach

    return np.asarray(reach(model.matrix, unsafe), dtype=float)


def _draw_edges(ax: Any, model: Any, pos: np.ndarray, R: float, min_prob: float) -> None:
    from matplotlib.patches import Circle, FancyArrowPatch

    P = model.matrix.tocoo()
    for i, j, p in zip(P.row, P.col, P.data):
        faint = p < min_prob
        if i == j:
            x, y = pos[i]
            ax.add_patch(Circle((x, y + R * 1.35), R * 0.45, fill=False, lw=0.8, color="0.5" if faint else "0.25"))
            if not faint:
                ax.text(x, y + R * 2.05, f"{p:.2f}", ha="center", va="bottom", fontsize=7)
            continue
        rad = 0.25 if model.matrix[j, i] > 0 else 0.08
        arr = FancyArrowPatch(pos[i], pos[j], connectionstyle=f"arc3,rad={rad}", arrowstyle="-|>",
                              mutation_scale=11, shrinkA=R * 72 / 2.2, shrinkB=R * 72 / 2.2,
                              lw=0.6 if faint else 0.6 + 2.0 * p, color="0.75" if faint else "0.3")
        ax.add_patch(arr)
        if not faint:
            mid = (pos[i] + pos[j]) / 2
            d = pos[j] - pos[i]
            normal = np.array([d[1], -d[0]]) / (np.hypot(*d) + 1e-9)
            lx, ly = mid + normal * rad * np.hypot(*d) * 0.5
            ax.text(lx, ly, f"{p:.2f}", fontsize=7, ha="center", va="center",
                    bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.8})


def draw_dtmc(model: Any, path: str | Path, *, risk: Sequence[float] | np.ndarray | None = None, title: str = "",
              min_prob: float = 0.005, state_label: Callable[[int, str], str] | None = None,
              unsafe: Sequence[bool] | np.ndarray | str | None = None, abstraction: Any = None,
              dpi: int = 130) -> None:
    """Draw the DTMC ``model`` to the PNG ``path``.

    Args:
        risk: per-state risk in [0, 1] colouring the nodes; default ``P_s[F unsafe]`` computed with
            :func:`agentguard.predictive.checker.reach` over the unsafe states.
        title: the figure title (default: "learned DTMC (red border: unsafe states)").
        min_prob: edges with a smaller probability are drawn faint and unlabelled.
        state_label: ``(index, name) -> text`` written in each node (default: the state name).
        unsafe: which states get the red border: a boolean mask, a label name, or None for the
            model's ``"unsafe"`` label (no state when the model has none).
        abstraction: an :class:`~agentguard.spec.predicates.Abstraction` (anything with ``names``):
            its bit names are appended to the title, so a bit-vector state can be read.
        dpi: resolution of the PNG.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Circle

    bad = _unsafe_mask(model, unsafe)
    risk_arr = np.clip(np.asarray(risk if risk is not None else _default_risk(model, bad), dtype=float), 0.0, 1.0)
    if abstraction is not None and getattr(abstraction, "names", None):
        title = (title + " | " if title else "") + "bits: " + ", ".join(abstraction.names)
    pos = layered_layout(model)
    names = model.state_names or [str(i) for i in range(model.n)]
    span = pos.max(axis=0) - pos.min(axis=0)
    fig, ax = plt.subplots(figsize=(max(7, 1.3 * span[0] + 3), max(5, 1.1 * span[1] + 3)))
    cmap = plt.get_cmap("RdYlGn_r")
    R = 0.42
    _draw_edges(ax, model, pos, R, min_prob)
    for i in range(model.n):
        x, y = pos[i]
        ax.add_patch(Circle((x, y), R, color=cmap(float(risk_arr[i])), ec="red" if bad[i] else "black",
                            lw=3.5 if bad[i] else 1.0, zorder=3))
        text = state_label(i, names[i]) if state_label is not None else names[i]
        ax.text(x, y + 0.07, text, ha="center", va="center", fontsize=7, zorder=4, weight="bold")
        ax.text(x, y - 0.17, f"risk {risk_arr[i]:.2f}", ha="center", va="center", fontsize=6.5, zorder=4)
    sm = plt.cm.ScalarMappable(cmap=cmap, norm=plt.Normalize(0, 1))
    fig.colorbar(sm, ax=ax, fraction=0.03, label='P[F "unsafe"]')
    ax.set_xlim(pos[:, 0].min() - 1.2, pos[:, 0].max() + 1.2)
    ax.set_ylim(pos[:, 1].min() - 1.2, pos[:, 1].max() + 1.5)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(title or "learned DTMC (red border: unsafe states)")
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
