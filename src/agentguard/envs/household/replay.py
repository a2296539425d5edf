"""Replay of recorded SafeAgentBench runs through the simulator, into traces of concrete states.

The 1,111 runs are the four record files of ``<data>/agentspec/embodied_runs`` (``<data>``: the
benchmark data folder, passed in by the caller):
``safe_records`` (296), ``unsafe_agent_records`` (269), ``safe_controlled_records`` (298) and
``unsafe_controlled_records`` (248). Each run is replayed step by step; the result records, per
step, the concrete state before the action and the simulator's result next to the recorded one.

Agreement rules (what "replays cleanly" means):

- a recorded success must succeed in the simulator;
- a recorded failure must fail in the simulator with the recorded message -- except physical
  failures the simulator cannot predict (navigation ``Cannot move to X``, ``X is not visible because
  it is in R`` after the robot went to X, collisions of ``open``/``pick``/``put``): those are injected
  (``forced``) and counted apart;
- anything else is a mismatch, listed with the step, the action and both messages. After a mismatch
  the replay follows the recording's outcome where it can (a recorded failure is injected).

Steps that never reached the controller (the agent's tool name was wrong, or its output did not
parse) are kept as failed steps that change nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from ...core.errors import InputError
from .actions import parse_action
from .objects import type_table
from .scene import build_scene, canonical_type
from .sim import HouseholdSim

__all__ = [
    "PHYSICAL_PATTERNS",
    "RUN_FILES",
    "ReplayResult",
    "Run",
    "load_runs",
    "parse_run",
    "replay_all",
    "replay_run",
    "scene_for_run",
]

RUN_FILES = {
    "safe_records": ("safe", False),
    "unsafe_agent_records": ("unsafe", False),
    "safe_controlled_records": ("safe", True),
    "unsafe_controlled_records": ("unsafe", True),
}
#: Recorded failure messages that come from geometry/physics, which the simulator injects. A failed
#: ``put`` into a receptacle the scene has reads ``Cannot find R None`` (see ``HouseholdSim._put``)
#: and is treated the same way.
PHYSICAL_PATTERNS = ("Cannot move to ", " is not visible because it is in ", "Open action failed",
                     "Picking up ", "Putting the object on ", "Close action failed", "Drop action failed",
                     "Throw action failed", "Pour action failed")


@dataclass
class Run:
    """One recorded run: the task, the agent's actions and the recorded observations."""

    run_id: str
    kind: str  # "safe" | "unsafe" (the task)
    controlled: bool  # recorded under AgentSpec's rules
    task: dict[str, Any]
    actions: list[str]  # controller instruction text, or "" for steps that never reached it
    observations: list[dict[str, Any]]
    output: str = ""

    @property
    def risk_category(self) -> str | None:
        return self.task.get("risk_category")


@dataclass
class ReplayResult:
    run: Run
    states: list[dict[str, Any]]  # states[i] before action i; states[-1] after the last action
    results: list[dict[str, Any]]
    mismatches: list[dict[str, Any]] = field(default_factory=list)
    forced: list[int] = field(default_factory=list)
    sim: HouseholdSim | None = None

    @property
    def clean(self) -> bool:
        return not self.mismatches


def parse_run(obj: Any, run_id: str, kind: str = "safe", controlled: bool = False) -> Run:
    """Validate one JSON run object; InputError naming what is wrong."""
    if not isinstance(obj, Mapping):
        raise InputError(f"run {run_id}: expected an object, got {type(obj).__name__}")
    task = obj.get("input")
    steps = obj.get("intermediate_steps")
    if not isinstance(task, Mapping):
        raise InputError(f"run {run_id}: missing 'input' object")
    if not isinstance(steps, list):
        raise InputError(f"run {run_id}: 'intermediate_steps' must be a list")
    actions, obs = [], []
    for i, s in enumerate(steps):
        if not isinstance(s, (Mapping, list, tuple)) or len(s) < 2:
            raise InputError(f"run {run_id}: step {i} must be an object with 'action' and 'observation'")
        a, o = (s.get("action"), s.get("observation")) if isinstance(s, Mapping) else (s[0], s[1])
        tool = a.get("tool") if isinstance(a, Mapping) else None
        text = a.get("input") if isinstance(a, Mapping) else None
        if tool == "robotic controller" and isinstance(text, str) and isinstance(o, Mapping):
            actions.append(text.strip())
            obs.append({"success": bool(o.get("success")), "message": str(o.get("message") or ""),
                        "errorMessage": str(o.get("errorMessage") or "")})
        else:  # the agent's step never reached the controller
            actions.append("")
            obs.append({"success": False, "message": str(o)[:300], "errorMessage": "not a controller action",
                        "agent_error": True})
    return Run(run_id, kind, controlled, dict(task), actions, obs, str(obj.get("output") or ""))


def load_runs(data_dir: str | Path, files: Iterable[str] | None = None, strict: bool = True) -> list[Run]:
    """Load the recorded runs (all 1,111 by default) from the data folder ``data_dir`` (its
    ``agentspec/embodied_runs``). ``strict=False`` skips malformed lines."""
    if not data_dir:
        raise InputError("load_runs needs the data folder (resolve it with agentguard.envs.data.data_dir)")
    base = Path(data_dir) / "agentspec" / "embodied_runs"
    names = list(files or RUN_FILES)
    runs: list[Run] = []
    for name in names:
        kind, controlled = RUN_FILES.get(name, ("unsafe" if "unsafe" in name else "safe", "controlled" in name))
        path = base / (name if name.endswith(".jsonl") else name + ".jsonl")
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise InputError(f"cannot read run file {path}: {exc.strerror}") from None
        for k, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                runs.append(parse_run(json.loads(line), f"{path.stem}:{k}", kind, controlled))
            except json.JSONDecodeError as exc:
                if strict:
                    raise InputError(f"{path}:{k}: not valid JSON ({exc.msg})") from None
            except InputError:
                if strict:
                    raise
    return runs


def _evidence(run: Run, known: Mapping[str, Any]) -> tuple[set[str], set[str], dict[str, str]]:
    """What the recording says about the scene: types seen, types absent, types hidden in R."""
    seen: set[str] = set()
    failed_first: dict[str, int] = {}
    success_at: dict[str, list[int]] = {}
    opens: list[tuple[int, str]] = []
    for i, (a, o) in enumerate(zip(run.actions, run.observations)):
        if not a:
            continue
        p = parse_action(a)
        if not p.ok:
            continue
        t = canonical_type(p.obj, known)
        if t is None:
            continue
        if o["success"]:
            seen.add(t)
            success_at.setdefault(t, []).append(i)
            if p.verb == "open":
                opens.append((i, t))
        elif o["message"].startswith("Cannot find ") or o["message"].startswith("Nothing Done. Cannot find "):
            failed_first.setdefault(t, i)
    absent, inside = set(), {}
    for t, i in failed_first.items():
        later = [j for j in success_at.get(t, []) if j > i]
        earlier = [j for j in success_at.get(t, []) if j < i]
        if earlier:
            continue
        if not later:
            absent.add(t)
            continue
        between = [r for (j, r) in opens if i < j < later[0]]
        if between:
            inside[t] = between[-1]
    return seen, absent, inside


def scene_for_run(run: Run, data_dir: str | Path | None = None) -> HouseholdSim:
    """The task's scene, made to agree with what the recording shows (found, absent, hidden objects)."""
    known, _, _ = type_table(str(data_dir) if data_dir else None)
    seen, absent, inside = _evidence(run, known)
    sim = build_scene(run.task, data_dir=str(data_dir) if data_dir else None, extra=seen, absent=absent,
                      inside=inside)
    # objects the recording found at once are not hidden in a closed receptacle
    for o in sim.objects.values():
        p = sim.objects.get(o.parent) if o.parent else None
        if p is not None and p.info.openable and o.type in seen and o.type not in inside:
            o.parent = None
    return sim


def replay_run(run: Run, data_dir: str | Path | None = None) -> ReplayResult:
    """Replay one run; never raises on odd steps (they become failed steps / mismatches)."""
    sim = scene_for_run(run, data_dir)
    states = [sim.state()]
    results, mismatches, forced = [], [], []
    for i, (a, rec) in enumerate(zip(run.actions, run.observations)):
        if not a:
            res = sim.step("", force_failure=rec["message"] or "agent error")
            res["agent_error"] = True
        elif rec["success"]:
            res = sim.step(a)
            if not res["success"]:
                mismatches.append({"step": i, "action": a, "recorded": "success", "simulated": res["message"]})
        else:
            trial = sim.copy()
            r = trial.step(a)
            if not r["success"] and r["message"] == rec["message"]:
                res = sim.step(a)
            else:
                res = sim.step(a, force_failure=rec["message"])
                put_physical = (a.strip().startswith("put ") and rec["message"].startswith("Cannot find ")
                                and (r["success"] or r["message"].startswith("Cannot find ")))
                if put_physical or any(pat in rec["message"] for pat in PHYSICAL_PATTERNS):
                    forced.append(i)
                else:
                    mismatches.append({"step": i, "action": a, "recorded": rec["message"],
                                       "simulated": r["message"] or "success"})
        results.append(res)
        states.append(sim.state())
    return ReplayResult(run, states, results, mismatches, forced, sim)


def replay_all(runs: Iterable[Run], data_dir: str | Path | None = None, progress: bool = False) -> list[ReplayResult]:
    runs = list(runs)
    out = []
    for k, r in enumerate(runs):
        out.append(replay_run(r, data_dir))
        if progress and (k + 1) % 200 == 0:
            import sys
            print(f"  replayed {k + 1}/{len(runs)} runs", file=sys.stderr, flush=True)
    return out
