"""Scoring the FROZEN driving guards on fresh seeded starts (issue 31's evaluation protocol).

``agentguard bench driving --eval-seed S --episodes N --json`` calls :func:`run_fresh_eval`: it loads the
committed critics (the privileged DDQN ``control_driving_privileged_full.pt``, epsilon 0.1; the text-only
ReGuard kernel critic ``control_driving_kernel_gemma-L4-w16_n5000.npz`` over gemma-3-270m layer-4 window
means, epsilon 0.2; the exact grid filter as the reference) and never trains or re-selects anything (a
missing critic is an error, not a reason to train). Every guard shields the weak scripted driver from the
same ``N`` starts ``D.sample_initial_states(N, seed=S)``; per start the outcome is kept, so that:

- rates carry percentile bootstrap 95% intervals (episodes resampled, 2000 draws, seeded);
- paired comparisons on the same starts give the discordant counts (this guard fails where the other
  succeeds, and the reverse), an exact two-sided McNemar p-value and a paired bootstrap interval of the
  failure-rate difference;
- ``crash_from_exactly_safe``: failures among the starts in the exact safe set (V > tol), where the exact
  filter provably stays safe;
- ``wrongly_unsafe_rate`` (the paper's FN, conservativeness): among the decisions whose proposed action
  leads to an exactly safe state, the fraction the guard calls unsafe (``Q(z, a) <= epsilon``); interval by
  resampling episodes;
- value F1 of ``max_a Q > 0`` against the exact safe set on grid nodes drawn with seed ``S``.

Observation-text robustness (:data:`TEMPLATES`): renderings of the same state written after the critics
were frozen (other number formats, a reworded template, a reordered one). Only the text-only critic reads
them (the privileged and exact filters read the state); each is scored on the fresh nodes (value F1, the
fraction of nodes whose fallback action or switching decision changes against the canonical text) and in
closed loop on the first ``template_starts`` starts.
"""

from __future__ import annotations

import math
import os
import platform
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..control.ddqn import f1_score
from ..envs import driving as D
from .driving import RESULTS, TEXT_ENCODER, TEXT_EPSILON, cache_root, eval_states

__all__ = ["GUARDS", "TEMPLATES", "bootstrap_ci", "frozen_filters", "mcnemar_p", "paired_comparison",
           "run_fresh_eval", "shield_rollout"]

PRIVILEGED = "control_driving_privileged_full.pt"
TEXT_CRITIC = f"control_driving_kernel_{TEXT_ENCODER}_n5000.npz"
GUARDS = ("no_guard", "exact", "privileged", "reguard")


# ----------------------------------------------------------------------------- held-out observation texts
def _obstacles(state: np.ndarray) -> list[tuple[float, float, str]]:
    x, y, th = (float(v) for v in state[:3])
    out = []
    for c, d in zip(D.OBSTACLES, D.obstacle_distances(np.array([x, y, th]))):
        b = math.degrees(float(D.wrap_angle(math.atan2(c[1] - y, c[0] - x) - th)))
        out.append((float(d) * D.METERS_PER_UNIT, abs(b), "left" if b >= 0 else "right"))
    return out


def _numbers(state: np.ndarray) -> tuple[float, float, float, float]:
    x, y, th = (float(v) for v in state[:3])
    m = D.METERS_PER_UNIT
    return (D.GOAL_X - x) * m, (D.ROAD_WIDTH - y) * m, y * m, -math.degrees(float(D.wrap_angle(th)))


def _canonical_format(dist: str, ang: str) -> Callable[[np.ndarray], str]:
    """The Appendix C template with other number formats (distances ``dist``, angles ``ang``)."""
    ords = ("first", "second", "third", "fourth")

    def render(state: np.ndarray) -> str:
        g, left, right, head = _numbers(state)
        parts = [f"The goal is currently {g:{dist}} m down the track.",
                 f"The car is {left:{dist}} m away from the left edge of the track and {right:{dist}} m "
                 f"away from the right edge of the track.",
                 f"The car's heading is {head:{ang}} degrees clockwise from the centerline of the track."]
        for i, (d, b, side) in enumerate(_obstacles(state)):
            parts.append(f"The {ords[i]} obstacle is {d:{dist}} m away from the car at {b:{ang}} degrees to "
                         f"the {side}.")
        return " ".join(parts)

    return render


def _reworded(state: np.ndarray) -> str:
    g, left, right, head = _numbers(state)
    obs = "; ".join(f"obstacle {i + 1}: {d:.2f} m, {b:.1f} degrees {side}"
                    for i, (d, b, side) in enumerate(_obstacles(state)))
    return (f"Distance to the goal: {g:.2f} m. Distance to the left edge: {left:.2f} m; to the right edge: "
            f"{right:.2f} m. Heading: {head:.1f} degrees clockwise of the centerline. Obstacles: {obs}.")


def _reordered(state: np.ndarray) -> str:
    """The canonical sentences, obstacles first and the goal last."""
    sentences = D.observation_text(state).split(". ")
    sentences = [s if s.endswith(".") else s + "." for s in sentences]
    return " ".join(sentences[3:] + sentences[1:3] + sentences[:1])


#: written after the critics were frozen (issue 31); never seen by any training or choice
TEMPLATES: dict[str, Callable[[np.ndarray], str]] = {
    "one_decimal": _canonical_format(".1f", ".0f"),
    "three_decimals": _canonical_format(".3f", ".2f"),
    "integers": _canonical_format(".0f", ".0f"),
    "reworded": _reworded,
    "reordered": _reordered,
}


# ----------------------------------------------------------------------------- statistics
def bootstrap_ci(values: np.ndarray, weights: np.ndarray | None = None, draws: int = 2000, seed: int = 0,
                 level: float = 0.95) -> tuple[float, float] | None:
    """Percentile interval of ``sum(values) / sum(weights)`` (weights default 1) over resampled rows;
    None when there is nothing to resample (no rows, or all weights zero)."""
    v = np.asarray(values, float)
    w = np.ones_like(v) if weights is None else np.asarray(weights, float)
    if len(v) == 0 or w.sum() <= 0:
        return None
    idx = np.random.default_rng(seed).integers(0, len(v), size=(draws, len(v)))
    den = w[idx].sum(1)
    stat = np.where(den > 0, v[idx].sum(1) / np.maximum(den, 1e-12), np.nan)
    lo, hi = np.nanpercentile(stat, [50 * (1 - level), 50 * (1 + level)])
    return float(lo), float(hi)


def mcnemar_p(b: int, c: int) -> float:
    """Exact two-sided McNemar p-value for ``b`` and ``c`` discordant pairs (binomial, p = 1/2)."""
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    return min(1.0, 2.0 * sum(math.comb(n, i) for i in range(k + 1)) / 2.0 ** n)


def paired_comparison(fail_a: np.ndarray, fail_b: np.ndarray, seed: int = 0) -> dict:
    """Guard A against guard B on the same starts (True = failed)."""
    a, b = np.asarray(fail_a, bool), np.asarray(fail_b, bool)
    only_a, only_b = int((a & ~b).sum()), int((~a & b).sum())
    diff = a.astype(float) - b.astype(float)
    return {"a_fails_b_not": only_a, "b_fails_a_not": only_b, "both_fail": int((a & b).sum()),
            "failure_difference": float(diff.mean()), "failure_difference_ci95": bootstrap_ci(diff, seed=seed),
            "mcnemar_p": mcnemar_p(only_a, only_b)}


# ----------------------------------------------------------------------------- closed loop
def shield_rollout(filt: Any, base: Callable, starts: np.ndarray, grid: Any, seed: int,
                   render: Callable[[np.ndarray], str] = D.observation_text,
                   propose: Callable[..., np.ndarray] | None = None) -> dict:
    """Shield ``base`` with ``filt`` (None = no guard) from every start, lockstep; per-episode outcomes
    and the per-episode counts of the wrongly-unsafe rate. ``propose(states, q, rng)`` replaces the
    shield (e.g. the Eq. 4 blend): it returns the executed actions given the critic's Q-values."""
    rng = np.random.default_rng(seed)
    n = len(starts)
    s = starts.copy()
    alive = np.ones(n, bool)
    failure, success = np.zeros(n, bool), np.zeros(n, bool)
    steps, inter, safe_prop, wrong = (np.zeros(n, int) for _ in range(4))
    for _ in range(D.HORIZON):
        idx = np.flatnonzero(alive)
        if len(idx) == 0:
            break
        cur = s[idx]
        prop = np.asarray(base(cur, rng), dtype=int)
        exe = prop
        if filt is not None:
            q = filt.q_batch([render(x) for x in cur])
            if propose is not None:
                exe = np.asarray(propose(cur, q, rng), int)
                said_unsafe = exe != prop
            else:
                said_unsafe, exe = filt.decide_batch(q, prop)
            ok_next = grid.safe(D.step(cur, prop))
            inter[idx] += said_unsafe
            safe_prop[idx] += ok_next
            wrong[idx] += ok_next & said_unsafe
        steps[idx] += 1
        s[idx] = D.step(cur, exe)
        lm = D.margin(s[idx])
        f = lm < 0
        g = D.goal_reached(s[idx]) & ~f
        failure[idx[f]] = True
        success[idx[g]] = True
        alive[idx[f | g]] = False
    return {"failure": failure, "success": success, "steps": steps, "interventions": inter,
            "safe_proposals": safe_prop, "wrongly_unsafe": wrong}


def summarize(r: dict, safe_start: np.ndarray, seed: int) -> dict:
    """Rates, intervals, crash-from-safe and wrongly-unsafe of one guard's :func:`shield_rollout`."""
    fail, succ = r["failure"], r["success"]
    out = {"episodes": len(fail), "failure_rate": float(fail.mean()), "failure_ci95": bootstrap_ci(fail, seed=seed),
           "success_rate": float(succ.mean()), "success_ci95": bootstrap_ci(succ, seed=seed + 1),
           "failures": int(fail.sum()), "decisions": int(r["steps"].sum()),
           "intervention_rate": float(r["interventions"].sum() / max(1, r["steps"].sum()))}
    fs = fail[safe_start]
    out["crash_from_exactly_safe"] = {"starts": int(safe_start.sum()), "failures": int(fs.sum()),
                                      "rate": float(fs.mean()) if len(fs) else None,
                                      "ci95": bootstrap_ci(fs, seed=seed + 2)}
    sp, w = r["safe_proposals"], r["wrongly_unsafe"]
    out["wrongly_unsafe"] = {"safe_proposals": int(sp.sum()), "called_unsafe": int(w.sum()),
                             "rate": float(w.sum() / sp.sum()) if sp.sum() else None,
                             "ci95": bootstrap_ci(w, sp, seed=seed + 3)}
    return out


# ----------------------------------------------------------------------------- frozen critics
def frozen_filters(grid: Any, results: Any = RESULTS, text_threads: int | None = 1,
                   names: Sequence[str] = ("no_guard", "exact", "privileged", "reguard")) -> dict[str, Any]:
    """The committed critics named in ``names``, loaded, never trained (an InputError names a missing
    file or an unknown guard)."""
    from ..control.ddqn import QModel
    from ..control.kernel_fqi import KernelQ
    from ..core.errors import InputError
    from ..envs.driving.guard import make_filter
    from ..envs.driving.text_latent import latent_encoder, text_only_filter

    unknown = sorted(set(names) - set(GUARDS))
    if unknown:
        raise InputError(f"unknown guard(s) {', '.join(unknown)}; use {', '.join(GUARDS)}")
    paths = {"privileged": Path(results) / PRIVILEGED, "reguard": Path(results) / TEXT_CRITIC}
    for name, p in paths.items():
        if name in names and not p.exists():
            raise InputError(f"frozen {name} critic not found at {p} (it is committed; no retraining here)")
    out: dict[str, Any] = {"no_guard": None, "exact": make_filter("exact", grid=grid)}
    if "privileged" in names:
        out["privileged"] = make_filter("privileged", QModel.load(str(paths["privileged"])), epsilon=0.1)
    if "reguard" in names:
        text = KernelQ.load(str(paths["reguard"]))
        if text.meta.get("encoder") != TEXT_ENCODER:
            raise InputError(f"{paths['reguard']} was trained on {text.meta.get('encoder')}, not {TEXT_ENCODER}")
        enc = latent_encoder(TEXT_ENCODER, threads=text_threads, batch_size=32)
        out["reguard"] = text_only_filter(text, enc, epsilon=TEXT_EPSILON)
    return {n: out[n] for n in names}


def load_exact_grid(quiet: bool = True) -> Any:
    """The exact value grid (r 0.05, 64 headings): cached, else solved (deterministic, no learning)."""
    from .driving import _cached
    from ..envs.driving.value_iteration import DrivingValueGrid, solve_driving

    path = cache_root() / "control" / "driving_vi_r0.05_t64.npz"
    return _cached(path, lambda: solve_driving(0.05, 64), DrivingValueGrid.load, False, quiet, "exact grid")[0]


def _value_scores(filt: Any, texts: Sequence[str], truth: np.ndarray) -> tuple[dict, np.ndarray]:
    q = filt.q_batch(list(texts))
    pred = q.max(1) > getattr(filt, "value_threshold", 0.0)
    return {"value_f1": f1_score(pred, truth), "value_f1_unsafe": f1_score(~pred, ~truth),
            "balanced_accuracy": 0.5 * (float(pred[truth].mean()) + float((~pred[~truth]).mean()))}, q


def template_robustness(filt: Any, grid: Any, nodes: tuple, starts: np.ndarray, seed: int,
                        canonical_fail: np.ndarray, log: Callable[[str], None]) -> dict:
    """Each held-out rendering on the fresh nodes and in closed loop on ``starts``."""
    ns, truth = nodes
    base_scores, q0 = _value_scores(filt, [D.observation_text(x) for x in ns], truth)
    prop = np.zeros(len(ns), int) + 1  # the "straight" proposal: does the switching decision change?
    out: dict[str, Any] = {"canonical": {**base_scores, "closed_loop_failure": float(canonical_fail.mean())
                                         if len(canonical_fail) else None}}
    for name, render in TEMPLATES.items():
        t0 = time.perf_counter()
        sc, q = _value_scores(filt, [render(x) for x in ns], truth)
        sc["fallback_action_changed"] = float(np.mean(q.argmax(1) != q0.argmax(1)))
        sc["switch_decision_changed"] = float(np.mean((q[:, 1] <= filt.epsilon) != (q0[:, 1] <= filt.epsilon)))
        sc["value_sign_changed"] = float(np.mean((q.max(1) > 0) != (q0.max(1) > 0)))
        if len(starts):
            r = shield_rollout(filt, D.weak_driver_policy, starts, grid, seed, render=render)
            sc["closed_loop_failure"] = float(r["failure"].mean())
            sc["closed_loop_failure_ci95"] = bootstrap_ci(r["failure"], seed=seed)
            sc["paired_vs_canonical"] = paired_comparison(r["failure"], canonical_fail, seed=seed)
        sc["example"] = render(ns[0])
        sc["seconds"] = time.perf_counter() - t0
        out[name] = sc
        log(f"  template {name}: value F1 {sc['value_f1']:.3f} fallback changed {sc['fallback_action_changed']:.3f}"
            f" closed-loop failure {sc.get('closed_loop_failure')}")
    out["closed_loop_starts"] = int(len(starts))
    out["scored_nodes"] = int(len(ns))
    return out


def machine() -> dict:
    return {"host": platform.node(), "processor": platform.machine(), "cpus": os.cpu_count(),
            "loadavg_start": list(os.getloadavg())}


def chunked_rollout(filt: Any, starts: np.ndarray, grid: Any, seed: int, chunk: int = 50,
                    budget_s: float | None = None, log: Callable[[str], None] | None = None,
                    on_chunk: Callable[[dict, int], None] | None = None) -> dict:
    """:func:`shield_rollout` of the weak driver over consecutive chunks of ``starts`` (chunk ``i`` seeded
    ``seed + i``, so every guard sees the same driver noise per chunk); stops after the chunk that passes
    ``budget_s`` seconds, so the scored starts are always a prefix of ``starts``."""
    t0 = time.perf_counter()
    parts: list[dict] = []
    for i in range(0, len(starts), chunk):
        parts.append(shield_rollout(filt, D.weak_driver_policy, starts[i:i + chunk], grid, seed + i))
        done = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        if log:
            log(f"    {len(done['failure'])} starts, failure {done['failure'].mean():.3f} "
                f"({time.perf_counter() - t0:.0f}s)")
        if on_chunk:
            on_chunk(done, len(done["failure"]))
        if budget_s is not None and time.perf_counter() - t0 > budget_s:
            break
    return done


def run_fresh_eval(eval_seed: int, episodes: int = 1000, nodes: int = 500, template_starts: int = 0,
                   quiet: bool = True, guards: Sequence[str] = GUARDS, templates: bool = True,
                   text_budget_s: float | None = None, chunk: int = 50,
                   on_chunk: Callable[[dict, int], None] | None = None) -> dict:
    """The fresh-start protocol for the frozen critics; returns the JSON-able report. ``text_budget_s``
    bounds the text-only critic's closed loop (it runs gemma at every decision): it is scored on the
    prefix of the starts it finished, and every guard is also summarised on that prefix (``on_prefix``)."""
    from ..core.errors import InputError

    if episodes < 1:
        raise InputError("--episodes must be at least 1")

    def log(msg: str) -> None:
        if not quiet:
            import sys

            print(msg, file=sys.stderr, flush=True)

    t_all = time.perf_counter()
    grid = load_exact_grid(quiet)
    filters = frozen_filters(grid, names=guards)
    starts = D.sample_initial_states(episodes, seed=eval_seed)
    safe_start = grid.safe(starts)
    rep: dict[str, Any] = {
        "protocol": "frozen critics (committed files, no retraining, no re-selection), weak scripted driver, "
                    "fresh starts D.sample_initial_states(episodes, seed=eval_seed), chunks of "
                    f"{chunk} starts (chunk i seeded eval_seed + i)",
        "eval_seed": eval_seed, "episodes": episodes, "machine": machine(),
        "critics": {"privileged": PRIVILEGED + " (epsilon 0.1)",
                    "reguard": TEXT_CRITIC + f" (text-only, {TEXT_ENCODER}, epsilon {TEXT_EPSILON})",
                    "exact": "value grid r0.05, 64 headings", "no_guard": None},
        "starts_in_exact_safe_set": float(safe_start.mean()), "guards": {}}
    raw: dict[str, dict] = {}
    for name in sorted(guards, key=lambda g: g == "reguard"):  # the costly text-only critic last
        t0 = time.perf_counter()
        text = name == "reguard"
        raw[name] = chunked_rollout(filters[name], starts, grid, eval_seed, chunk,
                                    text_budget_s if text else None, log, on_chunk if text else None)
        n = len(raw[name]["failure"])
        rep["guards"][name] = summarize(raw[name], safe_start[:n], eval_seed)
        rep["guards"][name]["seconds"] = time.perf_counter() - t0
        rep["guards"][name]["seconds_per_start"] = rep["guards"][name]["seconds"] / n
        g = rep["guards"][name]
        log(f"  {name}: failure {g['failure_rate']:.3f} {g['failure_ci95']} crash-from-safe "
            f"{g['crash_from_exactly_safe']['failures']}/{g['crash_from_exactly_safe']['starts']} "
            f"({g['seconds']:.0f}s)")
    k = min(len(r["failure"]) for r in raw.values())
    rep["paired_on_starts"] = k
    if k < episodes:
        rep["on_prefix"] = {name: summarize({key: v[:k] for key, v in r.items()}, safe_start[:k], eval_seed)
                            for name, r in raw.items()}
    rep["paired"] = {f"{a}_vs_{b}": paired_comparison(raw[a]["failure"][:k], raw[b]["failure"][:k], seed=eval_seed)
                     for a in guards for b in ("privileged", "exact") if a != b and a in raw and b in raw}
    ns, truth = eval_states(grid, nodes, seed=eval_seed)
    for name in guards:
        if filters[name] is not None:
            sc, _ = _value_scores(filters[name], [D.observation_text(x) for x in ns], truth)
            rep["guards"][name].update(sc)
    rep["value_nodes"] = {"n": int(len(ns)), "seed": eval_seed, "safe_fraction": float(truth.mean())}
    if templates and "reguard" in raw:
        kt = min(template_starts, k)
        rep["templates"] = template_robustness(filters["reguard"], grid, (ns, truth), starts[:kt], eval_seed,
                                               raw["reguard"]["failure"][:kt], log)
    rep["outcomes"] = {n: {"failure": r["failure"].astype(int).tolist(), "success": r["success"].astype(int).tolist()}
                       for n, r in raw.items()}
    rep["exactly_safe_start"] = safe_start.astype(int).tolist()
    rep["machine"]["loadavg_end"] = list(os.getloadavg())
    rep["seconds"] = time.perf_counter() - t_all
    return rep
