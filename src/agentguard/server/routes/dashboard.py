"""The dashboard: its shell (``GET /dashboard``, ``/static/*``, ``/`` redirects there) and what it
draws besides runs: ``GET /v1/model`` (the DTMC), ``GET /v1/calibration`` (the curves), and
``GET /v1/runs/{run_id}/story`` (one run told in order: each decision with the tool call and arguments or
the step's action and state it judged, the guards' verdicts, the approver of an approval, halted or not, the
DTMC state it is in, and the guard stack described in words). ``/dashboard?run=ID`` opens one run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from starlette.responses import FileResponse, RedirectResponse, Response
from starlette.staticfiles import StaticFiles

from ..gate import JSONResponse, error
from ..service import Service

__all__ = ["STATIC_DIR", "describe_guard", "dtmc_json", "register", "run_story"]

STATIC_DIR = Path(__file__).resolve().parents[1] / "static"


def dtmc_json(m: Any) -> dict[str, Any] | None:
    """A DTMC as plain JSON for the dashboard: states, edges with probabilities, unsafe states."""
    if m is None:
        return None
    import numpy as np

    csr = m.matrix.tocsr()
    n = m.n
    names = list(m.state_names) if m.state_names else [str(i) for i in range(n)]
    edges = []
    for i in range(n):
        for k in range(csr.indptr[i], csr.indptr[i + 1]):
            edges.append([i, int(csr.indices[k]), float(csr.data[k])])
    unsafe = []
    for lab in ("unsafe", "bad", "violation"):
        if lab in m.labels:
            unsafe = [int(i) for i in np.flatnonzero(m.labels[lab])]
            break
    return {"n": n, "states": names, "initial": int(m.initial), "edges": edges, "unsafe": unsafe,
            "labels": {k: [int(i) for i in np.flatnonzero(v)] for k, v in m.labels.items()}}


def _names(xs: Any) -> str:
    xs = [str(x) for x in (xs or [])]
    return ", ".join(xs) if xs else "none"


def _one_line(g: Any) -> str:
    """One guard in words (what it refuses, asks about or watches)."""
    kind, name = type(g).__name__, getattr(g, "name", "guard")
    if kind == "GuardStack":
        on_error = getattr(getattr(g, "on_error", None), "name", "HALT")
        return (f"{name}: asks {len(g.guards)} guard(s) in order; the strictest verdict wins; a guard that "
                f"fails or times out counts as {on_error}")
    if kind == "ToolRuleGuard":
        parts = []
        for attr, verb in (("deny", "refuses tools"), ("escalate", "asks a human before"), ("halt", "stops the run on"),
                           ("allow", "allows only")):
            pats = getattr(g, attr, None)
            if pats:
                parts.append(f"{verb} {_names(getattr(p, 'pattern', p) for p in pats)}")
        rules = getattr(g, "arguments", None) or []
        if rules:
            parts.append(f"checks {len(rules)} argument rule(s)")
        return f"{name}: " + ("; ".join(parts) or "tool-name and argument rules")
    if kind == "ToolCallGuard":
        pols = [f"{b.policy.id} (tools {_names(b.tools)})" for b in getattr(g, "bindings", [])]
        unknown = "allowed" if getattr(g, "unknown_tool", "deny") == "allow" else "refused"
        return f"{name}: verified policy {_names(pols)}; a tool no policy covers is {unknown}"
    if kind == "ThresholdMonitor":
        return (f"{name}: raises an alarm when the signal '{getattr(g, 'signal', 'score')}' falls below "
                f"{getattr(g, 'threshold', '?')} (calibrated monitor, Eq. 1)")
    if kind in ("ProactiveGuard", "ProductGuard"):
        return (f"{name}: predicts the probability of reaching an unsafe state of its DTMC and intervenes when it "
                f"crosses {getattr(g, 'threshold', '?')} (Pro2Guard)")
    if kind == "StepToolGuard":
        return f"{name}: applies the tool-call guard to the tool call of each step"
    if kind == "SafetyFilter":
        return f"{name}: certifies each action with a learned safety value or substitutes a safe fallback (ReGuard)"
    return f"{name} ({kind})"


def describe_guard(guard: Any, depth: int = 0, out: list[str] | None = None) -> list[str]:
    """The guard and the guards inside it, one sentence each, indented by nesting (at most 50 lines)."""
    out = [] if out is None else out
    if len(out) >= 50 or depth > 6:
        return out
    out.append("  " * depth + _one_line(guard))
    for inner in list(getattr(guard, "guards", None) or []) + [
            getattr(guard, a) for a in ("tool_guard",) if getattr(guard, a, None) is not None]:
        describe_guard(inner, depth + 1, out)
    return out


def _state_index(model: Any, state: Any) -> int | None:
    if model is None or state is None:
        return None
    names = [str(x) for x in (model.state_names or range(model.n))]
    key = state if isinstance(state, str) else json.dumps(state) if not isinstance(state, (int, float)) else str(state)
    return names.index(key) if key in names else None


def _inputs_by_decision(svc: Service, run_id: str) -> dict[str, dict[str, Any]]:
    try:
        rows = svc.store.run_inputs(run_id)
    except Exception:  # noqa: BLE001 - an older store without inputs: the story shows the steps only
        return {}
    return {r["decision_id"]: r for r in rows if isinstance(r.get("payload"), dict)}


def _verdicts(payload: dict[str, Any], d: dict[str, Any]) -> list[dict[str, Any]]:
    """Every guard's verdict where the input row kept them (an escalation keeps the whole stack's), else the
    deciding guard's own (what the audit row holds)."""
    v = payload.get("verdict") if isinstance(payload.get("verdict"), dict) else None
    inner = ((v or {}).get("details") or {}).get("verdicts") if v else None
    if isinstance(inner, list) and inner:
        return [{k: x.get(k) for k in ("guard", "decision", "reason")} for x in inner if isinstance(x, dict)]
    return [{"guard": d["guard"], "decision": d["decision"], "reason": d["reason"]}]


def _call_of(inp: dict[str, Any] | None, calls: dict[str, Any]) -> tuple[Any, str | None, str | None]:
    """(the tool call an input is about, its approver, the escalation it answers) from its stored input row."""
    if not inp:
        return None, None, None
    body = inp["payload"].get("input") if isinstance(inp["payload"].get("input"), dict) else {}
    if inp.get("kind") == "approval":
        answered = body.get("decision_id")
        return calls.get(str(answered)), body.get("approver"), answered
    return body.get("tool_call"), None, None


def run_story(svc: Service, run_id: str, limit: int = 2000) -> dict[str, Any]:
    """One run in order: each decision with what it judged (the tool call and its arguments for ``/v1/check``
    and approvals, the step's action and state for steps), every guard's verdict where it was kept, the
    approver of an approval (and, on the escalation, who answered it), whether the run halted, the DTMC state
    it is in, and the guard stack in words."""
    ds = svc.store.decisions(run_id=run_id, limit=max(1, min(int(limit), 10_000)))
    steps = {s["decision_id"]: s for s in svc.store.run_steps(run_id)}
    inputs = _inputs_by_decision(svc, run_id)
    g = svc.source.get()
    events: list[dict[str, Any]] = []
    calls: dict[str, Any] = {}
    current = None
    for i, d in enumerate(ds):
        st = steps.get(d.get("decision_id"))
        payload = st["payload"] if st else {}
        action = payload.get("action") if isinstance(payload, dict) else None
        state = payload.get("state") if isinstance(payload, dict) else None
        inp = inputs.get(str(d.get("decision_id")))
        call, approver, answers = _call_of(inp, calls)
        if action is None and call is not None:
            action = call
        if call is not None and d.get("kind") == "check":
            calls[str(d["decision_id"])] = call
        idx = _state_index(g.model, state)
        if idx is not None:
            current = idx
        events.append({"i": i, "ts": d["ts"], "decision_id": d.get("decision_id"), "kind": d["kind"],
                       "guard": d["guard"], "decision": d["decision"], "reason": d["reason"], "numbers": d["numbers"],
                       "action": action, "state": state, "state_index": idx, "step": st["idx"] if st else None,
                       "verdicts": _verdicts(inp["payload"] if inp else {}, d), "approver": approver,
                       "answers": answers, "principal": d.get("principal"),
                       "shadow": d.get("shadow") or []})  # would-be verdicts of guards in shadow mode
    answered = {e["answers"]: e for e in events if e["answers"]}
    for e in events:
        if e["decision_id"] in answered:
            a = answered[e["decision_id"]]
            e["approver"] = f"{a['approver']} ({'approved' if a['decision'] == 'ALLOW' else 'refused'})"
    halt = next((e for e in events if e["decision"] == "HALT"), None)
    meanings: dict[int, list[str]] = {}
    if g.model is not None:
        import numpy as np

        for lab, mask in g.model.labels.items():
            for j in np.flatnonzero(mask):
                meanings.setdefault(int(j), []).append(str(lab))
    return {
        "run_id": run_id, "events": events, "halted": halt is not None,
        "halt_reason": halt["reason"] if halt else None, "current_state": current,
        "state_meanings": {str(k): v for k, v in meanings.items()},
        "guards": {k: describe_guard(getattr(g, k)) for k in ("tool", "step", "signal")},
        "decisions": sorted({e["decision"] for e in events}), "guard_names": sorted({e["guard"] for e in events}),
    }


def register(app: FastAPI, svc: Service) -> None:
    source = svc.source

    @app.get("/", include_in_schema=False)
    async def root() -> Response:
        return RedirectResponse("/dashboard")

    @app.get("/dashboard", include_in_schema=False)
    async def dashboard() -> Response:
        return FileResponse(STATIC_DIR / "dashboard.html", media_type="text/html")

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

    @app.get("/v1/model", tags=["dashboard"], summary="The DTMC the proactive guard uses")
    def model() -> Response:
        return JSONResponse({"model": dtmc_json(source.get().model), "guards_version": source.version})

    @app.get("/v1/runs/{run_id}/story", tags=["dashboard"], summary="One run told in order, for the dashboard")
    def story(run_id: str, limit: int = 2000) -> Response:
        from ..guards import valid_run_id

        if not valid_run_id(run_id):
            return error(400, "invalid run id")
        out = run_story(svc, run_id, limit)
        if not out["events"]:
            return error(404, f"no decisions for run {run_id}")
        return JSONResponse(out)

    @app.get("/v1/calibration", tags=["dashboard"], summary="Calibration curves of the monitors")
    def calibration() -> Response:
        g = source.get()
        return JSONResponse({"curves": g.calibration, "guards": {
            "tool": repr(g.tool), "step": repr(g.step), "signal": repr(g.signal)},
            "description": g.description, "guards_version": source.version})
