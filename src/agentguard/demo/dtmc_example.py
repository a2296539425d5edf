"""The DTMC example demo (``agentguard demo --dtmc-example``): learn a DTMC from example traces, check a safety property, report and draw it.

:func:`run_dtmc_demo` reads ``examples/microwave_traces.jsonl`` and ``examples/microwave_spec.yaml``
(a household agent heating food; the safety rule is the paper's "never a fork inside a running
microwave", Section 5.1), learns the DTMC with Eq. 1 and the PAC report, checks
``P=? [F "unsafe"]`` for every state, prints the per-state risk table, and writes into ``out``:
``model.json`` (the learned DTMC with counts), ``model.prism``, ``dtmc.png`` (unsafe states
highlighted) and ``summary.json``. Everything runs in a second or two.

The example traces come from :func:`generate_example_traces`, a seeded stochastic simulation of
the agent over AI2-THOR-like object lists; when the examples folder is not next to the package
(an installed wheel), the same traces are generated in memory.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..core.types import Step, ToolCall, Trace, read_traces
from ..spec.predicates import Abstraction, load_spec

__all__ = ["EXAMPLE_SPEC", "find_examples", "generate_example_traces", "run_dtmc_demo", "write_example_files"]

#: the spec of examples/microwave_spec.yaml (kept equal by a test)
EXAMPLE_SPEC: dict[str, Any] = {
    "name": "microwave-fork",
    "description": "Household agent heating food; unsafe: a fork inside a running microwave (Pro2Guard 5.1).",
    "predicates": {
        "fork_in_microwave": 'exists(objects, objectType == "Fork" and "Microwave" in parentReceptacles)',
        "food_in_microwave": 'exists(objects, objectType == "Potato" and "Microwave" in parentReceptacles)',
        "microwave_open": 'exists(objects, objectType == "Microwave" and isOpen)',
        "microwave_on": 'exists(objects, objectType == "Microwave" and isToggled)',
    },
    "infeasible": ["microwave_open and microwave_on"],
    "unsafe": "fork_in_microwave and microwave_on",
    "valid_transition": "hamming1",
    "terminal": "finish",
    "unseen": "pessimistic",
    "alpha": 1,
    "epsilon": 0.1,
    "delta": 0.05,
}

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
#: where a wheel puts the same folder (pyproject's force-include: agentguard/examples)
PACKAGED_EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def find_examples() -> Path | None:
    """The examples folder: the repository's, else the copy a pip install ships; None when neither is there."""
    for folder in (EXAMPLES, PACKAGED_EXAMPLES):
        if (folder / "microwave_traces.jsonl").is_file():
            return folder
    return None


def _concrete(w: dict[str, Any]) -> dict[str, Any]:
    def inside(obj: str) -> list[str]:
        return ["Microwave"] if w[obj] == "microwave" else (["CounterTop"] if w[obj] == "counter" else [])

    return {
        "objects": [
            {"objectType": "Microwave", "isOpen": w["open"], "isToggled": w["on"]},
            {"objectType": "Fork", "isPickedUp": w["Fork"] == "hand", "parentReceptacles": inside("Fork")},
            {"objectType": "Potato", "isPickedUp": w["Potato"] == "hand", "parentReceptacles": inside("Potato"),
             "isCooked": w["cooked"]},
        ]
    }


def generate_example_traces(n: int = 40, seed: int = 7, max_steps: int = 30) -> list[Trace]:
    """Seeded simulation of a household agent asked to heat a potato in the microwave.

    Each step is one action (find/pick/put/open/close/turn on/turn off/wait) that changes at most one
    of the spec's predicates. A careless run (35%) picks up a fork first and may put it into the
    open microwave; it sometimes notices and takes it out before switching the microwave on.
    """
    rng = np.random.default_rng(seed)
    traces = []
    for k in range(n):
        w = {"open": False, "on": False, "Fork": "counter", "Potato": "counter", "cooked": False}
        careless = rng.random() < 0.35
        steps: list[Step] = [Step(state=_concrete(w), action=None, time=0.0)]
        heated = 0
        for t in range(1, max_steps):
            hand = "Fork" if w["Fork"] == "hand" else ("Potato" if w["Potato"] == "hand" else None)
            r = rng.random()
            if w["on"]:
                heated += 1
                act = ("wait", "") if (heated < 2 or r < 0.45) else ("turn_off", "Microwave")
                if act[0] == "turn_off":
                    w["on"] = False
                    w["cooked"] = w["Potato"] == "microwave"
            elif careless and w["Fork"] == "counter" and hand is None and r < 0.6:
                act = ("pick", "Fork")
                w["Fork"] = "hand"
            elif hand == "Fork" and w["open"] and r < 0.75:
                act = ("put", "Microwave")
                w["Fork"] = "microwave"
            elif hand == "Fork" and not w["open"]:
                act = ("open", "Microwave")
                w["open"] = True
            elif w["Fork"] == "microwave" and w["open"] and hand is None and not w["cooked"] and r < 0.3:
                act = ("pick", "Fork")  # noticed the fork: take it out
                w["Fork"] = "hand"
            elif hand == "Fork":
                act = ("put", "CounterTop")
                w["Fork"] = "counter"
            elif w["cooked"]:
                if not w["open"]:
                    act = ("open", "Microwave")
                    w["open"] = True
                elif w["Potato"] == "microwave":
                    act = ("pick", "Potato")
                    w["Potato"] = "hand"
                else:
                    break  # done: the potato is heated and out
            elif w["Potato"] == "counter":
                act = ("find", "Potato") if r < 0.3 else ("pick", "Potato")
                if act[0] == "pick":
                    w["Potato"] = "hand"
            elif w["Potato"] == "hand":
                if not w["open"]:
                    act = ("open", "Microwave")
                    w["open"] = True
                else:
                    act = ("put", "Microwave")
                    w["Potato"] = "microwave"
            elif w["open"]:
                act = ("close", "Microwave")
                w["open"] = False
            else:
                act = ("turn_on", "Microwave")
                w["on"] = True
                heated = 0
            steps.append(Step(state=_concrete(w), action=ToolCall(act[0], {"object": act[1]} if act[1] else {}),
                              time=float(t)))
            if w["on"] and w["Fork"] == "microwave" and rng.random() < 0.5:
                steps.append(Step(state=_concrete(w), action=ToolCall("wait", {}), time=float(t) + 0.5))
                break  # the run is aborted after the hazard
        unsafe = any(s.state["objects"][1]["parentReceptacles"] == ["Microwave"] and s.state["objects"][0]["isToggled"]
                     for s in steps)
        traces.append(Trace(steps, {"unsafe": unsafe, "careless": careless}, run_id=f"run-{k:03d}"))
    return traces


def write_example_files(folder: str | Path) -> None:
    """Write examples/microwave_traces.jsonl and microwave_spec.yaml (how the committed files were made)."""
    import yaml

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "microwave_traces.jsonl", "w", encoding="utf-8") as fh:
        for tr in generate_example_traces():
            steps = [{"state": s.state, **({"action": s.action.to_dict()} if s.action else {})} for s in tr.steps]
            fh.write(json.dumps({"run_id": tr.run_id, "labels": tr.labels, "steps": steps}, separators=(",", ":")) + "\n")
    (folder / "microwave_spec.yaml").write_text(
        "# Abstraction spec for the microwave example (see docs/learning.md)\n"
        + yaml.safe_dump(EXAMPLE_SPEC, sort_keys=False, width=200)
    )


# --- the demo -----------------------------------------------------------------------------------------
def _risk_table(model: Any, risk: np.ndarray, pac: dict[str, Any], abstraction: Abstraction):
    from rich.table import Table

    t = Table(title='Per-state risk P=? [F "unsafe"] and PAC report', show_lines=False)
    for col, kw in (("state", {}), ("unsafe", {}), ("risk", {"justify": "right"}),
                    ("P_safe", {"justify": "right"}), ("n_p", {"justify": "right"}),
                    ("required", {"justify": "right"}), ("rule", {})):
        t.add_column(col, **kw)
    rows = {r["state"]: r for r in pac["states"]}
    for i, s in enumerate(model.state_names):
        r = rows[s]
        req = "fixed" if r["determined"] else ("inf" if r["required"] is None else str(r["required"]))
        rule = "holds" if r["holds"] else "[yellow]needs more[/yellow]"
        unsafe = "[red]yes[/red]" if model.labels["unsafe"][i] else ""
        t.add_row(s, unsafe, f"{risk[i]:.4f}", f"{1 - risk[i]:.4f}", str(r["count"]), req, rule)
    return t


def summary_unsafe(ab: Abstraction) -> str:
    return ab.describe()["unsafe"] or "(none)"


def run_dtmc_demo(out: str | Path = "demo-output", traces_path: str | Path | None = None,
                  spec_path: str | Path | None = None, console: Any = None, quiet: bool = False) -> dict[str, Any]:
    """Learn, check, report and draw (see the module docstring); returns the summary dict."""
    from rich.console import Console

    from ..predictive.checker import check
    from ..predictive.draw import draw_dtmc
    from ..predictive.learn import DTMCLearner
    from ..predictive.prism import write_prism

    t0 = time.perf_counter()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ex = find_examples()
    if traces_path is None and ex is not None:
        traces_path = ex / "microwave_traces.jsonl"
    if spec_path is None and ex is not None:
        spec_path = ex / "microwave_spec.yaml"
    traces = read_traces(str(traces_path)) if traces_path else generate_example_traces()
    ab = load_spec(spec_path) if spec_path else Abstraction.from_dict(EXAMPLE_SPEC, "embedded spec")
    opts = ab.options
    learner = DTMCLearner(ab, alpha=opts.get("alpha", 1), epsilon=opts.get("epsilon", 0.1),
                          delta=opts.get("delta", 0.05))
    learner.add(traces)
    model = learner.model()
    model.meta["name"] = ab.name
    res = check(model, 'P=? [F "unsafe"]')
    risk = np.clip(np.asarray(res.values, dtype=float), 0.0, 1.0)
    pac = learner.pac_report().to_dict()
    model.save(out / "model.json")
    write_prism(model, out / "model.prism")
    draw_dtmc(model, out / "dtmc.png", risk=risk,
              title=f"DTMC learned from {len(traces)} traces ({ab.name}); red border = unsafe")
    summary = {
        "traces": len(traces),
        "transitions": pac["transitions"],
        "states": model.state_names,
        "initial_state": model.state_names[model.initial],
        "property": 'P=? [F "unsafe"]',
        "risk": {s: float(r) for s, r in zip(model.state_names, risk)},
        "risk_initial": float(risk[model.initial]),
        "p_safe_initial": float(1 - risk[model.initial]),
        "unsafe_states": [s for s, u in zip(model.state_names, model.labels["unsafe"]) if u],
        "unsafe_runs_observed": sum(bool(t.labels.get("unsafe")) for t in traces),
        "pac": pac,
        "files": {k: str(out / f) for k, f in (("model", "model.json"), ("prism", "model.prism"),
                                               ("png", "dtmc.png"), ("summary", "summary.json"))},
        "seconds": round(time.perf_counter() - t0, 3),
        "traces_file": str(traces_path) if traces_path else "(generated in memory)",
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    if not quiet:
        con = console or Console()
        con.print(f"[bold]agentguard demo[/bold]: learned a {model.n}-state DTMC from {len(traces)} traces "
                  f"({pac['transitions']} transitions) with Eq. 1 (alpha={learner.alpha}); spec {ab.name!r}")
        con.print("state bits = " + ", ".join(ab.names) + f"; unsafe = {summary_unsafe(ab)}")
        con.print(_risk_table(model, risk, pac, ab))
        verdict = "[green]holds[/green]" if pac["done"] else "[yellow]does not hold yet[/yellow]"
        con.print(f"PAC stopping rule (epsilon={pac['epsilon']}, delta={pac['delta']}, B={pac['B']:.3g}, "
                  f"variant {pac['variant']}): {verdict}")
        con.print(f"P(reach unsafe) from the initial state {summary['initial_state']}: {summary['risk_initial']:.4f}"
                  f"  (observed unsafe runs: {summary['unsafe_runs_observed']}/{len(traces)})")
        con.print(f"wrote {out / 'model.json'}, {out / 'model.prism'}, {out / 'dtmc.png'}, {out / 'summary.json'}")
    return summary
