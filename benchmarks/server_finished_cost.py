"""Wall time per ``/v1/runs/{id}/steps`` decision through :meth:`agentguard.server.service.Service.decide` (in
process, SQLite file, default guards: the step guards keep per-run memory), with the decision awaited through
:func:`agentguard.server.runs.finished` (a task of its own, so a cancelled request lets go of the run's lock only once
its guards' threads ended; session 26) and with it plainly awaited (before). Rounds alternate; the ratio of medians is
the figure (timings on a shared machine are ratios, never absolute claims).

    python benchmarks/server_finished_cost.py --n 300 --rounds 5 --out benchmarks/results/server_finished_cost.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agentguard.server import service as service_mod
from agentguard.server.app import create_app
from agentguard.server.models import StepIn
from agentguard.server.runs import finished
from agentguard.server.settings import ServerSettings


async def plain(aw: Any, wait: bool = True) -> Any:
    return await aw


async def steps(svc: Any, run: str, n: int) -> float:
    t = time.perf_counter()
    for k in range(n):
        payload = {"state": {"k": k}}
        r = await svc.decide("step", run, service_mod.to_step(StepIn.model_validate(payload)), {"step": payload},
                             {"run_id": run, "step": payload}, step=payload, principal="")
        assert r.status_code == 200, r.body
    return (time.perf_counter() - t) / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default="benchmarks/results/server_finished_cost.json")
    a = ap.parse_args()
    d = tempfile.mkdtemp()
    svc = create_app(ServerSettings(state_dir=d, db_url=f"sqlite:///{d}/a.sqlite")).state.service
    res: dict[str, list[float]] = {"finished_us": [], "plain_us": []}

    async def run() -> None:
        await steps(svc, "warm", 50)
        for i in range(a.rounds):
            for name, fn in (("finished_us", finished), ("plain_us", plain)):
                service_mod.finished = fn  # type: ignore[assignment]
                res[name].append(await steps(svc, f"{name}-{i}", a.n))
        service_mod.finished = finished

    asyncio.run(run())
    med = {k: statistics.median(v) for k, v in res.items()}
    out = {"command": " ".join([Path(sys.executable).name, *sys.argv]), "n": a.n, "rounds": a.rounds,
           "rounds_us": res, "median_us": med, "ratio_finished_over_plain": med["finished_us"] / med["plain_us"]}
    Path(a.out).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out["median_us"]), out["ratio_finished_over_plain"])


if __name__ == "__main__":
    main()
