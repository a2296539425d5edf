"""Reading endpoints for the dashboard: ``GET /v1/runs``, ``GET /v1/runs/{run_id}``, ``GET /v1/decisions``."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Query
from starlette.responses import Response

from ..gate import JSONResponse, error
from ..guards import valid_run_id
from ..service import Service

__all__ = ["MAX_DECISIONS", "MAX_RUNS", "MAX_RUN_DECISIONS", "register"]

#: The largest ``limit`` each listing accepts; a larger, zero or negative one is refused with 422.
MAX_RUNS = 500
MAX_RUN_DECISIONS = 10_000
MAX_DECISIONS = 5_000


def register(app: FastAPI, svc: Service) -> None:
    store, runs, settings = svc.store, svc.runs, svc.settings

    @app.get("/v1/runs", tags=["dashboard"], summary="Recent runs")
    def list_runs(limit: int = Query(50, ge=1, le=MAX_RUNS)) -> Response:
        out = store.recent_runs(limit)
        for r in out:
            st = runs.peek(r["run_id"])
            r["active"] = st is not None
            r["steps"] = len(st.context.trace) if st is not None else None
        return JSONResponse({"runs": out, "ttl_s": settings.run_ttl_s})

    @app.get("/v1/runs/{run_id}", tags=["dashboard"], summary="One run: decisions, risk and signal series")
    def get_run(run_id: str, limit: int = Query(2000, ge=1, le=MAX_RUN_DECISIONS)) -> Response:
        if not valid_run_id(run_id):
            return error(400, "invalid run id")
        ds = store.decisions(run_id=run_id, limit=limit)
        if not ds:
            return error(404, f"no decisions for run {run_id}")
        risk: list[dict[str, Any]] = []
        sig: list[dict[str, Any]] = []
        n_step = 0
        for d in ds:
            nums = d["numbers"]
            if d["kind"] == "step":
                risk.append({"step": n_step, "ts": d["ts"], "decision": d["decision"],
                             "risk": nums.get("probability", nums.get("risk")), "threshold": nums.get("threshold")})
                n_step += 1
            elif d["kind"] == "signal":
                val = nums.get("score", nums.get("value"))
                if val is None:
                    val = next((x for k, x in nums.items() if k.startswith("signal:")), None)
                sig.append({"t": len(sig), "ts": d["ts"], "decision": d["decision"],
                            "value": val, "threshold": nums.get("threshold")})
        return JSONResponse({"run_id": run_id, "decisions": ds, "risk": risk, "signals": sig})

    @app.get("/v1/decisions", tags=["dashboard"], summary="Recent decisions with reasons")
    def list_decisions(limit: int = Query(100, ge=1, le=MAX_DECISIONS), run_id: str | None = None,
                       kind: str | None = None) -> Response:
        return JSONResponse({"decisions": store.decisions(run_id=run_id, kind=kind, limit=limit)})
