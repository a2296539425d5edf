"""Ground truth for Agentic Driving: grid value iteration of the undiscounted safety Bellman equation.

Eq. 3 of the ReGuard paper with the true state (the *Privileged* ideal)::

    V(s) = min{ l(s), max_a min{ l(f(s, a)), V(f(s, a)) } }     (the fixed point; V <= l everywhere)

computed by iterating ``V_{n+1} = min(l, max_a min(l, V_n) o f(., a))`` from ``V_0 = l`` until it stops
changing (the iterates decrease monotonically). The grid covers p_x in [-0.5, 6.5], p_y in
[-0.5, 3.5] (beyond the walls, so states that leave the road are represented with their negative
margin) and 64 headings. The steering step ``DT * U_MAX = 2 pi / 16`` is exactly 4 heading cells,
so the heading needs no interpolation; positions are interpolated bilinearly. Positions beyond the
grid are clamped to its edge: to the right of ``p_x = 6.5`` the obstacles are out of reach and the
value no longer depends on ``p_x`` (translation invariance), and outside the walls the value is
negative either way.

A state counts as safe only when ``V > tol`` (``tol`` absorbs the interpolation error). The result
is validated two independent ways (see :func:`validate`): rolling out the implied fallback policy
``argmax_a V(f(s, a))`` from states labelled safe must never fail, and an exhaustive search over
action sequences from states labelled unsafe must find that every sequence fails.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from . import dynamics as D

__all__ = ["DrivingValueGrid", "exhaustive_can_survive", "solve_driving", "validate"]


@dataclass
class DrivingValueGrid:
    """The solved value on the grid: ``values[i, j, k]`` at ``(xs[i], ys[j], thetas[k])``."""

    xs: np.ndarray
    ys: np.ndarray
    thetas: np.ndarray
    values: np.ndarray
    iterations: int = 0
    seconds: float = 0.0
    tol: float = 0.01
    meta: dict = field(default_factory=dict)

    @property
    def dx(self) -> float:
        return float(self.xs[1] - self.xs[0])

    @property
    def dy(self) -> float:
        return float(self.ys[1] - self.ys[0])

    @property
    def n_theta(self) -> int:
        return len(self.thetas)

    def value_at(self, states: np.ndarray) -> np.ndarray:
        """Trilinear interpolation (periodic in theta, clamped in position) at arbitrary states."""
        s = np.atleast_2d(np.asarray(states, dtype=float))
        nx, ny, nt = self.values.shape
        fx = np.clip((s[:, 0] - self.xs[0]) / self.dx, 0, nx - 1)
        fy = np.clip((s[:, 1] - self.ys[0]) / self.dy, 0, ny - 1)
        ft = ((s[:, 2] + math.pi) % (2 * math.pi)) / (2 * math.pi / nt)
        i0 = np.minimum(np.floor(fx).astype(int), nx - 2)
        j0 = np.minimum(np.floor(fy).astype(int), ny - 2)
        k0 = np.floor(ft).astype(int) % nt
        wx, wy, wt = fx - i0, fy - j0, ft - np.floor(ft)
        k1 = (k0 + 1) % nt
        out = np.zeros(len(s))
        for di, ax in ((0, 1 - wx), (1, wx)):
            for dj, ay in ((0, 1 - wy), (1, wy)):
                for kk, at in ((k0, 1 - wt), (k1, wt)):
                    out += ax * ay * at * self.values[i0 + di, j0 + dj, kk]
        return out

    def q_values(self, states: np.ndarray) -> np.ndarray:
        """Q(s, a) = min{ l(f(s, a)), V(f(s, a)) } for each action: (n, 3)."""
        s = np.atleast_2d(np.asarray(states, dtype=float))
        q = np.empty((len(s), len(D.ACTIONS)))
        for a in range(len(D.ACTIONS)):
            nxt = D.step(s, a)
            q[:, a] = np.minimum(D.margin(nxt), self.value_at(nxt))
        return q

    def safe(self, states: np.ndarray) -> np.ndarray:
        """Exact-set membership of arbitrary states: V(s) > tol."""
        return np.minimum(D.margin(states), self.value_at(states)) > self.tol

    def node_states(self) -> np.ndarray:
        X, Y, T = np.meshgrid(self.xs, self.ys, self.thetas, indexing="ij")
        return np.stack([X, Y, T], axis=-1)

    def fallback(self, states: np.ndarray) -> np.ndarray:
        """The implied fallback policy pi(s) = argmax_a Q(s, a)."""
        return np.argmax(self.q_values(states), axis=1)

    def save(self, path: str) -> None:
        np.savez_compressed(path, xs=self.xs, ys=self.ys, thetas=self.thetas, values=self.values.astype(np.float32),
                            iterations=self.iterations, seconds=self.seconds, tol=self.tol)

    @classmethod
    def load(cls, path: str) -> DrivingValueGrid:
        z = np.load(path)
        return cls(z["xs"], z["ys"], z["thetas"], z["values"].astype(float), int(z["iterations"]),
                   float(z["seconds"]), float(z["tol"]))


def _shift_bilinear(A: np.ndarray, sx: float, sy: float) -> np.ndarray:
    """B[i, j, ...] = A interpolated at (i + sx, j + sy), indices clamped to the grid."""
    nx, ny = A.shape[:2]
    ix, iy = math.floor(sx), math.floor(sy)
    fx, fy = sx - ix, sy - iy
    i0 = np.clip(np.arange(nx) + ix, 0, nx - 1)
    i1 = np.clip(np.arange(nx) + ix + 1, 0, nx - 1)
    j0 = np.clip(np.arange(ny) + iy, 0, ny - 1)
    j1 = np.clip(np.arange(ny) + iy + 1, 0, ny - 1)
    return ((1 - fx) * (1 - fy) * A[i0][:, j0] + fx * (1 - fy) * A[i1][:, j0]
            + (1 - fx) * fy * A[i0][:, j1] + fx * fy * A[i1][:, j1])


def solve_driving(resolution: float = 0.05, n_theta: int = 64, x_range=(-0.5, 6.5), y_range=(-0.5, 3.5),
                  tol: float = 0.01, max_iter: int = 2000, atol: float = 1e-7,
                  progress: bool = False) -> DrivingValueGrid:
    """Value iteration of V = min(l, max_a V(f(s, a))) on a grid (see the module docstring).

    ``n_theta`` must be a multiple of 16 so a steering step is a whole number of heading cells.
    """
    if n_theta % 16:
        raise ValueError("n_theta must be a multiple of 16")
    t0 = time.perf_counter()
    xs = np.arange(x_range[0], x_range[1] + resolution / 2, resolution)
    ys = np.arange(y_range[0], y_range[1] + resolution / 2, resolution)
    thetas = -math.pi + np.arange(n_theta) * 2 * math.pi / n_theta
    X, Y, T = np.meshgrid(xs, ys, thetas, indexing="ij")
    ell = D.margin(np.stack([X, Y, T], axis=-1))
    shift = n_theta // 16
    dx, dy = xs[1] - xs[0], ys[1] - ys[0]
    offsets = [(D.DT * D.V * math.cos(t) / dx, D.DT * D.V * math.sin(t) / dy) for t in thetas]
    # l(s+) is exact at the off-grid successor (it depends on the heading only through the position)
    step_xy = D.DT * D.V * np.stack([np.cos(T), np.sin(T), np.zeros_like(T)], axis=-1)
    ell_next = D.margin(np.stack([X, Y, T], axis=-1) + step_xy)
    Vv = ell.copy()
    it = 0
    for it in range(1, max_iter + 1):
        best = np.full_like(Vv, -np.inf)
        for k in range(n_theta):
            src = Vv[:, :, [(k - shift) % n_theta, k, (k + shift) % n_theta]]
            best[:, :, k] = _shift_bilinear(src, *offsets[k]).max(axis=-1)
        new = np.minimum(ell, np.minimum(ell_next, best))  # min{ l(s), max_a min{ l(s+), V(s+) } }
        delta = float(np.max(np.abs(new - Vv)))
        Vv = new
        if progress and it % 25 == 0:
            print(f"  value iteration {it}: max change {delta:.2e}", flush=True)
        if delta < atol:
            break
    return DrivingValueGrid(xs, ys, thetas, Vv, it, time.perf_counter() - t0, tol,
                            {"resolution": resolution, "n_theta": n_theta, "converged": delta < atol})


def rollout_fallback(grid: DrivingValueGrid, states: np.ndarray, steps: int = 200) -> np.ndarray:
    """Roll out the implied fallback policy; True where the run never leaves l >= 0."""
    s = np.atleast_2d(np.asarray(states, dtype=float)).copy()
    ok = D.margin(s) >= 0
    for _ in range(steps):
        s = D.step(s, grid.fallback(s))
        ok &= D.margin(s) >= 0
    return ok


def exhaustive_can_survive(state: np.ndarray, depth: int = 12, dedup: float = 1e-6,
                           max_frontier: int = 200_000) -> bool | None:
    """Independent oracle: does some action sequence keep l >= 0 for ``depth`` steps?

    Breadth-first over all 3^depth sequences, dropping branches that failed and merging states equal
    up to ``dedup``. Returns True (a surviving sequence exists), False (every sequence fails: the
    state is certainly unsafe) or None (frontier too large to decide).
    """
    frontier = np.atleast_2d(np.asarray(state, dtype=float))
    frontier = frontier[D.margin(frontier) >= 0]
    for _ in range(depth):
        if len(frontier) == 0:
            return False
        nxt = np.concatenate([D.step(frontier, a) for a in range(3)])
        nxt = nxt[D.margin(nxt) >= 0]
        key = np.round(np.column_stack([nxt[:, 0], nxt[:, 1], np.cos(nxt[:, 2]), np.sin(nxt[:, 2])]) / dedup)
        _, idx = np.unique(key, axis=0, return_index=True)
        frontier = nxt[idx]
        if len(frontier) > max_frontier:
            return None
    return len(frontier) > 0


def validate(grid: DrivingValueGrid, n: int = 300, seed: int = 0, steps: int = 200, depth: int = 12) -> dict:
    """Check the grid's safe set against rollouts and exhaustive search from seeded road states.

    - ``safe_rollout_ok``: fraction of states labelled safe from which the implied fallback policy
      never fails in ``steps`` steps (should be 1).
    - ``unsafe_certified``: fraction of states with V <= 0 from which every action sequence fails
      within ``depth`` steps (should be 1; ``unsafe_undecided`` counts frontier blow-ups). States in
      the band 0 < V <= tol are labelled unsafe but are left out of both checks (``band_fraction``).
    """
    rng = np.random.default_rng(seed)
    s = np.column_stack([rng.uniform(0, D.GOAL_X + 1, 20 * n), rng.uniform(0, 3, 20 * n),
                         rng.uniform(-math.pi, math.pi, 20 * n)])
    s = s[D.margin(s) > 0]
    lab = grid.safe(s)
    val = np.minimum(D.margin(s), grid.value_at(s))
    safe_s, unsafe_s = s[lab][:n], s[val <= 0][:n]
    roll = rollout_fallback(grid, safe_s, steps)
    verdicts = [exhaustive_can_survive(x, depth) for x in unsafe_s]
    certified = sum(v is False for v in verdicts)
    undecided = sum(v is None for v in verdicts)
    return {
        "n_safe": len(safe_s), "n_unsafe": len(unsafe_s),
        "safe_rollout_ok": float(roll.mean()) if len(roll) else float("nan"),
        "unsafe_certified": certified / max(1, len(unsafe_s)),
        "unsafe_undecided": undecided / max(1, len(unsafe_s)),
        "unsafe_counterexamples": int(sum(v is True for v in verdicts)),
        "band_fraction": float(((val > 0) & ~lab).mean()),
        "rollout_steps": steps, "search_depth": depth,
    }
