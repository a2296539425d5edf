"""The dashboard: its shell (``GET /dashboard``, ``/static/*``, ``/`` redirects there) and what it
draws besides runs: ``GET /v1/model`` (the DTMC) and ``GET /v1/calibration`` (the curves)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import FastAPI
from starlette.responses import FileResponse, RedirectResponse, Response
from starlette.staticfiles import StaticFiles

from ..gate import JSONResponse
from ..service import Service

__all__ = ["STATIC_DIR", "dtmc_json", "register"]

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

    @app.get("/v1/calibration", tags=["dashboard"], summary="Calibration curves of the monitors")
    def calibration() -> Response:
        g = source.get()
        return JSONResponse({"curves": g.calibration, "guards": {
            "tool": repr(g.tool), "step": repr(g.step), "signal": repr(g.signal)},
            "description": g.description, "guards_version": source.version})
